"""Checkpoints never cost data: a checkpoint file that cannot be used makes `run` read the logs
again (repeats), never skip them (loss); and what a checkpoint keeps of a session, scrubbed of
secrets, gives after a restart the very spans an unbroken run gives."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from otel_bridge import Assembler
from otel_bridge._records import SpanRecord
from otel_bridge.checkpoint._store import CheckpointStore, FileCheckpoint, fingerprint
from otel_bridge.feed import StreamFeeder
from otel_bridge.processors import Scrubber, ScrubberConfig
from otel_bridge.sources import Tailer, TailOptions
from tests import paths
from tests.builder import Log

FIXTURES = paths.FIXTURES
TOKEN = "ghp_" + "Zq8xW2vN4mK7pL1rT5yU3oI9" * 2  # a GitHub token's shape
HOUR = 3600.0


def tail(
    state: Path,
    store: Path | None,
    *,
    scrubber: ScrubberConfig | None = None,
    backfill: bool = False,
    clock: Callable[[], float] = time.time,
) -> tuple[list[SpanRecord], Tailer]:
    """Start a tailer (a `run`) on `state`, read everything there is, save, stop."""
    out: list[SpanRecord] = []
    tailer = Tailer(
        [state],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=0, watch=False, backfill=backfill),
        clock=clock,
        checkpoints=None
        if store is None
        else CheckpointStore(store, scrubber)
        if scrubber is not None
        else CheckpointStore(store),
    )
    tailer.start()
    while tailer.poll_once():
        pass
    tailer.save_checkpoints()
    tailer.close()
    return out, tailer


def roots(spans: list[SpanRecord]) -> set[int]:
    """The tasks: their root spans' ids."""
    return {s.span_id for s in spans if s.parent_span_id is None}


@pytest.mark.parametrize(
    "damage",
    [lambda: os.urandom(8192), lambda: b'{"version": 99}\n'],
    ids=["random-bytes", "newer-version"],
)
def test_a_lost_checkpoint_file_costs_no_task_of_the_older_logs(
    tmp_path: Path, damage: Callable[[], bytes], caplog: pytest.LogCaptureFixture
) -> None:
    """Every recorded session: `run` read its first line and checkpointed it; the rest came
    while it was down, and the restart is more than the catch-up window later. With the
    checkpoint file gone bad, the logs are read from their start anyway: every task the
    previous run had not delivered is exported, and the bad file is kept aside."""
    state = tmp_path / "session-state"
    bridge_state = tmp_path / "bridge-state"
    logs = {}
    for fixture in sorted(FIXTURES.glob("*/events.jsonl")):
        log = state / fixture.parent.name / "events.jsonl"
        log.parent.mkdir(parents=True)
        data = fixture.read_bytes()
        first = data.index(b"\n") + 1
        log.write_bytes(data[:first])
        logs[log] = data[first:]
    delivered, _ = tail(state, bridge_state)
    assert not roots(delivered)  # the first lines hold no task
    assert len(CheckpointStore(bridge_state).load()) == len(logs)
    for log, rest in logs.items():
        with log.open("ab") as handle:
            handle.write(rest)
        old = time.time() - 2 * HOUR  # older than the hour `run` catches up by default
        os.utime(log, (old, old))
    whole, _ = tail(state, None, backfill=True)
    undelivered = roots(whole)
    assert len(undelivered) >= 30

    bad = damage()
    journal = bridge_state / "checkpoints.jsonl"
    journal.write_bytes(bad)
    caplog.set_level("INFO")
    after, _ = tail(state, bridge_state)
    assert roots(after) >= undelivered, f"{len(roots(after) & undelivered)} of {len(undelivered)}"
    (kept,) = bridge_state.glob("checkpoints.jsonl.damaged-*")
    assert kept.read_bytes() == bad  # kept aside, not overwritten
    said = [r.getMessage() for r in caplog.records if "read from their start, as" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"{len(logs)} older logs"), said
    # the next start resumes from the checkpoints saved since: nothing read again
    again, _ = tail(state, bridge_state)
    assert not roots(again)


def test_a_damaged_line_costs_its_log_no_task(tmp_path: Path) -> None:
    """One log's only checkpoint line is damaged: that log is read from its start, however
    old; the other log resumes from its own checkpoint (nothing of it repeated)."""
    state = tmp_path / "session-state"
    bridge_state = tmp_path / "bridge-state"
    whole = {}
    for name in ("parallel_tools", "abort"):
        log = state / name / "events.jsonl"
        log.parent.mkdir(parents=True)
        whole[name] = (FIXTURES / name / "events.jsonl").read_bytes()
    (state / "parallel_tools" / "events.jsonl").write_bytes(whole["parallel_tools"])
    first_line = whole["abort"].index(b"\n") + 1
    (state / "abort" / "events.jsonl").write_bytes(whole["abort"][:first_line])
    delivered, _ = tail(state, bridge_state)
    assert roots(delivered)  # parallel_tools' tasks, delivered
    with (state / "abort" / "events.jsonl").open("ab") as handle:
        handle.write(whole["abort"][first_line:])
    for name in whole:
        old = time.time() - 2 * HOUR
        os.utime(state / name / "events.jsonl", (old, old))
    journal = bridge_state / "checkpoints.jsonl"
    header, *lines = journal.read_text().splitlines()
    damaged = [
        line.replace('"offset":', '"offset":"') if "abort" in line else line for line in lines
    ]
    assert damaged != lines
    journal.write_text("\n".join([header, *damaged]) + "\n")

    after, _ = tail(state, bridge_state)
    alone = tmp_path / "alone"
    (alone / "abort").mkdir(parents=True)
    (alone / "abort" / "events.jsonl").write_bytes(whole["abort"])
    expected, _ = tail(alone, None, backfill=True)
    assert roots(expected)
    assert roots(after) == roots(expected)


def test_a_crafted_negative_offset_does_not_make_a_log_unreadable(tmp_path: Path) -> None:
    """A checkpoint that names the file rightly but an offset of -1 (a seek there fails at
    every poll): the line is not used, and the log is read from its start."""
    state = tmp_path / "session-state"
    log = state / "abort" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes((FIXTURES / "abort" / "events.jsonl").read_bytes())
    st = log.stat()
    digest, length = fingerprint(log)
    crafted = FileCheckpoint(str(log), st.st_dev, st.st_ino, digest, length, 0)
    line = json.dumps({**dataclasses.asdict(crafted), "offset": -1, "sent": []})
    bridge_state = tmp_path / "bridge-state"
    bridge_state.mkdir()
    (bridge_state / "checkpoints.jsonl").write_text('{"version": 2}\n' + line + "\n")
    expected, _ = tail(state, None, backfill=True)
    spans, tailer = tail(state, bridge_state)
    assert roots(expected) and roots(spans) == roots(expected)
    assert tailer.followed == [str(log)]


def secret_session() -> tuple[bytes, bytes]:
    """A session whose working directory, git root and branch hold a token and a URL's
    password, cut in the middle of its second task (a stop of `run` there)."""
    log = Log(session="sess-secret")
    log.start(
        context={
            "cwd": f"/home/alice/{TOKEN}/project",
            "gitRoot": f"/home/alice/{TOKEN}",
            "repository": "octo-org/demo",
            "repositoryHost": "github.com",
            "hostType": "github",
            "branch": f"fix/{TOKEN}",
            "headCommit": "b" * 40,
        }
    )
    log.user(interaction="i1")
    log.simple_turn("0", "u1", [("c1", "bash")], interaction="i1")
    log.user(content="again", interaction="i2")
    log.simple_turn("0", "u2", [("c2", "bash")], interaction="i2")
    log.user(content="more", interaction="i3")
    log.simple_turn("0", "u3", interaction="i3")
    data = log.jsonl()
    cut = data.rindex(b"\n", 0, data.index(b'"u2"')) + 1
    return data[:cut], data[cut:]


@pytest.mark.parametrize("paths", ["keep", "hash"])
def test_spans_after_a_restart_equal_spans_without_one_with_secrets_in_cwd_and_branch(
    tmp_path: Path, paths: str
) -> None:
    """The checkpoint stores the session's state scrubbed of secrets (never paths rewritten):
    scrubbed again on export, it gives exactly what the unbroken run gives (no path hashed
    twice, no hash of a different text), and the token is nowhere on disk."""
    config = ScrubberConfig(paths=paths)
    scrubber = Scrubber(config)
    head, rest = secret_session()
    state = tmp_path / "session-state"
    log = state / "sess-secret" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(head)
    now = time.time()
    bridge_state = tmp_path / "bridge-state"
    before, _ = tail(state, bridge_state, scrubber=config, clock=lambda: now)
    assert TOKEN not in (bridge_state / "checkpoints.jsonl").read_text()
    with log.open("ab") as handle:
        handle.write(rest)
    after, _ = tail(state, bridge_state, scrubber=config, clock=lambda: now)

    unbroken_state = tmp_path / "unbroken"
    unbroken = unbroken_state / "sess-secret" / "events.jsonl"
    unbroken.parent.mkdir(parents=True)
    unbroken.write_bytes(head + rest)
    whole, _ = tail(unbroken_state, None, clock=lambda: now)
    expected = {s.span_id: scrubber.record(s) for s in whole}
    restarted = {s.span_id: scrubber.record(s) for s in [*before, *after]}
    assert restarted == expected
    resumed = [s for s in after if s.parent_span_id is None]
    assert resumed  # tasks built from the restored state
    for span in resumed:
        attributes = scrubber.record(span).attributes
        assert TOKEN not in json.dumps(dict(attributes))
        if paths == "hash":
            assert str(attributes["copilot.cwd"]).startswith("path:")
