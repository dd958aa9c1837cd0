"""Shards: replicas that share one session-state directory split its sessions between them.

`--shard I/N` (I from 0 to N-1, as Kubernetes numbers the pods of a StatefulSet and the
completions of an indexed Job, so that its index can be passed as it is) makes a replica
handle only the sessions whose id hashes to I. Every replica computes the same hash, so N
replicas given 0/N to N-1/N cover every session exactly once: no overlap, no gap.

The hash is of the session directory's name (the session id the CLI names it by), never of
the log's content: a replica decides before reading a byte, and a session whose
`session.start` was lost still lands in the same shard. It is the first 8 bytes of the
SHA-256 of the name: `hash()` differs between processes (string hashing is salted), and the
split must not change between runs, replicas or Python versions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["Shard", "in_shard", "parse_shard", "shard_of"]


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard `index` of `count` (0-based).

    Raises:
        ValueError: count below 1, or index outside 0..count-1.
    """

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"the number of shards must be 1 or more, not {self.count}")
        if not 0 <= self.index < self.count:
            raise ValueError(
                f"the shard index must be from 0 to {self.count - 1} (0-based), not {self.index}"
            )

    def owns(self, session: str) -> bool:
        """True when the session named `session` (its directory name) is this shard's."""
        return shard_of(session, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(session: str, count: int) -> int:
    """The shard (0 to count-1) that the session named `session` belongs to."""
    digest = hashlib.sha256(session.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count


def in_shard(session: str, shard: Shard | None) -> bool:
    """True when `shard` is None (no sharding: every session) or owns `session`."""
    return shard is None or shard.owns(session)


def parse_shard(text: str) -> Shard:
    """`"I/N"` as a `Shard`.

    Raises:
        ValueError: not two whole numbers separated by a slash, or not a valid shard; the
            message says what was expected.
    """
    index, slash, count = text.strip().partition("/")
    if not slash or not _whole(index) or not _whole(count):
        raise ValueError("expected I/N, two whole numbers such as 0/3")
    return Shard(int(index), int(count))


def _whole(text: str) -> bool:
    return text.isascii() and text.isdigit()
