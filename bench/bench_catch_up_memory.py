"""The memory `run` takes to catch up on many sessions, and keeps after.

    python -m bench.bench_catch_up_memory [--sessions 10000] [--pythonpath CHECKOUT]

A session-state directory of `--sessions` sessions (the bench corpus: the fixture logs
copied with fresh ids, cached under `--cache`) is caught up by `run --backfill` with
checkpoints, exporting over OTLP/HTTP to a local receiver that decodes real protobuf. The
resident set size of the bridge is sampled every 0.1 s from its start until it has read
every event and says it is ready, then for `--settle` seconds more. Printed as JSON: the
peak during the catch-up, the size once settled, the seconds the catch-up took and the spans
received. Prints figures, never asserts.
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

from bench.corpus import build_corpus, count_events  # noqa: E402
from bench.procs import Bridge, bridge_env, free_port  # noqa: E402
from tests.otlp_receiver import OtlpReceiver  # noqa: E402

_OLD_S = 2 * 86400  # the corpus's age: --backfill reads it whole, as a catch-up would


def measure(
    sessions: int, pythonpath: Path, cache: Path, settle: float, timeout: float
) -> dict[str, float]:
    corpus, _ = build_corpus(cache, sessions, age_s=_OLD_S)
    events, _ = count_events(corpus)
    work = Path(tempfile.mkdtemp(prefix="catch-up-"))
    try:
        with OtlpReceiver(keep_alive=True) as receiver:
            env = bridge_env(pythonpath, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint})
            args = ["--session-state", str(corpus), "--state-dir", str(work / "state")]
            args += ["--backfill", "--no-progress"]
            with Bridge(args, env, work / "run.log", port=free_port()) as bridge:
                peak, caught_up = _until_caught_up(bridge, events, timeout)
                end = time.monotonic() + settle
                settled = bridge.rss_mb()
                while time.monotonic() < end and bridge.alive():
                    settled = bridge.rss_mb()
                    peak = max(peak, settled)
                    time.sleep(0.1)
                spans = len(receiver.spans())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "sessions": sessions,
        "events": events,
        "catch_up_s": round(caught_up, 1),
        "peak_rss_mb": round(peak, 1),
        "settled_rss_mb": round(settled, 1),
        "spans_received": spans,
    }


def _until_caught_up(bridge: Bridge, events: int, timeout: float) -> tuple[float, float]:
    """(peak RSS, seconds) until the bridge has read `events` events and /readyz says 200."""
    peak = 0.0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and bridge.alive():
        peak = max(peak, bridge.rss_mb())
        read = bridge.metric("otel_bridge_events_read_total") or 0
        if read >= events and bridge.readyz(timeout=2.0) == 200:
            return peak, time.monotonic() - bridge.started
        time.sleep(0.1)
    raise RuntimeError(f"not caught up within {timeout} s\n{bridge.log_tail()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--pythonpath", type=Path, default=REPO)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "otel-bridge-bench"
    )
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    figures = measure(args.sessions, args.pythonpath, args.cache, args.settle, args.timeout)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
