"""otel-bridge: GitHub Copilot CLI agent sessions as OpenTelemetry traces.

The pipeline is the OpenTelemetry Collector's receiver -> processor -> exporter split in one
process: sources (`otel_bridge.sources`) decode session logs into `Event`s, the pure `Assembler`
turns events into `SpanRecord`s, processors (`otel_bridge.processors`) sample and scrub them, and
sinks (`otel_bridge.export`) hand them to the OpenTelemetry SDK exporters.
"""

from ._exceptions import BridgeError, ConfigError, EventDecodeError, ExportError, SourceError
from ._records import LinkRecord, SpanEventRecord, SpanKind, SpanRecord, StatusCode
from ._version import __version__
from .assembler import Assembler, AssemblerConfig, AssemblerStats, SessionAssembler
from .decode._events import Event, event_from_json, parse_timestamp_ns
from .decode._lines import DEFAULT_MAX_LINE_BYTES, JsonLinesDecoder, ReadStats

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "Assembler",
    "AssemblerConfig",
    "AssemblerStats",
    "BridgeError",
    "ConfigError",
    "Event",
    "EventDecodeError",
    "ExportError",
    "JsonLinesDecoder",
    "LinkRecord",
    "ReadStats",
    "SessionAssembler",
    "SourceError",
    "SpanEventRecord",
    "SpanKind",
    "SpanRecord",
    "StatusCode",
    "__version__",
    "event_from_json",
    "parse_timestamp_ns",
]
