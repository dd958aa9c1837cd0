"""What the tailer holds of lines it has not read whole: a read that stops inside a line
finishes it before the next log is read, and a long line half written at the end of a file
is read again from disk rather than held (issue 28: under back-pressure a catch-up held a
partial tool result of megabytes per log, all at once)."""

from __future__ import annotations

import os
from pathlib import Path

from otel_bridge import Assembler
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from otel_bridge.sources.tail import _reading
from tests.builder import Log
from tests.recorder import Clock

BIG = 2 << 20  # a tool result of 2 MiB: far above a read under back-pressure


def _big_output_log(session: str) -> bytes:
    log = Log.asked(session)
    log.turn("0", "i1")
    log.usage("u1")
    log.message([("c1", "bash")], turn="0")
    log.tool_start("c1", "bash")
    log.tool_done("c1", result={"content": "x" * BIG})
    log.turn_end("0")
    log.simple_turn("1", "u2")
    log.user(interaction="i2")  # the first task ends
    return log.jsonl()


def _tailer(root: Path, clock: Clock, backlog: list[int] | None = None) -> tuple[Tailer, list]:
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=0, watch=False),
        clock=clock,
        backlog=(lambda: backlog[0]) if backlog is not None else None,
        max_backlog=100,
    )
    return tailer, out


def _held(tailer: Tailer) -> list[int]:
    """The bytes of partial lines each awake log's decoder holds."""
    return [r.decoder.pending_bytes for r in tailer._tracker.awake.values()]


def test_a_read_stopped_inside_a_long_line_finishes_it_before_the_next_log(
    tmp_path: Path,
) -> None:
    """Exporters nearly behind: reads of 4 KiB. Every log's 2 MiB line is read whole in the
    poll that reaches it, so no poll leaves partial lines held, and the spans are those of a
    read without back-pressure."""
    for number in range(3):
        path = tmp_path / f"s{number}" / "events.jsonl"
        path.parent.mkdir()
        path.write_bytes(_big_output_log(f"sess-{number}"))
    clock = Clock(os.path.getmtime(path))
    tailer, out = _tailer(tmp_path, clock, backlog=[90])  # room for 10 spans: 4 KiB reads
    tailer.start()
    assert tailer._reading.read_limit() == _reading._MIN_READ
    polls = 0
    while tailer.poll_once() or tailer.catching_up:
        polls += 1
        assert not any(_held(tailer)), _held(tailer)
        assert polls < 10_000
    free, free_out = _tailer(tmp_path, clock)
    free.start()
    while free.poll_once():
        pass
    assert sorted(s.span_id for s in out) == sorted(s.span_id for s in free_out)
    assert sum(s.name.startswith("execute_tool") for s in out) == 3
    tailer.close()
    free.close()


def test_a_long_line_half_written_at_the_end_is_read_again_not_held(tmp_path: Path) -> None:
    """A log that stops in the middle of a 2 MiB line (being written, or a crash mid-write)
    holds at most `_HELD_LINE_BYTES` of it; when the rest comes, the line is read again
    from its start and gives its event, nothing counted as malformed."""
    path = tmp_path / "s1" / "events.jsonl"
    path.parent.mkdir()
    data = _big_output_log("sess-1")
    cut = data.index(b"x" * 1000) + BIG // 2  # inside the tool result
    path.write_bytes(data[:cut])
    tailer, out = _tailer(tmp_path, Clock(os.path.getmtime(path)))
    tailer.start()
    tailer.poll_once()
    assert max(_held(tailer)) <= _reading._HELD_LINE_BYTES
    assert not any(s.name.startswith("execute_tool") for s in out)
    tailer.poll_once()  # nothing new: the line is not read again
    with path.open("ab") as handle:
        handle.write(data[cut:])
    while tailer.poll_once():
        pass
    assert sum(s.name.startswith("execute_tool") for s in out) == 1
    assert tailer.stats.malformed == 0 and tailer.stats.torn == 0
    assert tailer.stats.events == data.count(b"\n")
    tailer.close()


def test_a_short_line_half_written_is_held_until_its_end(tmp_path: Path) -> None:
    """A short partial line (the common race with a writer) stays in the decoder: no read
    again, and the log is looked at again at the next poll."""
    path = tmp_path / "s1" / "events.jsonl"
    path.parent.mkdir()
    data = _big_output_log("sess-1")
    cut = len(data) - 20
    path.write_bytes(data[:cut])
    tailer, _ = _tailer(tmp_path, Clock(os.path.getmtime(path)))
    tailer.start()
    while tailer.poll_once():
        pass
    (reader,) = tailer._tracker.awake.values()
    assert reader.decoder.pending_bytes > 0 and reader.released == 0
    with path.open("ab") as handle:
        handle.write(data[cut:])
    tailer.poll_once()
    assert tailer.stats.events == data.count(b"\n") and tailer.stats.malformed == 0
    tailer.close()
