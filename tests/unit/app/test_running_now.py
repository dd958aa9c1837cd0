"""`run`'s running-now gauges while logs are caught up at start: a task read half-way is not
running now (its next events are still on disk), so a restart shows no task an hour old
waiting for a permission that its log answers further down (docs/metrics.md, "Running now")."""

from __future__ import annotations

from pathlib import Path

from otel_bridge import Assembler
from otel_bridge import semconv as sc
from otel_bridge.app._running import RunningNow
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from tests.builder import Log
from tests.recorder import Clock


def waiting(running: RunningNow) -> float:
    return sum(
        value
        for value, labels in running.series(sc.METRIC_TASKS_WAITING_FOR_USER)
        if labels.get(sc.COPILOT_WAIT_KIND) == sc.WAIT_PERMISSION
    )


def test_a_task_read_half_way_at_start_is_not_counted_as_running_now(tmp_path: Path) -> None:
    log = Log(session="sess-1")
    log.start()
    log.user()
    log.turn("0")
    log.usage("u0")
    log.message([("c1", "bash")], turn="0")
    log.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c1"})
    for n in range(3_000):  # more than one poll reads of a log (a MiB)
        log.add("session.info", infoType="note", message=f"{n:06d} " + "x" * 500)
    log.add("permission.completed", requestId="p1", toolCallId="c1", result={"kind": "approved"})
    log.tool_start("c1", "bash")
    log.tool_done("c1")
    log.turn_end("0")
    log.turn("1")
    log.message([], turn="1")
    log.turn_end("1")
    directory = tmp_path / "sess-1"
    directory.mkdir()
    (directory / "events.jsonl").write_bytes(log.jsonl())

    assembler = Assembler()
    tailer = Tailer(
        [tmp_path],
        StreamFeeder(assembler, lambda spans: None),
        TailOptions(rescan_seconds=0, watch=False),
        clock=Clock(),
    )
    running = RunningNow(assembler, clock=lambda: log.now / 1e9, catching=tailer.catching_streams)
    try:
        tailer.start()
        tailer.poll_once()
        # read up to the wait, not to its answer: the assembler holds the task waiting...
        assert str(directory / "events.jsonl") in tailer.catching_streams()
        view = assembler.in_flight(log.now)[sc.METRIC_TASKS_WAITING_FOR_USER]
        assert sum(view.values()) == 1
        # ...but while its log is caught up, that is not what runs now
        assert waiting(running) == 0
        for _ in range(20):
            if not tailer.catching_streams():
                break
            tailer.poll_once()
        assert not tailer.catching_streams()
    finally:
        tailer.close()
    assert not any(sum(series.values()) for series in assembler.in_flight(log.now).values())
