"""`otel_bridge.event.lag` is how far behind the bridge is in reading, not how old the events
it reads are: a copied or restored session whose log arrives in several writes during `run`
made 349,492 s of "lag" and held OtelBridgeLagging pending for 10 minutes."""

from __future__ import annotations

import time
from pathlib import Path

from otel_bridge import Assembler
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from tests.builder import Log
from tests.recorder import Clock


def _tailer(root: Path, clock: Clock) -> Tailer:
    return Tailer(
        [root],
        StreamFeeder(Assembler(), lambda spans: None),
        TailOptions(rescan_seconds=0, watch=False),
        clock=clock,
    )


def _write(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_an_old_log_copied_in_two_writes_is_no_lag(tmp_path: Path) -> None:
    log = Log(session="copied")  # its events are months old
    log.start()
    log.user()
    log.simple_turn("0", "u0", tools=[("c1", "bash")])
    log.simple_turn("1", "u1")
    data = log.jsonl()
    half = data.index(b"\n", len(data) // 2) + 1
    clock = Clock(time.time())
    tailer = _tailer(tmp_path, clock)
    log_path = tmp_path / "copied" / "events.jsonl"
    try:
        tailer.start()
        tailer.poll_once()
        log_path.parent.mkdir()
        _write(log_path, data[:half])  # the copy's first write, during run
        clock.now += 1
        tailer.poll_once()
        _write(log_path, data[half:])  # and its second, 2 s after the first was read
        clock.now += 2
        tailer.poll_once()
        assert tailer.last_lag is not None
        # since the read that found the end, not the events' age (months)
        assert abs(tailer.last_lag - 2.0) < 1e-6
    finally:
        tailer.close()


def test_a_live_event_s_lag_is_its_age_when_read(tmp_path: Path) -> None:
    clock = Clock(time.time())
    log = Log(session="live")
    log.now = int((clock.now - 30) * 1e9)  # the session started 30 s ago
    log.start()
    log.user()
    log_path = tmp_path / "live" / "events.jsonl"
    log_path.parent.mkdir()
    _write(log_path, log.jsonl())
    tailer = _tailer(tmp_path, clock)
    try:
        tailer.start()
        tailer.poll_once()  # caught up
        written = len(log.raw)
        log.now = int(clock.now * 1e9)
        log.turn("0")  # written now, read 1.5 s later: 1.5 s behind
        _write(log_path, b"".join(log.jsonl().splitlines(keepends=True)[written:]))
        clock.now += 1.5
        tailer.poll_once()
        assert tailer.last_lag is not None and abs(tailer.last_lag - 1.5) < 0.02
    finally:
        tailer.close()
