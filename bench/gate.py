"""The performance gate: fails (exit 1) when replay, memory or idle CPU got worse than the
thresholds committed in bench/gate.toml.

    python bench/gate.py                               # the code of this checkout
    python bench/gate.py --pythonpath ../other-checkout --json /tmp/gate.json

One run builds two corpora of `sessions` sessions from tests/fixtures (bench/corpus.py) in a
temporary directory, then measures the bridge as a black box, `python -m otel_bridge` with
PYTHONPATH set to the checkout under measure (and PYTHONSAFEPATH=1), as `python -m bench` does:

  replay_none_ratio   wall time of a stdlib floor process (read every events.jsonl, json.loads
                      every line) over the wall time of `otel-bridge replay DIR` (default
                      --jobs; OTEL_TRACES_EXPORTER=none OTEL_METRICS_EXPORTER=none), whole
                      processes on the same old corpus, best of `runs` each, interleaved
                      (floor, replay, replay --traces-file, floor...). Higher is better; 1.0
                      means replay is as fast as the floor.
  replay_file_ratio   the same with `--traces-file` (a temporary file) instead of no exporter.
  run_settled_rss_mb  VmRSS of `run` (no span exporter, Prometheus on a free 127.0.0.1 port,
                      a temporary --state-dir) over `sessions` recent sessions (every log
                      modified in the last minutes, so every one is read and followed; one in
                      `big_output_every` with a tool output `big_output_bytes` long, as real
                      sessions have), once otel_bridge_events_read_total equals the corpus's
                      lines and has not moved for 2 s with /readyz at 200, `settle_seconds`
                      later.
  run_peak_rss_mb     VmHWM of that process at the same moment: its peak while catching up.
  idle_cpu_pct        CPU (utime + stime of /proc/<pid>/stat) of `run` over `sessions` old,
                      unchanging sessions, in % of one core, over `idle_seconds` once it is
                      ready, follows every log and `idle_settle_seconds` passed.

A figure worse than its threshold fails the gate; ratios rather than absolute times and the
best of several runs keep it steady on a shared machine. Figures measured at other sizes than
bench/gate.toml's (--sessions...) are not comparable with its thresholds. Every process the
gate starts is stopped by it, also on an error, Ctrl-C or SIGTERM. bench/README.md and
docs/performance.md say more.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: bench/ is on the path, not the repository
    sys.path.insert(0, str(REPO))

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from bench.corpus import add_big_outputs, build_corpus, count_events  # noqa: E402
from bench.procs import Bridge, bridge_env, command, free_port  # noqa: E402
from bench.sections import sample_idle, watch_readiness  # noqa: E402

__all__ = [
    "CONFIG",
    "FIGURES",
    "Figure",
    "GateConfig",
    "Verdict",
    "judge",
    "load_config",
    "measure",
    "measure_idle",
    "measure_replay",
    "measure_settled_rss",
    "table",
    "wall_seconds",
]

CONFIG = REPO / "bench" / "gate.toml"
OLD_S = 2 * 86400  # old logs: ended two days ago, followed from their end by run
RECENT_S = 60.0  # recent logs: ended 1 to 11 minutes ago, all read from their start by run
#: the stdlib floor: what any reader of the logs pays, and nothing more
FLOOR = (
    "import json, sys, pathlib\n"
    "for log in sorted(pathlib.Path(sys.argv[1]).glob('*/events.jsonl')):\n"
    "    with log.open('rb') as handle:\n"
    "        for line in handle:\n"
    "            json.loads(line)\n"
)


@dataclass(frozen=True)
class Figure:
    """A figure the gate judges: `better` says which way is good ("higher": fail below the
    threshold; "lower": fail above it)."""

    key: str
    unit: str
    better: str
    help: str


FIGURES = (
    Figure("replay_none_ratio", "x", "higher", "stdlib floor wall / replay wall, no exporter"),
    Figure("replay_file_ratio", "x", "higher", "stdlib floor wall / replay wall, --traces-file"),
    Figure("run_settled_rss_mb", "MB", "lower", "run's VmRSS once caught up and settled"),
    Figure("run_peak_rss_mb", "MB", "lower", "run's VmHWM (peak) at that moment"),
    Figure("idle_cpu_pct", "%", "lower", "run's CPU over unchanging sessions, % of a core"),
)
SIZES = {
    "sessions": "sessions in each corpus",
    "runs": "replay and floor runs, interleaved; the best of each counts",
    "big_output_every": "run_*_rss_mb: one recent session in N has a big tool output",
    "big_output_bytes": "run_*_rss_mb: the length of that output's line",
    "settle_seconds": "run_*_rss_mb: wait after catching up, before reading memory",
    "idle_seconds": "idle_cpu_pct: the window CPU is measured over",
    "idle_settle_seconds": "idle_cpu_pct: wait after ready, before the window",
    "timeout_seconds": "longest wait for a replay to end or a run to catch up",
}


@dataclass(frozen=True)
class GateConfig:
    """bench/gate.toml: `sizes` (every key of SIZES) and `thresholds` (every FIGURES key)."""

    sizes: dict[str, float]
    thresholds: dict[str, float]


def load_config(path: Path = CONFIG) -> GateConfig:
    """Read and check a gate configuration: every size and every threshold the gate reads is
    there, as a number, and nothing else is (a misspelt threshold must not pass silently)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    tables = {"sizes": list(SIZES), "thresholds": [f.key for f in FIGURES]}
    if set(data) != set(tables):
        raise ValueError(f"{path}: tables {sorted(data)}, expected {sorted(tables)}")
    for table_name, keys in tables.items():
        values = data[table_name]
        if set(values) != set(keys):
            missing, extra = set(keys) - set(values), set(values) - set(keys)
            raise ValueError(f"{path} [{table_name}]: missing {missing or '{}'}, unknown {extra}")
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{path} [{table_name}] {key} = {value!r}: not a number >= 0")
    return GateConfig(
        {k: float(v) for k, v in data["sizes"].items()},
        {k: float(v) for k, v in data["thresholds"].items()},
    )


# ---------------------------------------------------------------------------- measuring


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def wall_seconds(
    argv: Sequence[str], env: Mapping[str, str], log: Path, timeout: float = 600.0
) -> float:
    """Wall seconds of one whole process, from its start to its exit (status 0 or an error).

    It runs in its own process group, killed as a whole when it ends, runs over `timeout` or
    the caller is interrupted, so that no worker (replay --jobs) outlives it."""
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        _kill_group(process)

    with log.open("ab") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        status = process.wait()  # blocking: no polling delay in the figure
        wall = time.perf_counter() - started
    finally:
        timer.cancel()
        _kill_group(process)
        process.wait()
    if expired.is_set():
        raise TimeoutError(f"{' '.join(argv[:4])}... ran over {timeout} s")
    if status != 0:
        tail = log.read_text(errors="replace").splitlines()[-10:]
        raise RuntimeError(f"{' '.join(argv[:4])}... exited {status}\n" + "\n".join(tail))
    return wall


def measure_replay(
    pythonpath: Path, corpus: Path, work: Path, runs: int, timeout: float
) -> dict[str, Any]:
    """replay_none_ratio and replay_file_ratio, with every wall time behind them."""
    none_env = bridge_env(pythonpath, {"OTEL_TRACES_EXPORTER": "none"})
    none_env["OTEL_METRICS_EXPORTER"] = "none"
    file_env = bridge_env(pythonpath, {"OTEL_METRICS_EXPORTER": "none"})
    traces = work / "traces.jsonl"
    argvs = {
        "floor": ([sys.executable, "-c", FLOOR, str(corpus)], none_env),
        "none": (command("replay", [str(corpus), "--no-progress"]), none_env),
        "file": (
            command("replay", [str(corpus), "--no-progress", "--traces-file", str(traces)]),
            file_env,
        ),
    }
    log = work / "replay.err"
    wall_seconds(*argvs["floor"], log, timeout)  # the page cache warmed for every run
    walls: dict[str, list[float]] = {name: [] for name in argvs}
    for _ in range(max(1, runs)):
        for name, (argv, env) in argvs.items():
            traces.unlink(missing_ok=True)
            walls[name].append(wall_seconds(argv, env, log, timeout))
    if not traces.exists() or traces.stat().st_size == 0:
        raise RuntimeError(f"replay --traces-file wrote no span\n{log.read_text()[-2000:]}")
    floor = min(walls["floor"])
    return {
        "replay_none_ratio": round(floor / min(walls["none"]), 3),
        "replay_file_ratio": round(floor / min(walls["file"]), 3),
        "floor_wall_s": [round(w, 3) for w in walls["floor"]],
        "replay_none_wall_s": [round(w, 3) for w in walls["none"]],
        "replay_file_wall_s": [round(w, 3) for w in walls["file"]],
    }


def measure_settled_rss(
    pythonpath: Path, corpus: Path, work: Path, settle: float, timeout: float
) -> dict[str, Any]:
    """run_settled_rss_mb and run_peak_rss_mb: `run` catches up on `corpus` (recent logs)."""
    lines, _ = count_events(corpus)
    env = bridge_env(pythonpath, {"OTEL_TRACES_EXPORTER": "none"})  # /metrics stays on
    args = ["--session-state", str(corpus), "--state-dir", str(work / "rss-state")]
    with Bridge(args, env, work / "rss.err", port=free_port()) as bridge:
        seen = watch_readiness(bridge, timeout, events_expected=lines)
        time.sleep(settle)
        if not bridge.alive():
            raise RuntimeError(f"run ended before its memory was read\n{bridge.log_tail()}")
        rss, peak = bridge.rss_mb(), bridge.peak_rss_mb()
    return {
        "run_settled_rss_mb": round(rss, 1),
        "run_peak_rss_mb": round(peak, 1),
        "run_events": lines,
        "run_caught_up_s": round(seen.caught_up_s or 0.0, 2),
    }


def measure_idle(
    pythonpath: Path, corpus: Path, work: Path, sessions: int, sizes: Mapping[str, float]
) -> dict[str, Any]:
    """idle_cpu_pct: `run` over `corpus` (old, unchanging logs) once it follows them all."""
    env = bridge_env(pythonpath, {"OTEL_TRACES_EXPORTER": "none"})
    args = ["--session-state", str(corpus), "--state-dir", str(work / "idle-state")]
    with Bridge(args, env, work / "idle.err", port=free_port()) as bridge:
        ready = bridge.wait_ready(sizes["timeout_seconds"], following=sessions)
        if ready is None:
            raise RuntimeError(f"idle: run never ready\n{bridge.log_tail()}")
        time.sleep(sizes["idle_settle_seconds"])
        cpu, rss = sample_idle(bridge, sizes["idle_seconds"])
    return {"idle_cpu_pct": round(cpu, 3), "idle_rss_mb": round(rss, 1), "idle_ready_s": ready}


def _compile(pythonpath: Path, prefix: Path) -> None:
    """Give every process the gate starts the bytecode an installation has: pip compiles a
    package as it installs it, and Python's own modules and the dependencies' come compiled.
    Where Python may not write bytecode (PYTHONDONTWRITEBYTECODE, a read-only checkout), each
    start would compile the checkout's sources again, some 0.12 s of a replay's 0.7.

    Every process reads its bytecode under `prefix` (PYTHONPYCACHEPREFIX), for every module:
    Python's and the dependencies' as well, whose bytecode beside their sources is then not
    read. So the checkout is compiled there, and one process with writing allowed imports
    every module of the checkout (and the floor's), which writes the bytecode of everything
    they import there too. Compiling only the checkout left the rest compiled again at each
    start: 0.36 s of a replay, 0.06 s of the floor, which no installation pays (the ratio read
    0.38 where it is 0.50). Nothing is written into the checkout or the environment."""
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)  # bridge_env copies it to every process
    env = bridge_env(pythonpath)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for argv in (["-m", "compileall", "-q", str(pythonpath / "otel_bridge")], ["-c", _WARM]):
        subprocess.run([sys.executable, *argv], env=env, stdout=subprocess.DEVNULL, check=True)


#: imports every module of the package but its `__main__` (which would run the command line;
#: one that cannot be imported here, for want of an optional dependency, is left out), and
#: the floor's
_WARM = (
    "import importlib, json, pathlib, pkgutil, otel_bridge\n"
    "for module in pkgutil.walk_packages(otel_bridge.__path__, 'otel_bridge.'):\n"
    "    if not module.name.endswith('.__main__'):\n"
    "        try:\n"
    "            importlib.import_module(module.name)\n"
    "        except ImportError:\n"
    "            pass\n"
)


def measure(pythonpath: Path, sizes: Mapping[str, float], scratch: Path) -> dict[str, Any]:
    """Every figure of the gate (FIGURES, and the ones behind them), measured in `scratch`."""
    sessions, timeout = int(sizes["sessions"]), sizes["timeout_seconds"]
    cache, work = scratch / "corpora", scratch / "work"
    work.mkdir(parents=True, exist_ok=True)
    _compile(pythonpath, scratch / "bytecode")
    _say(f"building {sessions} old sessions")
    old, _ = build_corpus(cache, sessions, age_s=OLD_S)
    figures: dict[str, Any] = {"sessions": sessions, "events": count_events(old)[0]}
    _say(f"replay against the floor, {int(sizes['runs'])} runs each")
    figures.update(measure_replay(pythonpath, old, work, int(sizes["runs"]), timeout))
    _say(f"building {sessions} recent sessions")
    recent, _ = build_corpus(cache, sessions, age_s=RECENT_S)  # recent as run starts
    every, size = int(sizes["big_output_every"]), int(sizes["big_output_bytes"])
    figures["run_big_outputs"] = add_big_outputs(recent, every, size)
    _say("run catching up on them, then settling")
    settle = sizes["settle_seconds"]
    figures.update(measure_settled_rss(pythonpath, recent, work, settle, timeout))
    _say("run idle over the old sessions")
    figures.update(measure_idle(pythonpath, old, work, sessions, sizes))
    return figures


def _say(what: str) -> None:
    print(f"[gate] {what}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Verdict:
    figure: Figure
    value: float | None
    threshold: float

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        if self.figure.better == "higher":
            return self.value >= self.threshold
        return self.value <= self.threshold

    @property
    def bound(self) -> str:
        return f"{'>=' if self.figure.better == 'higher' else '<='} {self.threshold:g}"


def judge(figures: Mapping[str, Any], thresholds: Mapping[str, float]) -> list[Verdict]:
    """One verdict per figure of FIGURES; a figure not measured fails."""
    return [Verdict(f, figures.get(f.key), thresholds[f.key]) for f in FIGURES]


def table(verdicts: Sequence[Verdict]) -> str:
    rows = [("figure", "value", "threshold", "result")]
    for v in verdicts:
        value = "n/a" if v.value is None else f"{v.value:g} {v.figure.unit}"
        rows.append((v.figure.key, value, f"{v.bound} {v.figure.unit}", _result(v)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _result(verdict: Verdict) -> str:
    return "pass" if verdict.passed else "FAIL"


# ---------------------------------------------------------------------------- command


def _help_epilog(path: Path) -> str:
    try:
        config = load_config(path)
    except (OSError, ValueError) as exc:
        return f"({path}: {exc})"
    lines = [f"thresholds ({path.relative_to(REPO) if path.is_relative_to(REPO) else path}):"]
    for verdict in judge({}, config.thresholds):
        lines.append(f"  {verdict.figure.key:<20} {verdict.bound} {verdict.figure.unit}")
    lines.append("sizes:")
    for key, text in SIZES.items():
        value = config.sizes[key]
        shown = str(int(value)) if value.is_integer() else str(value)
        lines.append(f"  {key:<20} {shown}  ({text})")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    given = list(sys.argv[1:] if argv is None else argv)
    config = CONFIG  # --help shows the thresholds of the --config given
    if "--config" in given[:-1]:
        config = Path(given[given.index("--config") + 1])
    parser = argparse.ArgumentParser(
        prog="python bench/gate.py",
        description=__doc__,
        epilog=_help_epilog(config),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--pythonpath", type=Path, default=REPO, help="the checkout whose code is measured"
    )
    parser.add_argument("--json", type=Path, help="write every figure and verdict to FILE")
    parser.add_argument("--config", type=Path, default=CONFIG, help="sizes and thresholds")
    parser.add_argument(
        "--scratch", type=Path, default=Path(tempfile.gettempdir()), help="temporary files here"
    )
    parser.add_argument("--keep-scratch", action="store_true", help="keep corpora and logs")
    for key, text in SIZES.items():
        kind = float if key.endswith("seconds") else int
        flag = "--" + key.replace("_", "-")
        parser.add_argument(flag, type=kind, help=f"{text} (overrides --config)")
    return parser.parse_args(argv)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C: every process started is stopped on the way out."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    args = parse_args(argv)
    try:
        config = load_config(args.config)
    except (OSError, ValueError) as exc:
        print(f"gate: {exc}", file=sys.stderr)
        return 2
    sizes = dict(config.sizes)
    sizes.update({k: getattr(args, k) for k in SIZES if getattr(args, k) is not None})
    pythonpath = args.pythonpath.resolve()
    args.scratch.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="otel-bridge-gate-", dir=args.scratch))
    started = time.monotonic()
    figures: dict[str, Any] = {}
    error = None
    try:
        figures = measure(pythonpath, sizes, scratch)
    except KeyboardInterrupt:
        print("gate: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a measurement that cannot be made fails the gate
        error = f"{type(exc).__name__}: {exc}"
        print(f"gate: {error}", file=sys.stderr)
    finally:
        if not args.keep_scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    verdicts = judge(figures, config.thresholds)
    passed = error is None and all(v.passed for v in verdicts)
    seconds = round(time.monotonic() - started, 1)
    print(table(verdicts))
    print(f"\n{'passed' if passed else 'FAILED'} in {seconds} s (code: {pythonpath})")
    if args.json:
        _write_json(args.json, pythonpath, sizes, figures, verdicts, error, seconds)
    return 0 if passed else 1


def _write_json(
    path: Path,
    pythonpath: Path,
    sizes: Mapping[str, float],
    figures: Mapping[str, Any],
    verdicts: Sequence[Verdict],
    error: str | None,
    seconds: float,
) -> None:
    from bench.run import machine

    results = {
        "machine": machine(pythonpath),
        "sizes": dict(sizes),
        "figures": dict(figures),
        "thresholds": {v.figure.key: v.bound for v in verdicts},
        "verdicts": {v.figure.key: _result(v).lower() for v in verdicts},
        "error": error,
        "passed": error is None and all(v.passed for v in verdicts),
        "seconds": seconds,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
