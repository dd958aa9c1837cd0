"""The checkpoint file, and resuming from it in the follower."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from otel_bridge import Assembler
from otel_bridge._checkpoint import CheckpointStore, FileCheckpoint, fingerprint
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


def test_saved_atomically_private_and_read_back(tmp_path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"x" * 2000)
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): entry(log, 100)})
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert not store.path.with_suffix(".json.tmp").exists()
    assert json.loads(store.path.read_text())["version"] == 1
    loaded = CheckpointStore(tmp_path / "state").load()
    assert loaded[str(log)].offset == 100
    assert loaded[str(log)].session["mode"] == "autopilot"


def test_a_damaged_file_is_ignored_with_a_warning(tmp_path, caplog) -> None:
    store = CheckpointStore(tmp_path)
    store.path.write_text("{half a checkpo")
    assert store.load() == {}
    assert "ignoring checkpoint file" in caplog.text


def test_a_leftover_temp_file_wins_when_it_is_complete(tmp_path) -> None:
    """A crash after the temp file was synced but before the rename: the temp is newer."""
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"y" * 10)
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): entry(log, 3)})
    newer = json.loads(store.path.read_text())
    newer["files"][0]["offset"] = 7
    store.path.with_suffix(".json.tmp").write_text(json.dumps(newer))
    assert store.load()[str(log)].offset == 7


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
    saved = json.loads((store_dir / "checkpoints.json").read_text())["files"][0]
    assert 0 < saved["offset"] < cut  # before the open second task, not at the end

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
    whole_by_id = {s.span_id: s for s in whole}
    for span in second:  # re-read from the checkpoint: identical, mode and links included
        assert span == whole_by_id[span.span_id]
    (root,) = [s for s in second if s.name == "invoke_agent copilot"]
    assert root.attributes["copilot.mode"] == "autopilot"
    assert root.links  # the link to the first task survived the restart
