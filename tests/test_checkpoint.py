"""The checkpoint file, and resuming from it in the follower."""

from __future__ import annotations

import itertools
import json
import os
import stat
from pathlib import Path

import pytest

from otel_bridge import Assembler
from otel_bridge import _checkpoint as checkpoint_module
from otel_bridge._checkpoint import CheckpointStore, FileCheckpoint, fingerprint
from otel_bridge._exceptions import CheckpointError
from otel_bridge.sources import Tailer, TailOptions
from tests.builder import Log


def entry(path: Path, offset: int) -> FileCheckpoint:
    st = path.stat()
    digest, length = fingerprint(path)
    return FileCheckpoint(
        str(path),
        st.st_dev,
        st.st_ino,
        digest,
        length,
        offset,
        {"session_id": "s", "mode": "autopilot"},
    )


def test_saved_private_and_read_back(tmp_path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"x" * 2000)
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): entry(log, 100)})
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert not list(store.directory.glob("*.tmp"))
    assert json.loads(store.path.read_text().splitlines()[0])["version"] == 2
    loaded = CheckpointStore(tmp_path / "state").load()
    assert loaded[str(log)].offset == 100
    assert loaded[str(log)].session["mode"] == "autopilot"


def test_a_save_appends_only_what_moved_and_the_last_line_wins(tmp_path) -> None:
    logs = [tmp_path / f"{n}.jsonl" for n in range(3)]
    for log in logs:
        log.write_bytes(b"z" * 50)
    store = CheckpointStore(tmp_path / "state")
    assert store.save({str(log): entry(log, 10) for log in logs}) == 3
    size = store.path.stat().st_size
    assert store.save({str(log): entry(log, 10) for log in logs}) == 0  # nothing moved
    assert store.path.stat().st_size == size
    assert store.save({str(logs[1]): entry(logs[1], 20)}) == 1
    appended = store.path.read_bytes()[size:].decode()
    assert appended.count("\n") == 1 and str(logs[1]) in appended
    loaded = CheckpointStore(tmp_path / "state").load()
    assert [loaded[str(log)].offset for log in logs] == [10, 20, 10]


def test_the_journal_is_compacted_and_stays_bounded(tmp_path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"q" * 50)
    store = CheckpointStore(tmp_path / "state")
    for offset in range(1, 4000):
        store.save({str(log): entry(log, offset)})
    assert store.path.stat().st_size < 2 << 20  # 4,000 appends of ~300 bytes, compacted
    assert CheckpointStore(tmp_path / "state").load()[str(log)].offset == 3999


def test_one_checkpoint_is_read_back_from_the_journal_after_appends_and_compactions(
    tmp_path, monkeypatch
) -> None:
    """`get` reads a log's live line back from where the journal holds it: what a sleeping
    log wakes from, with nothing of it kept in memory but that place."""
    logs = [tmp_path / f"{n}.jsonl" for n in range(40)]
    for log in logs:
        log.write_bytes(b"g" * 50)
    monkeypatch.setattr(checkpoint_module, "_COMPACT_MIN_BYTES", 0)  # compact at 4x live
    store = CheckpointStore(tmp_path / "state")
    assert store.get(str(logs[0])) is None  # none saved yet
    sizes = []
    for round_ in range(1, 120):
        moved = logs[round_ % 7 :: 7]
        store.save({str(log): entry(log, round_) for log in moved})
        sizes.append(store.path.stat().st_size)
        for log in moved:
            assert store.get(str(log)) == entry(log, round_)
    assert sum(b < a for a, b in itertools.pairwise(sizes)) >= 3  # compacted
    latest = {str(log): store.get(str(log)) for log in logs}
    again = CheckpointStore(tmp_path / "state")
    assert again.load() == latest  # what get gave is what a restart loads
    assert {path: again.get(path) for path in latest} == latest
    store.forget([str(logs[0])])
    assert store.get(str(logs[0])) is None


def test_a_checkpoint_that_cannot_be_read_back_is_none_with_a_warning(tmp_path, caplog) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"d" * 50)
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): entry(log, 9)})
    store.path.write_bytes(store.path.read_bytes().replace(b'"offset":9', b'"offset":8'))
    assert store.get(str(log)) is None  # changed under the store: not trusted
    assert "cannot read" in caplog.text and str(log) in caplog.text


def test_a_version_1_checkpoint_is_read_back_before_and_after_its_replacement(tmp_path) -> None:
    logs = [tmp_path / f"{n}.jsonl" for n in range(2)]
    for log in logs:
        log.write_bytes(b"v" * 10)
    state = tmp_path / "state"
    state.mkdir()
    fields = ("path", "device", "inode", "fingerprint", "fingerprint_bytes", "offset")
    olds = [entry(log, 4) for log in logs]
    document = {
        "version": 1,
        "files": [
            {**{f: getattr(old, f) for f in fields}, "session": dict(old.session)} for old in olds
        ],
    }
    (state / "checkpoints.json").write_text(json.dumps(document))
    store = CheckpointStore(state)
    store.load()
    assert store.get(str(logs[1])) == olds[1]
    store.save({str(logs[0]): entry(logs[0], 6)})  # the journal replaces the version 1 file
    assert store.get(str(logs[0])) == entry(logs[0], 6)
    assert store.get(str(logs[1])) == olds[1]  # carried into the journal


def test_a_damaged_file_is_ignored_with_a_warning(tmp_path, caplog) -> None:
    store = CheckpointStore(tmp_path)
    store.path.write_text("{half a checkpo")
    assert store.load() == {}
    assert "ignoring checkpoint file" in caplog.text


def test_a_line_cut_by_a_crash_loses_only_itself(tmp_path, caplog) -> None:
    """A full disk or a crash in the middle of an append: the log's previous line holds,
    and the next save rewrites the journal whole."""
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"y" * 10)
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): entry(log, 3)})
    store.save({str(log): entry(log, 5)})
    whole = store.path.read_bytes()
    store.path.write_bytes(whole[:-40])  # the second line cut
    again = CheckpointStore(tmp_path / "state")
    assert again.load()[str(log)].offset == 3
    assert "damaged line" in caplog.text
    again.save({str(log): entry(log, 7)})
    assert b"\n{" not in again.path.read_bytes().split(b"\n", 1)[1][:1]  # rewritten clean
    assert CheckpointStore(tmp_path / "state").load()[str(log)].offset == 7


def test_a_version_1_file_is_read_and_replaced(tmp_path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"v" * 10)
    state = tmp_path / "state"
    state.mkdir()
    old = entry(log, 4)
    fields = ("path", "device", "inode", "fingerprint", "fingerprint_bytes", "offset")
    document = {
        "version": 1,
        "files": [{**{f: getattr(old, f) for f in fields}, "session": dict(old.session)}],
    }
    (state / "checkpoints.json").write_text(json.dumps(document))
    store = CheckpointStore(state)
    assert store.load()[str(log)].offset == 4
    store.save({str(log): entry(log, 6)})
    assert not (state / "checkpoints.json").exists()
    assert CheckpointStore(state).load()[str(log)].offset == 6


def test_a_failed_write_raises_and_the_next_save_writes_it(tmp_path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"w" * 10)
    state = tmp_path / "state"
    store = CheckpointStore(state)
    store.save({str(log): entry(log, 1)})
    # Directories where the files go: writes fail whatever the user's rights (tests run as
    # root too), as on a full disk or a read-only volume.
    store.path.unlink()
    store.path.mkdir()
    store.path.with_suffix(".jsonl.tmp").mkdir()
    with pytest.raises(CheckpointError, match="cannot write"):
        store.save({str(log): entry(log, 2)})
    store.path.rmdir()
    store.path.with_suffix(".jsonl.tmp").rmdir()
    assert store.save({str(log): entry(log, 2)}) == 1
    assert CheckpointStore(state).load()[str(log)].offset == 2


def test_a_replaced_or_truncated_file_no_longer_matches(tmp_path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"a" * 3000)
    checkpoint = entry(log, 2500)
    assert checkpoint.matches(log)
    log.write_bytes(b"a" * 100)  # truncated in place below the offset
    assert not checkpoint.matches(log)
    log.unlink()
    log.write_bytes(b"b" * 3000)  # a new file of the same size
    assert not checkpoint.matches(log)


def two_tasks(session: str) -> Log:
    log = Log(session=session)
    log.start()
    log.add("session.mode_changed", previousMode="interactive", newMode="autopilot")
    log.user(interaction="i1")
    log.simple_turn("0", "u1", [("c1", "bash")])
    log.add("session.task_complete", success=True)
    log.turn("1")
    log.usage("u2")
    log.message()
    log.turn_end("1")
    log.user(interaction="i2")
    log.simple_turn("0", "u3", interaction="i2")
    log.add("session.task_complete", success=True)
    return log


def test_resuming_mid_log_gives_exactly_the_spans_of_reading_it_whole(tmp_path) -> None:
    """Stop in the middle of the second task; a new follower resumes from the checkpoint and
    must produce the second task's spans exactly as a reading of the whole file does."""
    data = two_tasks("sess-9").jsonl()
    state = tmp_path / "session-state"
    (state / "sess-9").mkdir(parents=True)
    path = state / "sess-9" / "events.jsonl"
    cut = data.index(b'"u3"')  # inside the second task's usage record
    cut = data.rindex(b"\n", 0, cut) + 1
    path.write_bytes(data[:cut])
    store_dir = tmp_path / "bridge-state"

    first: list = []
    tailer = Tailer(
        [state],
        Assembler(),
        first.extend,
        TailOptions(rescan_seconds=0),
        clock=lambda: os.path.getmtime(path),
        checkpoints=CheckpointStore(store_dir),
    )
    tailer.start()
    tailer.poll_once()
    tailer.save_checkpoints()
    tailer.close()
    (saved,) = CheckpointStore(store_dir).load().values()
    assert 0 < saved.offset < cut  # before the open second task, not at the end

    with path.open("ab") as handle:
        handle.write(data[cut:])
    second: list = []
    tailer = Tailer(
        [state],
        Assembler(),
        second.extend,
        TailOptions(rescan_seconds=0),
        clock=lambda: os.path.getmtime(path),
        checkpoints=CheckpointStore(store_dir),
    )
    tailer.start()
    tailer.poll_once()
    tailer.close()

    whole: list = []
    reader = Tailer(
        [state],
        Assembler(),
        whole.extend,
        TailOptions(rescan_seconds=0),
        clock=lambda: os.path.getmtime(path),
    )
    reader.start()
    reader.poll_once()
    reader.close()
    assert {s.span_id for s in first} | {s.span_id for s in second} == {s.span_id for s in whole}
    # the open task's spans delivered before the stop are not exported again
    both = {s.span_id for s in first} & {s.span_id for s in second}
    assert not both, [s.name for s in first if s.span_id in both]
    whole_by_id = {s.span_id: s for s in whole}
    for span in second:  # re-read from the checkpoint: identical, mode and links included
        assert span == whole_by_id[span.span_id]
    (root,) = [s for s in second if s.name == "invoke_agent copilot"]
    assert root.attributes["copilot.mode"] == "autopilot"
    assert root.links  # the link to the first task survived the restart
