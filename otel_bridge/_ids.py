"""Deterministic trace and span ids.

Why: the same log replayed twice, a restart from a checkpoint, and the live SDK stream of the same
session must all produce the same ids, so that a backend sees one span, never two
(docs/architecture.md, "Ids are derived, not random"). Ids are hashes of the session id and a
stable key of the thing the span stands for (an event id, a tool call id, a usage id), never
random.
"""

from __future__ import annotations

import hashlib

__all__ = ["span_id", "trace_id"]


def _digest(kind: str, session_id: str, key: str, size: int) -> int:
    material = f"otel-bridge/1\x00{kind}\x00{session_id}\x00{key}".encode("utf-8", "replace")
    value = int.from_bytes(hashlib.blake2b(material, digest_size=size).digest(), "big")
    return value or 1  # an all-zero id is invalid in OpenTelemetry


def trace_id(session_id: str, key: str) -> int:
    """A 128-bit trace id for the interaction keyed by `key` in `session_id`."""
    return _digest("trace", session_id, key, 16)


def span_id(kind: str, session_id: str, key: str) -> int:
    """A 64-bit span id for the `kind` of thing keyed by `key` in `session_id`.

    `kind` keeps, say, a tool call and the sub-agent it spawned apart even though both are keyed
    by the same tool call id.
    """
    return _digest(kind, session_id, key, 8)
