"""The memory `run` takes to catch up on many sessions, and keeps after.

    python -m bench.bench_catch_up_memory [--sessions 10000] [--recent | --old]
        [--pythonpath CHECKOUT] [--exporter otlp|none] [--repeat 3]

A session-state directory of `--sessions` sessions (the bench corpus: the fixture logs
copied with fresh ids, cached under `--cache`) is caught up by `run` with checkpoints,
exporting over OTLP/HTTP to a local receiver that decodes real protobuf (or to nothing,
`--exporter none`). Which sessions it reads:

- default: old logs read whole by `--backfill` (the catch-up after a first install);
- `--recent`: every log modified a minute ago, so that `run` reads each from its beginning
  without `--backfill` and follows them all (the case issue 28 budgets: 50 MB at 1,000
  sessions, 100 MB at 10,000);
- `--old`: old logs without `--backfill`: followed from their end, nothing to catch up
  (60 MB at 10,000).

The resident set size of the bridge is sampled every 0.1 s until it has read every event it
will read and says it is ready, then for `--settle` seconds more. Printed as JSON, one line
per repeat: the peak (the kernel's high-water mark, VmHWM), the size once settled (VmRSS at
the end of `--settle`), the seconds the catch-up took and the spans received. Prints
figures, never asserts. `settled_rss()` is the same measurement for other scripts (the CI
gate).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.corpus import build_corpus, count_events  # noqa: E402
from bench.procs import Bridge, bridge_env, free_port  # noqa: E402
from tests.otlp_receiver import OtlpReceiver  # noqa: E402

__all__ = ["measure", "settled_rss", "touch_logs"]

_OLD_S = 2 * 86400  # the corpus's age: --backfill reads it whole, as a catch-up would
_RECENT_S = 60.0  # a recent log: well inside run's --catch-up-minutes (60)
Age = Literal["backfill", "recent", "old"]


def touch_logs(root: Path, age_s: float) -> None:
    """Every log under `root` modified `age_s` seconds ago: a cached recent corpus ages, and
    one an hour old would no longer be read from its beginning."""
    moment = time.time() - age_s
    for log in root.glob("*/events.jsonl"):
        os.utime(log, (moment, moment))


def _vm(pid: int, field: str) -> float:
    """A `Vm*` line of /proc/<pid>/status, in MB."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure(
    sessions: int,
    pythonpath: Path,
    cache: Path,
    settle: float,
    timeout: float,
    *,
    age: Age = "backfill",
    exporter: Literal["otlp", "none"] = "otlp",
) -> dict[str, float]:
    """One `run` over `sessions` sessions of age `age`: its figures (see the module)."""
    corpus, _ = build_corpus(cache, sessions, age_s=_RECENT_S if age == "recent" else _OLD_S)
    if age == "recent":
        touch_logs(corpus, _RECENT_S)
    events = count_events(corpus)[0] if age != "old" else 0
    work = Path(tempfile.mkdtemp(prefix="catch-up-"))
    try:
        with OtlpReceiver(keep_alive=True) as receiver:
            extra = (
                {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint}
                if exporter == "otlp"
                else {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}
            )
            env = bridge_env(pythonpath, extra)
            args = ["--session-state", str(corpus), "--state-dir", str(work / "state")]
            # no --no-progress: older checkouts lack it, and stderr is a file (no bar)
            if age == "backfill":
                args.append("--backfill")
            with Bridge(args, env, work / "run.log", port=free_port()) as bridge:
                caught_up = _until_caught_up(bridge, events, sessions, timeout)
                end = time.monotonic() + settle
                while time.monotonic() < end and bridge.alive():
                    time.sleep(0.1)
                settled = _vm(bridge.pid, "VmRSS")
                peak = _vm(bridge.pid, "VmHWM")
                spans = len(receiver.spans())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "sessions": sessions,
        "age": age,
        "events": events,
        "catch_up_s": round(caught_up, 1),
        "peak_rss_mb": round(peak, 1),
        "settled_rss_mb": round(settled, 1),
        "spans_received": spans,
    }


def settled_rss(
    pythonpath: Path,
    sessions: int,
    *,
    age: Age = "recent",
    cache: Path | None = None,
    settle: float = 15.0,
    timeout: float = 1800.0,
    exporter: Literal["otlp", "none"] = "otlp",
    repeat: int = 1,
) -> tuple[float, float]:
    """(peak MB, settled MB) of `run` over `sessions` sessions, the best (lowest) of
    `repeat` runs each: for a gate that compares them with a budget."""
    cache = cache or Path(tempfile.gettempdir()) / "otel-bridge-bench"
    runs = [
        measure(sessions, pythonpath, cache, settle, timeout, age=age, exporter=exporter)
        for _ in range(max(repeat, 1))
    ]
    return min(r["peak_rss_mb"] for r in runs), min(r["settled_rss_mb"] for r in runs)


def _until_caught_up(bridge: Bridge, events: int, sessions: int, timeout: float) -> float:
    """Seconds until the bridge follows every log, has read `events` events and /readyz
    says 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and bridge.alive():
        read = bridge.metric("otel_bridge_events_read_total") or 0
        followed = bridge.metric("otel_bridge_files_followed") or 0
        if read >= events and followed >= sessions and bridge.readyz(timeout=2.0) == 200:
            return time.monotonic() - bridge.started
        time.sleep(0.1)
    if not bridge.alive():
        raise RuntimeError(f"run exited\n{bridge.log_tail()}")
    raise RuntimeError(f"not caught up within {timeout} s\n{bridge.log_tail()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    age = parser.add_mutually_exclusive_group()
    age.add_argument(
        "--recent",
        dest="age",
        action="store_const",
        const="recent",
        help="logs modified a minute ago: read from their beginning and followed, no --backfill",
    )
    age.add_argument(
        "--old",
        dest="age",
        action="store_const",
        const="old",
        help="old logs without --backfill: followed from their end",
    )
    parser.set_defaults(age="backfill")
    parser.add_argument("--exporter", choices=("otlp", "none"), default="otlp")
    parser.add_argument("--pythonpath", type=Path, default=REPO)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "otel-bridge-bench"
    )
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for _ in range(max(args.repeat, 1)):
        figures = measure(
            args.sessions,
            args.pythonpath,
            args.cache,
            args.settle,
            args.timeout,
            age=args.age,
            exporter=args.exporter,
        )
        print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
