"""The CPU `run` takes while nothing changes.

    python -m bench.bench_idle_cpu [--sessions 10000] [--empty] [--seconds 240]
        [--pythonpath CHECKOUT]

`run` (checkpoints on, no exporter) is started over `--sessions` old, unchanging sessions
(the bench corpus, followed from their end), or with `--empty` over that many session
directories that hold no log yet (a session just made, or a folder left behind). Once it
follows every log and says it is ready, and `--settle` seconds more, the CPU of the process
(user + system, /proc/<pid>/stat) is measured over `--seconds`: issue 28 budgets 0.1% of a
core over 10,000 sessions and 1% over 100,000 empty folders. Printed as JSON: the CPU in
percent of a core and the resident set size at the end. Prints figures, never asserts.
`idle_cpu()` is the same measurement for other scripts (the CI gate).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.corpus import build_corpus  # noqa: E402
from bench.procs import Bridge, bridge_env, free_port  # noqa: E402

__all__ = ["empty_folders", "idle_cpu"]

_OLD_S = 2 * 86400


def empty_folders(cache: Path, n: int) -> Path:
    """A session-state directory of `n` session directories without a log, cached."""
    root = cache / f"empty-{n}"
    marker = cache / f"empty-{n}.complete"
    if marker.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for index in range(n):
        (root / f"{index:08x}-0000-4000-a000-000000000000").mkdir()
    marker.write_text("ok\n")
    return root


def idle_cpu(
    pythonpath: Path,
    sessions: int,
    *,
    empty: bool = False,
    seconds: float = 240.0,
    settle: float = 15.0,
    cache: Path | None = None,
    timeout: float = 1800.0,
) -> dict[str, float]:
    """`run` over `sessions` unchanging sessions (or empty folders): its CPU in percent of a
    core over `seconds`, after it is ready and `settle` seconds more."""
    cache = cache or Path(tempfile.gettempdir()) / "otel-bridge-bench"
    if empty:
        root = empty_folders(cache, sessions)
    else:
        root = build_corpus(cache, sessions, age_s=_OLD_S)[0]
    work = Path(tempfile.mkdtemp(prefix="idle-"))
    try:
        env = bridge_env(
            pythonpath, {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}
        )
        args = ["--session-state", str(root), "--state-dir", str(work / "state")]
        with Bridge(args, env, work / "run.log", port=free_port()) as bridge:
            ready = bridge.wait_ready(timeout, following=0 if empty else sessions)
            if ready is None:
                raise RuntimeError(f"never ready\n{bridge.log_tail()}")
            time.sleep(settle)
            started, cpu0 = time.monotonic(), bridge.cpu_seconds()
            time.sleep(seconds)
            elapsed = time.monotonic() - started
            cpu = bridge.cpu_seconds() - cpu0
            rss = bridge.rss_mb()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "sessions": sessions,
        "empty": empty,
        "ready_s": round(ready, 1),
        "seconds": round(elapsed, 1),
        "cpu_s": round(cpu, 3),
        "cpu_pct": round(100 * cpu / elapsed, 3),
        "rss_mb": round(rss, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--empty", action="store_true", help="session folders with no log")
    parser.add_argument("--seconds", type=float, default=240.0)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--pythonpath", type=Path, default=REPO)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "otel-bridge-bench"
    )
    args = parser.parse_args()
    figures = idle_cpu(
        args.pythonpath,
        args.sessions,
        empty=args.empty,
        seconds=args.seconds,
        settle=args.settle,
        cache=args.cache,
    )
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
