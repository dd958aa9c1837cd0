"""A task that never ends, killed: what `run` repeats, and what its checkpoints cost.

    python -m bench.bench_kill_long_task --turns 40000 [--pythonpath CHECKOUT]

One log holds one task of `--turns` turns (a tool call each, three spans a turn) that never
ends, written "now" so that `run` reads it from its start. `run` (OTLP/HTTP to a local receiver
decoding real protobuf) catches it up; once every span arrived it is killed with SIGKILL and
started again on the same state directory. Printed as JSON: the seconds the catch-up took, the
size of the log's last checkpoint line, the spans received after the restart beyond the first
of each id (`repeats`), and any span id missing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.builder import Log  # noqa: E402
from tests.otlp_receiver import OtlpReceiver  # noqa: E402
from tests.processes import start_bridge  # noqa: E402

SESSION = "11111111-2222-4333-8444-555555555555"


def _write_log(root: Path, turns: int) -> Path:
    log = Log(session=SESSION, step_ms=1)
    log.now = time.time_ns() - turns * 8 * 1_000_000
    log.start()
    log.user()
    for number in range(turns):
        log.simple_turn(str(number), f"u{number}", tools=[(f"c{number}", "bash")])
    path = root / SESSION / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(log.jsonl())
    return path


def _start(work: Path, receiver: OtlpReceiver, pythonpath: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    # PYTHONSAFEPATH: the working directory is not put first on the path, so that the code
    # measured is the one named by --pythonpath wherever this is started from.
    env.update(
        PYTHONPATH=str(pythonpath),
        PYTHONSAFEPATH="1",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint,
    )
    return start_bridge(
        [
            *("run", "--session-state", str(work / "session-state")),
            *("--state-dir", str(work / "state"), "--no-prometheus"),
        ],
        env=env,
        log=work / "run.log",
        append=True,
    )


def _span_count(receiver: OtlpReceiver) -> int:
    """Spans received, counted from the requests (cheaper than decoding them all again)."""
    return sum(
        len(scope.spans)
        for request in receiver.requests("traces")
        for resource in request.message.resource_spans
        for scope in resource.scope_spans
    )


def _wait(receiver: OtlpReceiver, until: int | None, timeout: float) -> None:
    """Until `until` spans arrived (None: until none arrives for 5 s)."""
    deadline = time.monotonic() + timeout
    last, quiet_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = _span_count(receiver)
        if until is not None and count >= until:
            return
        if count != last:
            last, quiet_since = count, time.monotonic()
        elif until is None and time.monotonic() - quiet_since > 5:
            return
        time.sleep(1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=40_000)
    parser.add_argument("--pythonpath", type=Path, default=REPO)
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="otel-bridge-long-task-") as scratch:
        work = Path(scratch)
        _write_log(work / "session-state", args.turns)
        expected = 3 * args.turns
        with OtlpReceiver() as receiver:
            started = time.monotonic()
            bridge = _start(work, receiver, args.pythonpath.resolve())
            try:
                _wait(receiver, expected, args.timeout)
                catch_up = time.monotonic() - started
                time.sleep(1.0)  # the checkpoint after the last delivery
                bridge.send_signal(signal.SIGKILL)
                bridge.wait()
                journal = (work / "state" / "checkpoints.jsonl").read_text().splitlines()
                bridge = _start(work, receiver, args.pythonpath.resolve())
                _wait(receiver, None, args.timeout)
            finally:
                bridge.send_signal(signal.SIGTERM)
                bridge.wait(timeout=120)
            ids = [span["span_id"] for span in receiver.spans()]
    print(
        json.dumps(
            {
                "turns": args.turns,
                "expected_spans": expected,
                "catch_up_s": round(catch_up, 1),
                "checkpoint_line_bytes": len(journal[-1]),
                "received": len(ids),
                "repeats": len(ids) - len(set(ids)),
                "missing": max(expected - len(set(ids)), 0),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
