"""Sources: session logs (replayed once or followed as they grow) in, decoded events out, to
whatever they feed (the `feed.StreamFeeder`): they know nothing of spans. The live SDK
source, `LiveBridge`, builds a whole pipeline (otel_bridge/app/_live.py); it is importable from
here as it always was."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._discovery import (
        DEFAULT_MAX_LOG_BYTES,
        EVENTS_FILE,
        LogFile,
        Refused,
        default_session_state,
        find_logs,
        not_a_session_state,
        read_client_name,
        read_session_name,
        scan_session_state,
        session_log,
        shown,
    )
    from ._replay import ReplaySummary, replay_logs
    from ._shard import Shard, parse_shard
    from .tail import Tailer, TailOptions


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
    "not_a_session_state",
    "parent_from_traceparent",
    "parse_shard",
    "read_client_name",
    "read_session_name",
    "replay_logs",
    "scan_session_state",
    "session_log",
    "shown",
]

#: Where each name of the package is defined: imported on first use (`_lazy.py`).
_NAMES: dict[str, str] = {
    "DEFAULT_MAX_LOG_BYTES": "._discovery",
    "EVENTS_FILE": "._discovery",
    "LogFile": "._discovery",
    "Refused": "._discovery",
    "ReplaySummary": "._replay",
    "Shard": "._shard",
    "TailOptions": ".tail",
    "Tailer": ".tail",
    # the live source builds a whole pipeline: not one of the sources, which know nothing of
    # spans, but importable from here as it always was (not imported for type checks here:
    # that would make sources depend on the pipeline)
    "LiveBridge": "..app._live",
    "parent_from_traceparent": "..app._live",
    "default_session_state": "._discovery",
    "find_logs": "._discovery",
    "not_a_session_state": "._discovery",
    "parse_shard": "._shard",
    "read_client_name": "._discovery",
    "read_session_name": "._discovery",
    "replay_logs": "._replay",
    "scan_session_state": "._discovery",
    "session_log": "._discovery",
    "shown": "._discovery",
}

__getattr__, __dir__ = lazy_names(__name__, _NAMES)
