"""What a hostile session-state tree costs `otel-bridge run`: many empty session folders, and
a sparse log far larger than any the CLI writes.

    python -m bench.bench_hostile_tree [--dirs 100000] [--seconds 90] [--age-hours 0]
                                       [--pythonpath CHECKOUT]

Prints one JSON object:

- `empty_dirs`: the session folders with no log in them (made `--age-hours` ago: their
  mtime is set back that far); `watches`, the inotify watches the
  bridge holds once ready (the `inotify wd:` lines of `/proc/<pid>/fdinfo` of its inotify
  descriptors); `idle_cpu_pct`, its CPU over `--seconds` after that, in % of one core
  (utime + stime from `/proc/<pid>/stat`); `ready_s`, from start to `/readyz` 200; `rss_mb`.
- `sparse_ready_s`: with one sparse 1 TiB `events.jsonl` beside a real log, seconds until
  `/readyz` says 200 (null if not within `--ready-timeout`).

Like the rest of the harness it treats the bridge as a black box (`bench/procs.py`), so the
same command measures another checkout (`--pythonpath`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.procs import Bridge, bridge_env, free_port

_FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "run1_cli_prompt_basic"


def inotify_watches(pid: int) -> int:
    """The inotify watches of process `pid`: one `inotify wd:` line each in the fdinfo of its
    inotify descriptors (proc(5))."""
    watches = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as handle:
                watches += sum(line.startswith("inotify wd:") for line in handle)
        except OSError:
            continue
    return watches


def _args(state: Path) -> list[str]:
    return ["--session-state", str(state), "--no-checkpoints"]


def empty_dirs(
    count: int, seconds: float, age_hours: float, scratch: Path, pythonpath: Path
) -> dict[str, float]:
    state = scratch / "empty" / "session-state"
    state.mkdir(parents=True)
    made = time.time() - age_hours * 3600
    for n in range(count):
        directory = state / f"{n:08x}-0000-4000-8000-000000000000"
        directory.mkdir()
        os.utime(directory, (made, made))
    real = state / "d3ebfa08-de8a-4b43-93da-591db8061cb6"
    real.mkdir()
    shutil.copy(_FIXTURE / "events.jsonl", real / "events.jsonl")
    port = free_port()
    env = bridge_env(pythonpath, {"OTEL_TRACES_EXPORTER": "none"})
    with Bridge(_args(state), env, scratch / "empty.log", port=port) as bridge:
        ready = bridge.wait_ready(600, following=1)
        time.sleep(10)  # settle: the first rescans
        watches = inotify_watches(bridge.pid)
        before = bridge.cpu_seconds()
        started = time.monotonic()
        rss = 0.0
        while time.monotonic() - started < seconds:
            time.sleep(1)
            rss = max(rss, bridge.rss_mb())
        cpu = bridge.cpu_seconds() - before
        elapsed = time.monotonic() - started
    return {
        "empty_dirs": count,
        "age_hours": age_hours,
        "ready_s": round(ready, 2) if ready is not None else -1,
        "watches": watches,
        "idle_cpu_pct": round(100 * cpu / elapsed, 2),
        "rss_mb": round(rss, 1),
    }


def sparse_log(timeout: float, scratch: Path, pythonpath: Path) -> float | None:
    state = scratch / "sparse" / "session-state"
    (state / "huge").mkdir(parents=True)
    with open(state / "huge" / "events.jsonl", "wb") as handle:
        handle.truncate(1 << 40)  # 1 TiB of holes: no disk used
    real = state / "d3ebfa08-de8a-4b43-93da-591db8061cb6"
    real.mkdir()
    shutil.copy(_FIXTURE / "events.jsonl", real / "events.jsonl")
    port = free_port()
    env = bridge_env(pythonpath, {"OTEL_TRACES_EXPORTER": "none"})
    args = [*_args(state), "--backfill"]
    with Bridge(args, env, scratch / "sparse.log", port=port) as bridge:
        ready = bridge.wait_ready(timeout)
    return round(ready, 2) if ready is not None else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dirs", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--age-hours", type=float, default=0.0)
    parser.add_argument("--ready-timeout", type=float, default=60.0)
    parser.add_argument("--pythonpath", type=Path, default=Path(__file__).parent.parent)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="otel-bridge-hostile-"))
    try:
        result: dict[str, object] = dict(
            empty_dirs(args.dirs, args.seconds, args.age_hours, scratch, args.pythonpath.resolve())
        )
        result["sparse_ready_s"] = sparse_log(
            args.ready_timeout, scratch, args.pythonpath.resolve()
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
