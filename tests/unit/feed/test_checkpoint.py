"""The checkpoint file, and resuming from it in the follower."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import stat
from pathlib import Path

import pytest

from otel_bridge import Assembler
from otel_bridge._exceptions import CheckpointError
from otel_bridge.checkpoint import _store as checkpoint_module
from otel_bridge.checkpoint._file import encode
from otel_bridge.checkpoint._store import CheckpointStore, FileCheckpoint, fingerprint
from otel_bridge.feed import StreamFeeder
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


def test_the_journal_follows_the_logs_there_now_as_sessions_come_and_go(tmp_path) -> None:
    """Sessions start, are checkpointed many times and are deleted (forgotten), as people
    clean ~/.copilot/session-state: the journal never holds more than its live lines and as
    much again (or 256 KiB), whatever was seen since its last compaction."""
    logs = [tmp_path / f"{n}.jsonl" for n in range(400)]
    for log in logs:
        log.write_bytes(b"c" * 50)
    store = CheckpointStore(tmp_path / "state")
    live: list[Path] = []
    worst = 0.0
    for step in range(6000):
        if step % 15 == 0:  # a new session; the oldest of 20 goes
            live.append(logs[(step // 15) % len(logs)])
            if len(live) > 20:
                store.forget([str(live.pop(0))])
        log = live[step % len(live)]
        store.save({str(log): entry(log, step + 1)})
        live_bytes = sum(len(encode(entry(x, 1), str)) + 1 for x in live)
        worst = max(worst, store.path.stat().st_size / max(2 * live_bytes, 256 << 10))
    assert worst <= 1.05, worst  # 4.0 with a journal let grow to 4x live, or 1 MiB
    again = CheckpointStore(tmp_path / "state").load()  # (the tailer forgets the rest)
    assert all(again[str(log)].offset > 5000 for log in live)


def test_one_checkpoint_is_read_back_from_the_journal_after_appends_and_compactions(
    tmp_path, monkeypatch
) -> None:
    """`get` reads a log's live line back from where the journal holds it: what a sleeping
    log wakes from, with nothing of it kept in memory but that place."""
    logs = [tmp_path / f"{n}.jsonl" for n in range(40)]
    for log in logs:
        log.write_bytes(b"g" * 50)
    monkeypatch.setattr(checkpoint_module, "_COMPACT_MIN_BYTES", 0)  # compact at 2x live
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


def aside(directory: Path) -> list[Path]:
    return sorted(directory.glob("checkpoints.json*.damaged-*"))


@pytest.mark.parametrize(
    "content",
    [
        os.urandom(4096),  # overwritten with random bytes
        b"{half a checkpo",
        b'{"version": 99}\n{"path": "from a newer bridge", "offset": 7}\n',  # a newer version
        b"",  # empty: not even a header
    ],
    ids=["random", "cut", "newer", "empty"],
)
def test_a_file_that_cannot_be_used_is_kept_aside_never_overwritten(
    tmp_path, caplog, content
) -> None:
    """What was there survives (a newer bridge's file survives a downgrade), the loss is
    said once, and `lost` tells the tailer to read the logs from their start."""
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"x" * 100)
    store = CheckpointStore(tmp_path / "state")
    store.path.write_bytes(content)
    assert store.load() == {}
    assert store.lost
    (kept,) = aside(store.directory)
    assert kept.read_bytes() == content
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert sum("kept aside" in r.getMessage() for r in caplog.records) == 1
    store.save({str(log): entry(log, 5)})
    assert kept.read_bytes() == content  # not overwritten by the new journal
    again = CheckpointStore(tmp_path / "state")
    assert again.load()[str(log)].offset == 5
    assert not again.lost


def test_a_version_1_file_that_cannot_be_used_is_kept_aside(tmp_path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "checkpoints.json").write_text('{"version": 3, "files": []}')
    store = CheckpointStore(state)
    assert store.load() == {}
    assert store.lost
    (kept,) = aside(state)
    assert kept.name.startswith("checkpoints.json.damaged-")
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"x" * 10)
    store.save({str(log): entry(log, 1)})
    assert kept.read_text() == '{"version": 3, "files": []}'


def test_damaged_lines_set_the_file_aside_and_the_good_ones_still_hold(tmp_path) -> None:
    logs = [tmp_path / f"{n}.jsonl" for n in range(3)]
    for log in logs:
        log.write_bytes(b"z" * 50)
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): entry(log, 10 + n) for n, log in enumerate(logs)})
    lines = store.path.read_bytes().split(b"\n")
    lines[2] = b'{"path": "' + str(logs[1]).encode() + b'", "offset": -1}'  # damaged
    store.path.write_bytes(b"\n".join(lines))
    damaged = store.path.read_bytes()
    again = CheckpointStore(tmp_path / "state")
    loaded = again.load()
    assert again.lost
    assert sorted(loaded) == sorted([str(logs[0]), str(logs[2])])
    (kept,) = aside(again.directory)
    assert kept.read_bytes() == damaged
    assert again.get(str(logs[2])) == entry(logs[2], 12)  # from memory until the next save
    again.save({str(logs[1]): entry(logs[1], 21)})
    third = CheckpointStore(tmp_path / "state").load()  # the good lines carried over
    assert {path: c.offset for path, c in third.items()} == {
        str(logs[0]): 10,
        str(logs[1]): 21,
        str(logs[2]): 12,
    }


def good_line(tmp_path: Path) -> dict:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"v" * 10)
    return json.loads(json.dumps(dataclasses.asdict(entry(log, 4))))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("offset", -1),  # seek(-1): the log could never be read again
        ("offset", 1 << 64),
        ("offset", "12"),
        ("offset", 4.0),
        ("device", True),
        ("inode", None),
        ("path", ""),
        ("path", "a\x00b"),
        ("path", "/" * 5000),
        ("path", ["a"]),
        ("fingerprint", "not a digest"),
        ("fingerprint", "A" * 64),
        ("fingerprint_bytes", 1025),
        ("fingerprint_bytes", -3),
        ("session", ["a"]),
        ("sent", [1, -2]),
        ("sent", [1, "2"]),
        ("sent", list(range(50_001))),
        ("sent", {"1": 2}),
        ("sent_blocks", [1, -2]),
        ("sent_blocks", [2.5]),
        ("sent_blocks", list(range(100_001))),
        ("unknown", 1),
    ],
)
def test_every_field_is_checked_when_read(tmp_path, field, value) -> None:
    """A line whose field is of another type or out of range is damaged: not used."""
    good = good_line(tmp_path)
    store = CheckpointStore(tmp_path / "state")
    store.path.write_text(
        '{"version": 2}\n' + json.dumps({**good, field: value}) + "\n" + json.dumps(good) + "\n"
    )
    expected = FileCheckpoint(**{**good, "sent": (), "sent_blocks": ()})
    assert store.load() == {good["path"]: expected}
    assert store.lost
    for missing in ("path", "offset", "fingerprint"):
        broken = {k: v for k, v in good.items() if k != missing}
        store.path.write_text('{"version": 2}\n' + json.dumps(broken) + "\n")
        assert CheckpointStore(tmp_path / "state").load() == {}


def test_sent_ids_are_bounded_when_written(tmp_path) -> None:
    """Whatever the tailer hands over, what is written can be read back (more ids than the
    bound: the rest are repeated after a restart, never lost)."""
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"s" * 10)
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): dataclasses.replace(entry(log, 3), sent=tuple(range(60_000)))})
    again = CheckpointStore(tmp_path / "state")
    assert len(again.load()[str(log)].sent) == 50_000
    assert not again.lost


def test_only_the_last_few_damaged_files_are_kept(tmp_path) -> None:
    state = tmp_path / "state"
    for n in range(5):
        store = CheckpointStore(state)
        store.path.write_text(f"damaged {n}")
        store.load()
    kept = aside(state)
    assert len(kept) == 3
    assert [p.read_text() for p in kept] == ["damaged 2", "damaged 3", "damaged 4"]


def test_the_session_state_is_scrubbed_of_secrets_ids_kept(tmp_path) -> None:
    token = "ghp_" + "a1B2c3D4" * 5
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"t" * 10)
    session = {
        "session_id": "0f3c2a9e-5b7d-4c1e-9a8f-6d2b1e4c7a90",
        "previous_ids": ["5b7d4c1e-9a8f-4d2b-8e4c-7a900f3c2a9e"],
        "model": "gpt-4.1",
        "attribution": {
            "copilot.cwd": f"/home/alice/{token}/src",
            "vcs.ref.head.name": f"feature/{token}",
            "vcs.repository.url.full": "https://alice:hunter2secret@git.example.com/a/b",
        },
    }
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): dataclasses.replace(entry(log, 3), session=session)})
    text = store.path.read_text()
    assert token not in text and "hunter2secret" not in text
    restored = CheckpointStore(tmp_path / "state").load()[str(log)].session
    assert restored["session_id"] == session["session_id"]
    assert restored["previous_ids"] == session["previous_ids"]
    assert restored["model"] == "gpt-4.1"
    assert restored["attribution"]["copilot.cwd"] == "/home/alice/[REDACTED:github_token]/src"


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
    assert "last line was cut" in caplog.text
    assert again.lost  # it may have been another log's first checkpoint
    assert not aside(again.directory)  # a crash's doing, not damage: nothing to look into
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
        StreamFeeder(Assembler(), first.extend),
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
        StreamFeeder(Assembler(), second.extend),
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
        StreamFeeder(Assembler(), whole.extend),
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


def test_the_temporary_file_is_created_afresh_never_through_a_link(tmp_path) -> None:
    """A link planted (or left) where the temporary file goes is not followed: the file it
    points to is untouched, and the journal is a file of its own, mode 0600."""
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"l" * 10)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    store = CheckpointStore(tmp_path / "state")
    (store.directory / "checkpoints.jsonl.tmp").symlink_to(victim)
    store.save({str(log): entry(log, 2)})
    assert victim.read_text() == "precious"
    assert not store.path.is_symlink()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert not os.path.lexists(store.directory / "checkpoints.jsonl.tmp")
    assert CheckpointStore(tmp_path / "state").load()[str(log)].offset == 2


def test_a_failed_save_leaves_no_temporary_file(tmp_path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"f" * 10)
    store = CheckpointStore(tmp_path / "state")
    (store.path / "in the way").mkdir(parents=True)  # the rename over it fails
    with pytest.raises(CheckpointError, match="cannot write"):
        store.save({str(log): entry(log, 1)})
    assert sorted(p.name for p in store.directory.iterdir()) == ["checkpoints.jsonl"]


def test_a_journal_damaged_while_the_bridge_runs_is_kept_aside_and_the_next_start_told(
    tmp_path, monkeypatch, caplog
) -> None:
    """Damaged under a running bridge: its next rewrite sets it aside rather than write over
    it, and the logs whose lines went with it have no checkpoint now; the new journal says
    that checkpoints were lost, so that the next start reads such logs from their start."""
    monkeypatch.setattr(checkpoint_module, "_COMPACT_RATIO", 0)  # every save rewrites
    monkeypatch.setattr(checkpoint_module, "_COMPACT_MIN_BYTES", 0)
    logs = [tmp_path / f"{n}.jsonl" for n in range(2)]
    for log in logs:
        log.write_bytes(b"r" * 10)
    store = CheckpointStore(tmp_path / "state")
    store.save({str(log): entry(log, 1) for log in logs})
    store.path.write_bytes(os.urandom(300))
    store.save({str(logs[0]): entry(logs[0], 2)})
    assert len(aside(store.directory)) == 1
    assert "kept aside" in caplog.text
    assert store.get(str(logs[1])) is None  # quietly: its line went with the damaged file
    assert "cannot read" not in caplog.text
    again = CheckpointStore(tmp_path / "state")
    assert {p: c.offset for p, c in again.load().items()} == {str(logs[0]): 2}
    assert again.lost
    again.save({str(log): entry(log, 3) for log in logs})  # after a start, all are there
    third = CheckpointStore(tmp_path / "state")
    third.load()
    assert not third.lost
