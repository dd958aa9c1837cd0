"""Model-based test of following a log: random sequences of appends (whole lines, half lines),
polls and restarts from the checkpoint. Whatever the sequence, once the log is complete every
span of it has been emitted, and no span is emitted twice: here every poll saves the checkpoints
and emitting is delivering, so a restart has nothing in flight to repeat, however many restarts
come while one task is open. (Truncation and
replacement are covered in test_tail.py: after them the content is new, not a replay.)"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from otel_bridge import Assembler
from otel_bridge.checkpoint._store import CheckpointStore
from otel_bridge.feed import StreamFeeder, _delivered
from otel_bridge.sources import Tailer, TailOptions
from tests import paths
from tests.spantree import assemble_file

FIXTURE = paths.FIXTURES / "subagent_parallel" / "events.jsonl"
LINES = FIXTURE.read_bytes().splitlines(keepends=True)
EXPECTED = {s.span_id: s for s in assemble_file(FIXTURE)}


class FollowingALog(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="otel-bridge-stateful-"))
        self.state = self.root / "session-state"
        (self.state / "s").mkdir(parents=True)
        self.log = self.state / "s" / "events.jsonl"
        self.log.write_bytes(b"")
        self.written = 0  # lines fully written
        self.partial = 0  # bytes of the next line written
        self.emitted: dict[int, object] = {}
        self.repeated: list[str] = []
        self.tailer = self._new_tailer()

    def _new_tailer(self) -> Tailer:
        tailer = Tailer(
            [self.state],
            StreamFeeder(Assembler(), self._collect),
            TailOptions(rescan_seconds=0, idle_timeout_seconds=1e9, watch=False),
            checkpoints=CheckpointStore(self.root / "bridge-state"),
        )
        tailer.start()
        return tailer

    def _collect(self, records) -> None:
        # Noted here and checked by the invariant: an assertion raised inside the tailer's
        # emit would be caught by its guard of the log's reading.
        for record in records:
            if record.span_id in self.emitted:
                self.repeated.append(record.name)
            self.emitted[record.span_id] = record

    def _append(self, data: bytes) -> None:
        with self.log.open("ab") as handle:
            handle.write(data)

    @rule(n=st.integers(1, 12))
    def append_lines(self, n: int) -> None:
        if self.written >= len(LINES):
            return
        line = LINES[self.written]
        self._append(line[self.partial :])
        self.partial = 0
        self.written += 1
        for line in LINES[self.written : self.written + n - 1]:
            self._append(line)
            self.written += 1

    @rule(fraction=st.floats(0.1, 0.9))
    def append_half_a_line(self, fraction: float) -> None:
        if self.written >= len(LINES):
            return
        line = LINES[self.written]
        cut = max(int(len(line) * fraction), self.partial)
        self._append(line[self.partial : cut])
        self.partial = cut

    @rule()
    def poll(self) -> None:
        self.tailer.poll_once()
        self.tailer.save_checkpoints()

    @rule()
    def restart(self) -> None:
        self.tailer.close()
        self.tailer = self._new_tailer()

    @invariant()
    def nothing_unexpected(self) -> None:
        assert set(self.emitted) <= set(EXPECTED)
        assert not self.repeated, f"emitted again after a restart: {self.repeated}"

    def teardown(self) -> None:
        try:
            if hasattr(self, "log"):
                self.partial = 0 if self.written >= len(LINES) else self.partial
                while self.written < len(LINES):
                    self.append_lines(50)
                self.poll()
                self.tailer.close()
                assert set(self.emitted) == set(EXPECTED), "spans lost"
                for span_id, record in self.emitted.items():
                    assert record == EXPECTED[span_id]
        finally:
            if hasattr(self, "root"):
                shutil.rmtree(self.root, ignore_errors=True)


FollowingALog.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_following_a_log = FollowingALog.TestCase


class FollowingALogInSmallBlocks(FollowingALog):
    """The same, with the delivered spans of an open task folded into blocks of 3 (1,024 in
    use): restarts land before, inside and after blocks, and the re-read must drop exactly
    what each checkpoint said was delivered."""

    @initialize()
    def setup(self) -> None:
        self._block = _delivered.BLOCK
        _delivered.BLOCK = 3
        super().setup()

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            _delivered.BLOCK = getattr(self, "_block", _delivered.BLOCK)


FollowingALogInSmallBlocks.TestCase.settings = FollowingALog.TestCase.settings
test_following_a_log_in_small_blocks = FollowingALogInSmallBlocks.TestCase
