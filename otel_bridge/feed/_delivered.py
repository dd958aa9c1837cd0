"""What a checkpoint says was delivered of the task still open, so that a restart does not
export it again, in a size that does not grow with the task.

A checkpoint resumes at a safe place: the end of a line after which no task was open. Every
span of the task open after it is read again at a restart; those already delivered must not go
out again. Naming each by its id made a checkpoint grow with the task (and be rewritten whole
at every save, every 50 ms), so it was capped, and past the cap a kill repeated the rest: a
task that never ends re-exported everything after a kill.

The re-read is deterministic (same bytes, same state, same ids, in the same order), and while
no sampler holds spans back a log's spans are queued in the order they are emitted, so those
delivered are a prefix of them (delivery follows sequence numbers). So the delivered spans are
kept as full blocks of `BLOCK` spans, each only a 64-bit digest of its ids, plus the ids of the
last, partial block. A restart checks each block as the re-read produces it: the same ids in
the same order are dropped (the same spans, delivered), anything else goes out (a repeat at
worst, never a loss), and the blocks after it are no longer trusted. Where order cannot be
relied on (a sampler that holds spans back), ids alone are kept, up to `MAX_IDS`.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

__all__ = ["BLOCK", "MAX_IDS", "DeliveredSpans", "ReReadBlocks", "block_digest"]

#: Spans per block. A checkpoint names at most BLOCK - 1 ids, plus a digest per block.
BLOCK = 1024
#: Ids remembered when order cannot be relied on (beyond: repeats after a crash, no loss).
MAX_IDS = 20_000
_MAX_ID = 1 << 64  # above any span id: bisects on (sequence number, span id) pairs


def block_digest(span_ids: Sequence[int]) -> int:
    """A 63-bit digest of a block's span ids, in order (JSON-safe, never negative)."""
    data = b"".join(span_id.to_bytes(8, "big") for span_id in span_ids)
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") >> 1


class DeliveredSpans:
    """The spans of the open task handed to the exporters since the safe place: the digests of
    full delivered blocks, then (sequence number, span id) pairs in the order they were
    queued. Not thread-safe: the tailer's thread only."""

    __slots__ = ("blocks", "entries", "ordered", "saved")

    def __init__(self) -> None:
        self.blocks: list[int] = []
        self.entries: list[tuple[int, int]] = []
        # The entries are the spans emitted since the safe place, in their order (after the
        # blocks): what lets full blocks be kept as digests.
        self.ordered = True
        self.saved = 0  # delivered spans the last checkpoint named (blocks counted in full)

    @classmethod
    def resumed(cls, ids: Sequence[int], blocks: Sequence[int]) -> DeliveredSpans:
        """What a checkpoint named: delivered before anything this run queues (sequence
        number 0), named again by every checkpoint until the re-read passes a safe place."""
        spans = cls()
        spans.blocks = list(blocks)
        spans.entries = [(0, span_id) for span_id in ids]
        spans.saved = len(spans.blocks) * BLOCK + len(spans.entries)
        return spans

    def add(self, queued: Sequence[tuple[int, int]], emitted: Sequence[int]) -> None:
        """Spans queued now (sequence number, span id) for the records whose ids are
        `emitted`. Queued in another order or number (a sampler held some back, or released
        others' spans), they are ids only from then on."""
        if self.ordered and [q[1] for q in queued] != list(emitted):
            self.ordered = False
        room = MAX_IDS - len(self.entries)
        if room < len(queued):
            self.ordered = False  # a gap: positions no longer line up
        self.entries.extend(queued[: max(room, 0)])

    def passed(self, safe_seq: int) -> None:
        """A safe place whose spans are all delivered became the checkpoint: what came before
        it is no longer needed."""
        if self.entries and self.entries[0][0] <= safe_seq:
            self.entries = [e for e in self.entries if e[0] > safe_seq]
        self.blocks = []
        if not self.entries:
            self.ordered = True
        self.saved = -1  # recounted by the next `named`

    def named(self, watermark: int | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The ids and block digests a checkpoint names now: every full block of delivered
        spans folded into a digest (when in order), the rest by id."""
        count = self._delivered(watermark)
        if self.ordered and count >= BLOCK:
            full = count - count % BLOCK
            ids = [e[1] for e in self.entries[:full]]
            self.blocks.extend(block_digest(ids[i : i + BLOCK]) for i in range(0, full, BLOCK))
            del self.entries[:full]
            count -= full
        self.saved = len(self.blocks) * BLOCK + count
        return tuple(e[1] for e in self.entries[:count]), tuple(self.blocks)

    def moved(self, watermark: int | None) -> bool:
        """Would `named(watermark)` name more than the last checkpoint did?"""
        return len(self.blocks) * BLOCK + self._delivered(watermark) != self.saved

    @property
    def settled(self) -> bool:
        """The last checkpoint named every span here."""
        return self.saved == len(self.blocks) * BLOCK + len(self.entries)

    @property
    def empty(self) -> bool:
        return not self.entries and not self.blocks

    def diverged(self, verified: int) -> None:
        """A re-read gave other spans than block `verified` said (see `ReReadBlocks`): only the
        blocks before it still hold, and positions no longer line up."""
        del self.blocks[verified:]
        self.ordered = False

    def _delivered(self, watermark: int | None) -> int:
        """How many of the entries (in sequence order) are delivered."""
        if watermark is None:
            return len(self.entries)
        return bisect.bisect_right(self.entries, (watermark, _MAX_ID))


class _HasSpanId(Protocol):
    @property
    def span_id(self) -> int: ...


R = TypeVar("R", bound=_HasSpanId)


class ReReadBlocks(Generic[R]):
    """Checks a re-read against the delivered blocks of a checkpoint: a block of records whose
    ids, in order, give the block's digest was delivered and is dropped; the first that does
    not is let through with everything after it (`diverged`)."""

    __slots__ = ("_blocks", "_buffer", "diverged", "verified")

    def __init__(self, blocks: Sequence[int]) -> None:
        self._blocks = list(blocks)
        self._buffer: list[R] = []
        self.verified = 0  # blocks found again, and dropped
        self.diverged = False

    @property
    def done(self) -> bool:
        """Every block was found again, or the re-read went another way."""
        return self.diverged or self.verified == len(self._blocks)

    def take(self, records: Sequence[R]) -> list[R]:
        """The records to hand over, of those the re-read gives now (in order)."""
        out: list[R] = []
        for record in records:
            if self.done:
                out.append(record)
                continue
            self._buffer.append(record)
            if len(self._buffer) == BLOCK:
                if block_digest([r.span_id for r in self._buffer]) == self._blocks[self.verified]:
                    self.verified += 1
                else:
                    out.extend(self._buffer)
                    self.diverged = True
                self._buffer = []
        return out

    def finish(self) -> list[R]:
        """The re-read reached a safe place with blocks still to find: it went another way;
        what is held goes out."""
        if not self.done:
            self.diverged = True
        held, self._buffer = self._buffer, []
        return held
