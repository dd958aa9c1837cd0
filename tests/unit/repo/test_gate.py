"""The performance gate (bench/gate.py): its thresholds parse, each is documented, and it turns
red when a figure is worse than its threshold.

No figure's value is judged against the committed thresholds here (the machine is shared and
noisy; CI runs the gate itself at full size): the gate runs at tiny sizes against thresholds
written for the test, one of them impossible, and must fail on that one only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import gate
from tests import paths

REPO = paths.REPO
TINY = {
    "--sessions": "20",
    "--runs": "1",
    "--big-output-every": "5",
    "--big-output-bytes": "200000",
    "--settle-seconds": "0.5",
    "--idle-seconds": "1",
    "--idle-settle-seconds": "0.2",
    "--timeout-seconds": "60",
}


def _toml(sizes: dict[str, float], thresholds: dict[str, float]) -> str:
    lines = ["[sizes]", *(f"{k} = {v}" for k, v in sizes.items()), "", "[thresholds]"]
    return "\n".join([*lines, *(f"{k} = {v}" for k, v in thresholds.items())]) + "\n"


def test_the_committed_thresholds_parse_and_cover_every_figure() -> None:
    config = gate.load_config()
    assert set(config.thresholds) == {f.key for f in gate.FIGURES}
    assert set(config.sizes) == set(gate.SIZES)
    assert config.sizes["sessions"] >= 1000  # the size the thresholds speak of
    assert config.sizes["runs"] >= 3
    assert config.sizes["idle_seconds"] >= 30


def test_every_threshold_is_explained_where_people_read_it() -> None:
    toml_lines = gate.CONFIG.read_text().splitlines()
    performance = (REPO / "docs" / "performance.md").read_text()
    readme = (REPO / "bench" / "README.md").read_text()
    assert gate.__doc__ is not None
    for figure in gate.FIGURES:
        assert figure.better in ("higher", "lower"), figure
        assert f"  {figure.key} " in gate.__doc__, f"--help does not explain {figure.key}"
        assert figure.key in performance, f"docs/performance.md does not explain {figure.key}"
        assert figure.key in readme, f"bench/README.md does not name {figure.key}"
        index = next(i for i, line in enumerate(toml_lines) if line.startswith(figure.key))
        assert toml_lines[index - 1].startswith("#"), f"gate.toml: no comment on {figure.key}"


def test_a_configuration_missing_misspelling_or_mistyping_a_key_is_refused(
    tmp_path: Path,
) -> None:
    good = gate.load_config()
    path = tmp_path / "gate.toml"
    path.write_text(_toml(good.sizes, good.thresholds))
    assert gate.load_config(path) == good
    broken = [
        _toml(good.sizes, {k: v for k, v in good.thresholds.items() if k != "idle_cpu_pct"}),
        _toml(good.sizes, {**good.thresholds, "idle_cpu_pc": 1.0}),
        _toml(good.sizes, {**good.thresholds, "idle_cpu_pct": '"0.5"'}),
        _toml({k: v for k, v in good.sizes.items() if k != "runs"}, good.thresholds),
    ]
    for text in broken:
        path.write_text(text)
        with pytest.raises(ValueError):
            gate.load_config(path)


def test_a_figure_worse_than_its_threshold_fails_and_a_missing_one_too() -> None:
    thresholds = {f.key: 1.0 for f in gate.FIGURES}
    higher = next(f.key for f in gate.FIGURES if f.better == "higher")
    lower = next(f.key for f in gate.FIGURES if f.better == "lower")
    verdicts = {v.figure.key: v for v in gate.judge({higher: 1.0, lower: 1.0}, thresholds)}
    assert verdicts[higher].passed and verdicts[lower].passed  # the threshold itself passes
    verdicts = {v.figure.key: v for v in gate.judge({higher: 0.99, lower: 1.01}, thresholds)}
    assert not verdicts[higher].passed and not verdicts[lower].passed
    assert not any(v.passed for v in gate.judge({}, thresholds))
    assert "FAIL" in gate.table(gate.judge({}, thresholds))


def test_the_gate_runs_at_tiny_sizes_and_fails_on_the_figure_over_its_threshold(
    tmp_path: Path,
) -> None:
    config = gate.load_config()
    thresholds = {f.key: (0.0 if f.better == "higher" else 1e6) for f in gate.FIGURES}
    thresholds["run_settled_rss_mb"] = 1.0  # no Python process fits in a MB
    path = tmp_path / "gate.toml"
    path.write_text(_toml(config.sizes, thresholds))
    out, scratch = tmp_path / "gate.json", tmp_path / "scratch"
    args = [sys.executable, str(REPO / "bench" / "gate.py"), "--config", str(path)]
    args += ["--json", str(out), "--scratch", str(scratch)]
    args += [item for pair in TINY.items() for item in pair]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["error"] is None, results["error"]
    assert results["verdicts"] == {
        f.key: ("fail" if f.key == "run_settled_rss_mb" else "pass") for f in gate.FIGURES
    }
    figures = results["figures"]
    for figure in gate.FIGURES:
        value = figures[figure.key]
        assert isinstance(value, (int, float)) and value >= 0, (figure.key, value)
        assert figure.key in done.stdout
    assert figures["run_big_outputs"] >= 2
    assert figures["replay_none_ratio"] > 0 and figures["run_settled_rss_mb"] > 1.0
    assert figures["run_peak_rss_mb"] >= figures["run_settled_rss_mb"]
    assert len(figures["floor_wall_s"]) == len(figures["replay_none_wall_s"]) == 1
    assert "FAIL" in done.stdout and "FAILED" in done.stdout
    assert list(scratch.iterdir()) == []  # corpora and logs do not outlive the run


def test_help_lists_every_threshold_with_its_value() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "gate.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    config = gate.load_config()
    for figure in gate.FIGURES:
        assert f"{figure.key}" in done.stdout
        assert f"{config.thresholds[figure.key]:g} {figure.unit}" in done.stdout


#: run in a process the gate would start: counts the modules compiled from source on import
_COMPILED = (
    "import importlib._bootstrap_external as external\n"
    "compiled = []\n"
    "to_code = external.SourceLoader.source_to_code\n"
    "def counted(self, data, path, *args, **kwargs):\n"
    "    compiled.append(str(path))\n"
    "    return to_code(self, data, path, *args, **kwargs)\n"
    "external.SourceLoader.source_to_code = counted\n"
    "import json, pathlib, otel_bridge.cli, otel_bridge.app._replay, otel_bridge.export\n"
    "print('\\n'.join(compiled))\n"
)


def test_the_processes_measured_compile_no_module_where_bytecode_may_not_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With PYTHONPYCACHEPREFIX set, Python looks for every module's bytecode under it, its
    # own modules' and the dependencies' included: compiling the checkout alone left those
    # compiled again at each start (0.3 s of a replay) where it may not write them.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "unused"))  # _compile sets it
    gate._compile(REPO, tmp_path / "bytecode")
    env = {**gate.bridge_env(REPO), "PYTHONPYCACHEPREFIX": str(tmp_path / "bytecode")}
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    done = subprocess.run(
        [sys.executable, "-c", _COMPILED], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == []
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "empty")  # the test sees compiling: it counts
    done = subprocess.run(
        [sys.executable, "-c", _COMPILED], env=env, capture_output=True, text=True, check=True
    )
    assert any(path.endswith("json/decoder.py") for path in done.stdout.split())
