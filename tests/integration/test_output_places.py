"""Nothing written where the agents live (issue 32, item 3): a state directory, traces file or
metrics file inside a session-state directory the bridge reads, or equal to one of its logs, is
refused with one line naming it (exit status 2) before anything is created, whichever way it
was given: a flag, the configuration file, OTEL_BRIDGE_STATE_DIR; in run, replay, doctor and
install-service."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from otel_bridge.cli import main
from tests import paths
from tests.corpus import session_state
from tests.processes import bridge_env


def bridge(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otel_bridge", *args],
        env=bridge_env({"PYTHONPATH": str(paths.REPO), **(env or {})}),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def tree(root: Path) -> dict[str, tuple[int, float]]:
    """Every path below `root`, with its size and modification time."""
    return {
        str(path.relative_to(root)): (path.lstat().st_size, path.lstat().st_mtime)
        for path in sorted(root.rglob("*"))
    }


def error_line(stderr: str) -> str:
    """The one line argparse's error gives, after its usage."""
    (line,) = [x for x in stderr.splitlines() if ": error: " in x]
    return line


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return session_state(tmp_path / "session-state")


def one_log(root: Path) -> Path:
    return sorted(root.glob("*/events.jsonl"))[0]


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--state-dir", "session-state/otel-bridge"),  # relative: from the working directory
        ("--state-dir", "session-state"),  # the root itself
        ("--state-dir", "elsewhere/../session-state/x"),
        ("--traces-file", "LOG"),  # a followed log
        ("--traces-file", "link/traces.jsonl"),  # a symbolic link that points inside
        ("--metrics-file", "session-state/metrics.jsonl"),
    ],
)
def test_run_refuses_an_output_inside_the_watched_root(
    tmp_path: Path, root: Path, flag: str, value: str
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(root)
    if value == "LOG":
        value = str(one_log(root))
    before = tree(root)
    args = ["run", "--session-state", "session-state", "--no-prometheus", flag, value]
    if flag != "--state-dir":
        args += ["--state-dir", str(tmp_path / "state")]
    result = bridge(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    line = error_line(result.stderr)
    assert f"argument {flag}: {value} is" in line
    assert "where the Copilot CLI keeps its sessions" in line
    assert tree(root) == before  # no run.lock, no checkpoints, no line appended to a log
    assert not (tmp_path / "state").exists()


def test_run_takes_a_state_dir_beside_the_session_state_directory(tmp_path: Path) -> None:
    """Only the watched directory counts: ~/.copilot itself is no session's."""
    from otel_bridge.cli._checks import contradiction
    from otel_bridge.cli._parser import build_parser

    home = tmp_path / ".copilot"
    session_state(home / "session-state")
    args = build_parser().parse_args(["run", "--state-dir", str(home / "otel-bridge")])
    assert contradiction(args, {"COPILOT_HOME": str(home)}) is None
    args = build_parser().parse_args(["run", "--state-dir", str(home / "session-state" / "b")])
    assert "is inside" in (contradiction(args, {"COPILOT_HOME": str(home)}) or "")


def test_run_refuses_a_default_state_dir_inside_copilot_home_s_sessions(tmp_path: Path) -> None:
    home = tmp_path / ".copilot"
    root = session_state(home / "session-state")
    before = tree(root)
    inside = root / "bridge-state"
    result = bridge(
        "run",
        "--no-prometheus",
        cwd=tmp_path,
        env={"COPILOT_HOME": str(home), "OTEL_BRIDGE_STATE_DIR": str(inside)},
    )
    assert result.returncode == 2, result.stderr
    assert f"OTEL_BRIDGE_STATE_DIR: {inside} is inside {root}" in error_line(result.stderr)
    assert tree(root) == before


def test_a_config_file_s_output_inside_the_root_is_refused_naming_its_key(
    tmp_path: Path, root: Path
) -> None:
    config = tmp_path / "bridge.toml"
    log = one_log(root)
    config.write_text(f'[run]\ntraces-file = "{log}"\nstate-dir = "{tmp_path / "state"}"\n')
    before = tree(root)
    result = bridge(
        "run",
        "--config",
        str(config),
        "--session-state",
        str(root),
        "--no-prometheus",
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert f"{config}: key 'traces-file': {log} is inside {root}" in error_line(result.stderr)
    assert tree(root) == before


def test_replay_refuses_to_write_over_the_log_it_reads(tmp_path: Path, root: Path) -> None:
    log = one_log(root)
    before = tree(root)
    result = bridge("replay", str(log), "--traces-file", str(log), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"argument --traces-file: {log} is the session log {log}" in error_line(result.stderr)
    assert tree(root) == before  # not truncated


def test_replay_refuses_a_hard_link_to_a_log_it_reads(tmp_path: Path, root: Path) -> None:
    log = one_log(root)
    linked = tmp_path / "traces.jsonl"
    os.link(log, linked)
    before = tree(root)
    result = bridge("replay", str(root), "--metrics-file", str(linked), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"{linked} is a hard link to the session log {log}" in error_line(result.stderr)
    assert tree(root) == before


def test_replay_refuses_an_output_inside_a_directory_it_reads(tmp_path: Path, root: Path) -> None:
    before = tree(root)
    session = one_log(root).parent
    out = session / "traces.jsonl"
    result = bridge("replay", str(session), "--traces-file", str(out), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"argument --traces-file: {out} is inside {session}" in error_line(result.stderr)
    assert tree(root) == before


def test_doctor_reports_outputs_inside_the_watched_root(tmp_path: Path, root: Path) -> None:
    before = tree(root)
    log = one_log(root)
    result = bridge(
        "doctor",
        "--session-state",
        str(root),
        "--no-prometheus",
        "--state-dir",
        str(root / "state"),
        "--traces-file",
        str(log),
        cwd=tmp_path,
        env={"OTEL_TRACES_EXPORTER": "console"},
    )
    assert result.returncode == 1, result.stdout
    problems = [x.strip() for x in result.stdout.splitlines() if x.strip().startswith("[!!]")]
    assert problems == [
        f"[!!] state directory {root / 'state'} is inside {root}, a session-state directory "
        "run watches: run refuses to start (it writes nothing where the Copilot CLI keeps its "
        "sessions, which it reads back on resume): give it another --state-dir",
        f"[!!] traces file {log} is inside {root}, a session-state directory run watches: run "
        "refuses to start (it writes nothing where the Copilot CLI keeps its sessions, which "
        "it reads back on resume): give it another --traces-file",
    ]
    assert "[ok] traces file" not in result.stdout
    assert tree(root) == before


def test_install_service_refuses_a_state_dir_inside_the_watched_root(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    before = tree(root)
    inside = root / "state"
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "install-service",
                "--platform",
                "systemd",
                "--",
                "--session-state",
                str(root),
                "--state-dir",
                str(inside),
            ]
        )
    assert exit_info.value.code == 2
    assert f"argument --state-dir: {inside} is inside {root}" in error_line(capsys.readouterr().err)
    assert not (tmp_path / "config").exists()
    assert tree(root) == before
