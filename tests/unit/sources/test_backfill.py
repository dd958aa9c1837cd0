"""`run --backfill` after checkpoints exist.

The start-up line of a first run says that older logs are followed from their end and that
`--backfill` reads them. A first run also saves a checkpoint for each of them, where it began
to follow; `--backfill` at the next start reads those logs from their beginning (nothing of
them was exported: the checkpoint holds no session state and names no span delivered), and
says in one line what it does not read again and what does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from otel_bridge import Assembler
from otel_bridge.checkpoint._store import CheckpointStore
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from tests.builder import Log

DAY = 86_400.0


def two_tasks(session: str) -> tuple[bytes, bytes]:
    """A session's log cut after its first task: the first task's lines, the second's."""
    log = Log(session=session)
    log.start()
    log.user(interaction="i1")
    log.simple_turn("0", "u1", [("c1", "bash")], interaction="i1")
    first = len(log.jsonl())
    log.user(interaction="i2")
    log.simple_turn("0", "u2", interaction="i2")
    data = log.jsonl()
    return data[:first], data[first:]


def sessions(spans: list) -> set[str]:
    return {s.attributes["gen_ai.conversation.id"] for s in spans if s.name.startswith("invoke")}


def tailer(state: Path, store: Path, out: list, now: float, **options: object) -> Tailer:
    return Tailer(
        [state],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=0, **options),  # type: ignore[arg-type]
        clock=lambda: now,
        checkpoints=CheckpointStore(store),
    )


def started(follow: Tailer) -> Tailer:
    follow.start()
    follow.poll_once()
    follow.save_checkpoints()
    follow.close()
    return follow


def test_backfill_reads_the_logs_an_earlier_run_only_followed_from_their_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state, store = tmp_path / "session-state", tmp_path / "bridge-state"
    old = state / "old" / "events.jsonl"
    recent = state / "recent" / "events.jsonl"
    for path, session in ((old, "old"), (recent, "recent")):
        path.parent.mkdir(parents=True)
        path.write_bytes(b"".join(two_tasks(session)))
    now = time.time()
    os.utime(old, (now - 10 * DAY, now - 10 * DAY))
    first: list = []
    started(tailer(state, store, first, now))  # old: followed from its end; recent: read
    assert sessions(first) == {"recent"}

    second: list = []
    with caplog.at_level("INFO", logger="otel_bridge"):
        started(tailer(state, store, second, now, backfill=True))
    assert sessions(second) == {"old"}
    names = sorted(s.name for s in second)
    assert names == sorted(s.name for s in first)  # the whole task, as the recent one gave
    said = [r.getMessage() for r in caplog.records if "--backfill" in r.getMessage()]
    assert said == [
        "--backfill reads from their beginning the logs no earlier run read (1); the 1 "
        "others resume from their checkpoints, where an earlier run left them: "
        "`otel-bridge replay PATH` reads a whole log again (what was delivered from it goes "
        "again, with the same ids)"
    ]

    third: list = []  # now both were read: nothing again
    started(tailer(state, store, third, now, backfill=True))
    assert third == []


def test_backfill_does_not_read_again_a_log_that_grew_after_it_was_followed_from_its_end(
    tmp_path: Path,
) -> None:
    """Its new task was exported: reading it from the beginning would send that again."""
    state, store = tmp_path / "session-state", tmp_path / "bridge-state"
    path = state / "s" / "events.jsonl"
    path.parent.mkdir(parents=True)
    head, tail = two_tasks("s")
    path.write_bytes(head)
    now = time.time()
    os.utime(path, (now - 10 * DAY, now - 10 * DAY))
    first: list = []
    follow = tailer(state, store, first, now)
    follow.start()
    follow.poll_once()
    with path.open("ab") as handle:
        handle.write(tail)
    follow.poll_once()
    follow.save_checkpoints()
    follow.close()
    assert first  # the new task
    again: list = []
    started(tailer(state, store, again, now, backfill=True))
    assert again == []
