"""Sources: session logs (replayed once or followed as they grow) in, decoded events out, to
whatever they feed (the `feed.StreamFeeder`): they know nothing of spans. The live SDK
source, `LiveBridge`, builds a whole pipeline (otel_bridge/_live.py); it is importable from
here as it always was."""

from typing import Any as _Any

from ._discovery import EVENTS_FILE, LogFile, default_session_state, find_logs, scan_session_state
from ._replay import ReplaySummary, replay_logs
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
    "EVENTS_FILE",
    "LiveBridge",
    "LogFile",
    "ReplaySummary",
    "TailOptions",
    "Tailer",
    "default_session_state",
    "find_logs",
    "parent_from_traceparent",
    "replay_logs",
    "scan_session_state",
]
