"""The log follower, driven step by step with poll_once (no sleeping on timers)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from otel_bridge import Assembler
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from tests import paths
from tests.builder import Log
from tests.recorder import Clock
from tests.spantree import label

FIXTURES = paths.FIXTURES


def make_tailer(root: Path, clock: Clock, **options) -> tuple[Tailer, list]:
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=0, **options),
        clock=clock,
    )
    return tailer, out


def two_messages() -> bytes:
    log = Log.asked()
    log.simple_turn("0", "u1", [("c1", "bash")])
    log.simple_turn("1", "u2")
    log.user(interaction="i2")
    log.simple_turn("0", "u3", interaction="i2")
    return log.jsonl()


def test_follows_appends_and_waits_for_partial_lines(tmp_path) -> None:
    log = tmp_path / "s1" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"")
    tailer, out = make_tailer(tmp_path, Clock(os.path.getmtime(log)))
    tailer.start()
    data = two_messages()
    half = len(data) // 2 + 7  # somewhere inside a line
    with log.open("ab") as handle:
        handle.write(data[:half])
    tailer.poll_once()
    first = len(out)
    with log.open("ab") as handle:
        handle.write(data[half:])
    tailer.poll_once()
    names = [s.name for s in out]
    assert names.count("invoke_agent copilot") == 2
    assert first < len(out)
    tailer.close()


def test_old_logs_are_followed_from_their_end_unless_backfill(tmp_path) -> None:
    log = tmp_path / "old" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(two_messages())
    later = os.path.getmtime(log) + 7200
    tailer, out = make_tailer(tmp_path, Clock(later), catch_up_seconds=3600)
    tailer.start()
    tailer.poll_once()
    assert out == []
    tailer.close()
    tailer, out = make_tailer(tmp_path, Clock(later), catch_up_seconds=3600, backfill=True)
    tailer.start()
    tailer.poll_once()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 2
    tailer.close()


def test_new_session_directories_are_picked_up(tmp_path) -> None:
    clock = Clock(0)
    tailer, out = make_tailer(tmp_path, clock)
    tailer.start()
    log = tmp_path / "new" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(two_messages())
    clock.now = os.path.getmtime(log)
    tailer.poll_once()
    assert tailer.followed == [str(log)]
    assert sum(s.name == "invoke_agent copilot" for s in out) == 2
    tailer.close()


def test_quiet_open_interaction_is_closed_after_the_idle_timeout(tmp_path) -> None:
    log = Log.asked()
    log.turn("0")
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(log.jsonl())
    clock = Clock(os.path.getmtime(path))
    tailer, out = make_tailer(tmp_path, clock, idle_timeout_seconds=60)
    tailer.start()
    tailer.poll_once()
    assert out == []
    clock.now += 61
    tailer.poll_once()
    root = next(s for s in out if s.name == "invoke_agent copilot")
    assert root.attributes["copilot.incomplete"] is True
    tailer.close()


def test_a_task_waiting_for_a_person_stays_open_past_the_idle_timeout(tmp_path, caplog) -> None:
    log = Log.asked()
    log.turn("0")
    log.message([("c1", "bash")], turn="0")
    log.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c1"})
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(log.jsonl())
    clock = Clock(os.path.getmtime(path))
    tailer, out = make_tailer(tmp_path, clock, idle_timeout_seconds=60, person_timeout_seconds=300)
    tailer.start()
    tailer.poll_once()
    for _ in range(4):  # 240 s quiet: past the idle timeout, the prompt still unanswered
        clock.now += 60
        tailer.poll_once()
    assert not any(s.name == "invoke_agent copilot" for s in out)
    with caplog.at_level(logging.INFO):
        clock.now += 60
        tailer.poll_once()
    root = next(s for s in out if s.name == "invoke_agent copilot")
    assert root.attributes["copilot.incomplete"] is True
    assert any("waited for a person" in r.getMessage() for r in caplog.records)
    tailer.close()


def test_truncated_and_deleted_logs(tmp_path) -> None:
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    data = two_messages()
    path.write_bytes(data)
    clock = Clock(os.path.getmtime(path))
    tailer, out = make_tailer(tmp_path, clock)
    tailer.start()
    tailer.poll_once()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 2
    out.clear()
    path.write_bytes(data[: data.index(b"\n") + 1])  # truncated in place to its first line
    tailer.poll_once()
    with path.open("ab") as handle:
        handle.write(data[data.index(b"\n") + 1 :])
    tailer.poll_once()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 2  # re-read after truncation
    path.unlink()
    path.parent.rmdir()
    tailer.poll_once()
    assert tailer.followed == []
    tailer.close()


def test_rotation_loses_nothing_written_after_it(tmp_path) -> None:
    """The log is renamed away and a new one starts at the same path (logrotate's default)."""
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(two_messages())
    clock = Clock(os.path.getmtime(path))
    tailer, out = make_tailer(tmp_path, clock)
    tailer.start()
    tailer.poll_once()
    before = {s.span_id for s in out}
    path.rename(path.with_name("events.jsonl.1"))
    log = Log(session="after")
    log.start()
    log.user(interaction="j1")
    log.simple_turn("0", "v1", [("k1", "bash")], interaction="j1")
    log.simple_turn("1", "v2", interaction="j1")
    data = log.jsonl().replace(b'"id": "e', b'"id": "r')  # new events, new ids
    path.write_bytes(data)
    tailer.poll_once()
    new = [s for s in out if s.span_id not in before]
    assert sorted(label(s) for s in new) == sorted(
        [
            "invoke_agent copilot",
            "turn #1",
            "turn #2",
            "chat gpt-4.1",
            "chat gpt-4.1",
            "execute_tool bash",
        ]
    )
    tailer.close()


def test_an_unreadable_log_is_reported_once_and_the_others_go_on(tmp_path, caplog) -> None:
    bad = tmp_path / "bad" / "events.jsonl"
    bad.parent.mkdir()
    bad.write_bytes(two_messages())
    good = tmp_path / "good" / "events.jsonl"
    good.parent.mkdir()
    good.write_bytes(two_messages().replace(b'"id": "e', b'"id": "g'))
    clock = Clock(os.path.getmtime(good))
    tailer, out = make_tailer(tmp_path, clock)
    tailer.start()
    bad.chmod(0)
    try:
        if os.access(bad, os.R_OK):  # root reads anything: make it a directory-less path
            bad.unlink()
            bad.mkdir()  # a directory where the log was: open() fails with EISDIR
        for _ in range(3):
            tailer.poll_once()
    finally:
        if bad.is_dir():
            bad.rmdir()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 2  # the good log's
    assert caplog.text.count("cannot read") == 1
    tailer.close()


def other_log(tasks: int) -> bytes:
    """Another session's log (a log rewritten in place gets new content), longer than
    `two_messages()` with five tasks."""
    log = Log(session="rewritten")
    log.start()
    for n in range(tasks):
        log.user(interaction=f"k{n}")
        log.simple_turn("0", f"w{n}", interaction=f"k{n}")
    return log.jsonl().replace(b'"id": "e', b'"id": "w')


def test_a_log_truncated_and_written_again_longer_is_read_from_its_start(tmp_path) -> None:
    """Between two looks, the log is cut and rewritten with more than it had: its size alone
    says it grew, its first bytes say it is another content. Its every task is read, none
    merged with what was open in the old one."""
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    data = two_messages()
    open_task = data[: data.rindex(b'"type": "assistant.turn_end"')]
    path.write_bytes(open_task[: open_task.rindex(b"\n") + 1])  # the second task still open
    clock = Clock(os.path.getmtime(path))
    tailer, out = make_tailer(tmp_path, clock)
    tailer.start()
    tailer.poll_once()
    before = len(out)
    new = other_log(5)
    assert len(new) > path.stat().st_size
    path.write_bytes(new)  # the same file (inode), truncated and written again
    tailer.poll_once()
    tailer.close()
    roots = [s for s in out[before:] if s.name == "invoke_agent copilot"]
    ids = {r.attributes["gen_ai.conversation.id"] for r in roots}
    assert ids >= {"rewritten"}
    assert sum(r.attributes["gen_ai.conversation.id"] == "rewritten" for r in roots) == 5


def test_rotation_right_after_an_append_reads_the_old_files_tail_first(tmp_path) -> None:
    """A task is appended, then the log is renamed away and a new one started, all between
    two looks: the old file's new task is read from where it was renamed to, then the new
    file."""
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    data = two_messages()
    first = data[: data.index(b'"interactionId": "i2"')]
    first = first[: first.rindex(b"\n") + 1]  # the first task only
    path.write_bytes(first)
    clock = Clock(os.path.getmtime(path))
    tailer, out = make_tailer(tmp_path, clock)
    tailer.start()
    tailer.poll_once()
    assert [s.name for s in out].count("invoke_agent copilot") == 1
    with path.open("ab") as handle:
        handle.write(data[len(first) :])  # the second task
    path.rename(path.with_name("events.jsonl.1"))
    path.write_bytes(other_log(1))
    tailer.poll_once()
    tailer.close()
    sessions = [
        s.attributes["gen_ai.conversation.id"] for s in out if s.name == "invoke_agent copilot"
    ]
    assert sessions == ["sess-1", "sess-1", "rewritten"]


def test_the_idle_timeout_counts_no_time_the_bridge_was_paused(tmp_path) -> None:
    """A task is open and its log quiet; the bridge is stopped for an hour (SIGSTOP, a
    suspended laptop) while its clock runs on. The task is not closed as incomplete on
    waking: quiet time is time the bridge was looking."""
    log = Log.asked()
    log.turn("0")
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(log.jsonl())
    clock = Clock(os.path.getmtime(path))
    tailer, out = make_tailer(tmp_path, clock, idle_timeout_seconds=900)
    tailer.start()
    tailer.poll_once()
    clock.now += 3600  # paused
    tailer.poll_once()
    assert out == []
    for _ in range(30):  # then awake and polling, the log quiet: 15 minutes
        clock.now += 30
        tailer.poll_once()
    tailer.close()
    root = next(s for s in out if s.name == "invoke_agent copilot")
    assert root.attributes["copilot.incomplete"] is True
