"""What the feeder keeps of one stream between two reads: its last safe place, what was
delivered after it, and its session's state while the session is out of memory.

A safe place is the end of an event after which no interaction is open: a restart may resume
there with the session's state as it was then, and read every later span again. The ledger
remembers the safe places whose spans may still be queued (`pending`), which of the spans
after the one checkpointed were delivered (`sent`), and, after a restart, what the checkpoint
said was delivered, to drop it when the re-read gives it again (`skip`, `reread`). The log's
reader turns `named()` into a checkpoint line; the feeder (`StreamFeeder`) fills it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._records import SpanRecord
from ._delivered import DeliveredSpans, ReReadBlocks

__all__ = ["Ledger"]


class Ledger:
    """One stream's delivery bookkeeping. Slotted: a daemon keeps one per followed log."""

    __slots__ = (
        "evicted",
        "pending",
        "reread",
        "safe_offset",
        "safe_seq",
        "safe_session",
        "saved_once",
        "sent",
        "skip",
        "waiting_said",
    )

    def __init__(self, offset: int = 0) -> None:
        # Where a restart may resume: after the last line past which no interaction was open,
        # with the session's state there (see checkpoint/_store.py), and the sequence number of the
        # last span emitted before it.
        self.safe_offset = offset
        # As JSON, the form it is saved in, and a third of a dict's size: one is kept per log
        # however quiet (and shared with `evicted` when they are the same).
        self.safe_session = "{}"
        self.safe_seq = 0
        # Safe places whose spans may still be queued for export: (sequence number of the
        # last span emitted before it, offset, session state). See `advance`.
        self.pending: list[tuple[int, int, dict[str, Any]]] = []
        # Spans handed to the exporters since the last safe place: those delivered go into
        # the checkpoint, so that a restart reading the open interaction again does not
        # export them again. Only kept with checkpoints.
        self.sent = DeliveredSpans()
        self.saved_once = False  # a checkpoint was taken (or resumed from)
        # After a restart, what the checkpoint said was delivered, dropped when the re-read
        # gives it again: the ids of the last block, and the full blocks (`ReReadBlocks`).
        self.skip: set[int] | None = None
        self.reread: ReReadBlocks[SpanRecord] | None = None
        # The session's state while its assembler is out of memory (a quiet log, its
        # interactions closed), as JSON (a third of a dict's size): restored when the log
        # grows again. None while resident.
        self.evicted: str | None = None
        # the task (its root span id) said to wait for background work (logged once a task)
        self.waiting_said: int | None = None

    @classmethod
    def made(
        cls,
        offset: int = 0,
        *,
        after: Ledger | None = None,
        resume: tuple[Mapping[str, Any], Sequence[int], Sequence[int]] | None = None,
    ) -> Ledger:
        """The ledger of a stream read from `offset` with no checkpoint yet; `after`: of a
        stream read again from its start (its file replaced or truncated), a new one, but
        what was said once of its tasks is not said again; `resume`: of a stream resumed
        from a checkpoint at `offset`, (session state, sent, sent blocks) (`resumed`)."""
        if resume is not None:
            return cls.resumed(offset, *resume)
        ledger = cls(offset)
        if after is not None:
            ledger.waiting_said = after.waiting_said
        return ledger

    @classmethod
    def resumed(
        cls, offset: int, session: Mapping[str, Any], sent: Sequence[int], blocks: Sequence[int]
    ) -> Ledger:
        """The ledger of a checkpoint: its safe place and session state (taken back when the
        log is read: a checkpointed log that stays quiet costs no session assembler), and
        what it names as delivered after it: the re-read drops them, and until it passes a
        safe place every later checkpoint names them too. Without that, a second crash
        while the same task is still open would repeat what was delivered before the first
        one."""
        ledger = cls(offset)
        ledger.safe_session = ledger.evicted = json.dumps(session)
        ledger.skip = set(sent) or None
        ledger.reread = ReReadBlocks(blocks) if blocks else None
        ledger.sent = DeliveredSpans.resumed(sent, blocks)
        ledger.saved_once = True
        return ledger

    def advance(self, watermark: int | None) -> None:
        """Move to the latest safe place whose spans were all exported (sequence number up
        to `watermark`; None: all emitted spans were)."""
        done = [p for p in self.pending if watermark is None or p[0] <= watermark]
        if done:
            self.safe_seq, self.safe_offset, session = done[-1]
            self.safe_session = json.dumps(session)
            self.pending = self.pending[len(done) :]
            self.sent.passed(self.safe_seq)

    def named(
        self, watermark: int | None
    ) -> tuple[int, dict[str, Any], tuple[int, ...], tuple[int, ...]]:
        """What a checkpoint holds, once `advance`d: the safe place, its session's state, and
        the ids and block digests of the spans after it delivered already (a restart
        resumes at the safe place and re-reads every span emitted after it)."""
        sent, blocks = self.sent.named(watermark)
        self.saved_once = True
        return self.safe_offset, json.loads(self.safe_session), sent, blocks

    def moved(self, watermark: int | None) -> bool:
        """Would `advance` and `named` of `watermark` differ from the last ones? (Cheap: an
        idle or stalled log is not fingerprinted and encoded again at every save.)"""
        if not self.saved_once:
            return True
        if self.pending and (watermark is None or self.pending[0][0] <= watermark):
            return True
        return self.sent.moved(watermark)

    @property
    def settled(self) -> bool:
        """Nothing a later checkpoint could add: no safe place or sent span waiting."""
        return self.saved_once and not self.pending and self.sent.settled

    def at_rest(self, read_pos: int) -> bool:
        """Would a ledger made from its last checkpoint (`resumed`) be this one, its log read
        up to `read_pos`? Its session is out of memory in the state the checkpoint holds,
        with nothing after it to deliver or to skip."""
        return (
            self.evicted is not None
            and self.settled
            and self.sent.empty
            and self.skip is None
            and self.reread is None
            and self.safe_offset == read_pos
            and self.evicted == self.safe_session
        )
