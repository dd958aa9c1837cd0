"""Sources: session logs (replayed once or followed as they grow) in, decoded events out, to
whatever they feed (the `feed.StreamFeeder`): they know nothing of spans. The live SDK
source, `LiveBridge`, builds a whole pipeline (otel_bridge/_live.py); it is importable from
here as it always was."""

from typing import Any as _Any

from ._discovery import (
    DEFAULT_MAX_LOG_BYTES,
    EVENTS_FILE,
    LogFile,
    Refused,
    default_session_state,
    find_logs,
    read_client_name,
    read_session_name,
    scan_session_state,
    session_log,
    shown,
)
from ._replay import ReplaySummary, replay_logs
from ._shard import Shard, parse_shard
from .tail import Tailer, TailOptions


def __getattr__(name: str) -> _Any:
    """`LiveBridge` and `parent_from_traceparent`, where they always were for apps: the live
    source builds a whole pipeline (otel_bridge/_live.py), so it is not imported with the
    sources, which know nothing of spans."""
    if name in ("LiveBridge", "parent_from_traceparent"):
        from .. import _live

        return getattr(_live, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_MAX_LOG_BYTES",
    "EVENTS_FILE",
    "LiveBridge",
    "LogFile",
    "Refused",
    "ReplaySummary",
    "Shard",
    "TailOptions",
    "Tailer",
    "default_session_state",
    "find_logs",
    "parent_from_traceparent",
    "parse_shard",
    "read_client_name",
    "read_session_name",
    "replay_logs",
    "scan_session_state",
    "session_log",
    "shown",
]
