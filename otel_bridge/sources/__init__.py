"""Sources: session logs (replayed once or followed as they grow) and live SDK sessions in,
decoded events out."""

from ._discovery import EVENTS_FILE, LogFile, default_session_state, find_logs, scan_session_state
from ._replay import ReplaySummary, replay_logs
from ._sdk import LiveBridge, parent_from_traceparent
from .tail import Tailer, TailOptions

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
