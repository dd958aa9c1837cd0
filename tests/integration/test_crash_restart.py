"""Crash safety: `otel-bridge run` killed with SIGKILL at random moments while real logs grow,
restarted each time with the same state directory. Every span of the logs must reach the
receiver, and a span that arrives twice must be the same span (same ids, same content)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

from bench.corpus import LIVE_FIXTURES
from tests import paths
from tests.processes import bridge_env, start_bridge
from tests.spantree import assemble_file

FIXTURES = paths.FIXTURES
LOGS = list(LIVE_FIXTURES)  # the logs that end cleanly when written line by line
KILLS = int(os.environ.get("OTEL_BRIDGE_TEST_KILLS", "8"))


def start(state: Path, checkpoints: Path, endpoint: str, log: Path) -> subprocess.Popen:
    return start_bridge(
        [
            *("run", "--session-state", str(state), "--state-dir", str(checkpoints)),
            *("--poll-interval", "0.05", "--rescan-interval", "0.2", "--no-prometheus"),
        ],
        env=bridge_env({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}),
        log=log,
    )


def writer(state: Path, done: threading.Event) -> None:
    """Grow every log line by line, interleaved, sometimes half a line at a time."""
    rng = random.Random(7)
    pending = {
        name: (FIXTURES / name / "events.jsonl").read_bytes().splitlines(keepends=True)
        for name in LOGS
    }
    for name in LOGS:
        (state / name).mkdir()
    while pending:
        name = rng.choice(sorted(pending))
        line = pending[name].pop(0)
        with (state / name / "events.jsonl").open("ab") as handle:
            if rng.random() < 0.3:
                handle.write(line[: len(line) // 2])
                handle.flush()
                time.sleep(0.005)
                handle.write(line[len(line) // 2 :])
            else:
                handle.write(line)
        if not pending[name]:
            del pending[name]
        time.sleep(rng.uniform(0.0, 0.01))
    done.set()


def span_content(span: dict) -> tuple:
    return (
        span["trace_id"],
        span["parent_span_id"],
        span["name"],
        span["kind"],
        span["start_time_unix_nano"],
        span["end_time_unix_nano"],
        span["status_code"],
        json.dumps(span["attributes"], sort_keys=True),
        json.dumps(span["events"]),
        json.dumps(span["links"]),
    )


def test_sigkill_at_random_points_loses_nothing_and_repeats_only_identical_spans(
    tmp_path, otlp_receiver
) -> None:
    state, checkpoints = tmp_path / "session-state", tmp_path / "bridge-state"
    state.mkdir()
    done = threading.Event()
    thread = threading.Thread(target=writer, args=(state, done))
    rng = random.Random(11)
    logs = [tmp_path / f"bridge-{n}.err" for n in range(KILLS + 1)]
    bridge = start(state, checkpoints, otlp_receiver.http_endpoint, logs[0])
    thread.start()
    try:
        for n in range(KILLS):
            time.sleep(rng.uniform(0.05, 0.6))
            bridge.send_signal(signal.SIGKILL)
            bridge.wait(timeout=10)
            bridge = start(state, checkpoints, otlp_receiver.http_endpoint, logs[n + 1])
        thread.join(timeout=60)
        assert done.is_set()
        expected = {
            f"{s.span_id:016x}": s
            for name in LOGS
            for s in assemble_file(state / name / "events.jsonl")
        }
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = {s["span_id"] for s in otlp_receiver.spans()}
            if got >= set(expected):
                break
            time.sleep(0.2)
    finally:
        bridge.send_signal(signal.SIGTERM)  # it may still be starting: no exit status asked
        bridge.wait(timeout=20)
        thread.join(timeout=60)
    for log in logs:
        assert "Traceback" not in log.read_text(), log.read_text()[-2000:]
    received = otlp_receiver.spans()
    by_id: dict[str, set] = {}
    for span in received:
        by_id.setdefault(span["span_id"], set()).add(span_content(span))
    missing = set(expected) - set(by_id)
    assert not missing, f"{len(missing)} spans never arrived"
    conflicting = {i: c for i, c in by_id.items() if len(c) > 1}
    assert not conflicting, f"{len(conflicting)} span ids arrived with different content"
    assert set(by_id) == set(expected)  # nothing extra either
    for span_id, record in expected.items():
        (content,) = by_id[span_id]
        assert content[2] == record.name
        assert (content[4], content[5]) == (record.start_ns, record.end_ns)
