"""Errors of otel-bridge.

    BridgeError                 every error the bridge raises on purpose
     +-- ConfigError            a flag, variable or path the user gave cannot be used
     +-- SourceError            a log cannot be read
     |    +-- CheckpointError   the checkpoint file cannot be written
     |    +-- EventDecodeError  one line is not a Copilot event (logged, counted, skipped)
     +-- ExportError            a sink cannot be set up

Expected failures at run time (a bad line, a collector that is down) are counted and logged, not
raised through the pipeline; these exceptions carry them to the edge that decides that.
"""

from __future__ import annotations

__all__ = [
    "BridgeError",
    "CheckpointError",
    "ConfigError",
    "EventDecodeError",
    "ExportError",
    "SourceError",
]


class BridgeError(Exception):
    """Base of every error otel-bridge raises on purpose."""


class ConfigError(BridgeError):
    """A flag, environment variable or path cannot be used; the message says what to do."""


class SourceError(BridgeError):
    """A session log cannot be read."""


class CheckpointError(SourceError):
    """The checkpoint file or its directory cannot be written."""


class EventDecodeError(SourceError):
    """One line or object is not a Copilot session event."""


class ExportError(BridgeError):
    """A sink (exporter) cannot be set up."""
