"""What a failed export came to: transient (try again later), this request refused, or every
request to this endpoint refused; and the reason in one short phrase, from the SDK's records
of the call (`_sdk_logs.capture_exporter_logs`)."""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ._common import without_credentials

__all__ = [
    "REFUSED_ENDPOINT",
    "REFUSED_REQUEST",
    "RETRYABLE_HTTP",
    "ExportFailure",
    "describe_exception",
    "export_failure",
    "failure_reason",
]

# The SDK's exporters retry inside export() only what the OTLP specification calls transient
# (opentelemetry-exporter-otlp-proto-http 1.45: opentelemetry/exporter/otlp/common/http.py,
# `_RETRYABLE_STATUS_CODES` = 429, 502, 503, 504, honouring Retry-After, within
# OTEL_EXPORTER_OTLP_TIMEOUT; -proto-grpc 1.45: opentelemetry/exporter/otlp/proto/grpc/
# exporter.py, `_RETRYABLE_ERROR_CODES`, honouring the RetryInfo trailer). Any other answer
# ends the call at once with FAILURE; that answer will come again for the same request, and
# for a 404 or 501, for every request: `export_failure` says which, so that whoever retries
# after the SDK (the bridge's queue, the metrics' warning) does not wait and try again as if
# the collector were only busy.

#: The OTLP specification's retryable answers (otlp.md, "Failures"): everything else is final.
RETRYABLE_HTTP = frozenset({429, 502, 503, 504})
#: Answers that no request to this endpoint gets past: no receiver there (404: Jaeger's
#: OTLP port has no /v1/metrics), a method or protocol it does not take, or credentials.
_ENDPOINT_HTTP = frozenset({401, 403, 404, 405, 501})
_RETRYABLE_GRPC = frozenset(
    {
        "CANCELLED",
        "DEADLINE_EXCEEDED",
        "RESOURCE_EXHAUSTED",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNAVAILABLE",
        "DATA_LOSS",
    }
)
_ENDPOINT_GRPC = frozenset({"UNIMPLEMENTED", "NOT_FOUND", "UNAUTHENTICATED", "PERMISSION_DENIED"})

#: `ExportFailure.refused`: the collector refused this request (a span or point in it may be
#: the cause: another request may pass), or the endpoint refuses every request of this kind.
REFUSED_REQUEST = "request"
REFUSED_ENDPOINT = "endpoint"


@dataclass(frozen=True, slots=True)
class ExportFailure:
    """Why an export failed, and whether trying the same again can help.

    Attributes:
        reason: one short phrase (`failure_reason`): "HTTP 404 Not Found", "Connection
            refused", "UNAVAILABLE: ...".
        refused: None when the failure is transient (no answer, or 429, 502, 503, 504,
            gRPC UNAVAILABLE...): try again later. `REFUSED_REQUEST` when the collector
            answered that it will not take this request (HTTP 400, 413, 500...; gRPC
            INVALID_ARGUMENT...): the same request gets the same answer. `REFUSED_ENDPOINT`
            when it takes no request of this kind at all (HTTP 401, 403, 404, 405, 501; gRPC
            UNIMPLEMENTED, NOT_FOUND, UNAUTHENTICATED, PERMISSION_DENIED): a setting is wrong.
        status: the HTTP status (an int) or the gRPC status name, when there was an answer.
        retry_after: seconds the collector asked to wait (HTTP Retry-After), when it did.
    """

    reason: str
    refused: str | None = None
    status: int | str | None = None
    retry_after: float | None = None


#: What each exporter says when the port speaks the other protocol: the HTTP exporter reads a
#: gRPC server's first frame (HTTP/2 SETTINGS, starting with NUL bytes) as a status line; the
#: gRPC exporter reads an HTTP/1 answer as a frame. Each is said with what to set (start-up
#: says it first, `_sniff.protocol_mismatch`; this is for a port that changed meanwhile).
_ANSWERS_GRPC = (
    "the port answers gRPC (HTTP/2), not OTLP/HTTP: set OTEL_EXPORTER_OTLP_PROTOCOL=grpc, "
    "or use port 4318"
)
_ANSWERS_HTTP1 = (
    "the port answers HTTP/1, not gRPC: set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, "
    "or use port 4317"
)


def protocol_mismatch(records: Sequence[logging.LogRecord]) -> str | None:
    """What to set, when the records of a failed call show the port speaks the other OTLP
    protocol; None otherwise."""
    for record in records:
        args = record.args if isinstance(record.args, tuple) else ()
        for arg in (record.msg, *args):
            text = repr(arg) if isinstance(arg, BaseException) else str(arg)
            if "BadStatusLine" in text and "\\x00\\x00" in text:
                return _ANSWERS_GRPC
            if "Failed parsing HTTP/2" in text or "Expected SETTINGS frame" in text:
                return _ANSWERS_HTTP1
    return None


def export_failure(records: Sequence[logging.LogRecord]) -> ExportFailure:
    """What a failed export call came to, from the records captured during it
    (`capture_exporter_logs`): the last answer the collector gave decides; a port of the
    other protocol refuses every request (`protocol_mismatch`)."""
    mismatch = protocol_mismatch(records)
    if mismatch is not None:
        return ExportFailure(mismatch, REFUSED_ENDPOINT)
    status: int | str | None = None
    retry_after: float | None = None
    for record in records:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.name == "otel_bridge.export" and args and isinstance(args[0], int):
            status, retry_after = args[0], getattr(record, "retry_after", None)
            continue
        for arg in args:
            if isinstance(arg, enum.Enum) and type(arg).__name__ == "StatusCode":
                status = arg.name  # gRPC
            elif (
                status is None  # the HTTP exporter's last word, when no session noted it
                and str(record.msg).startswith("Failed to export")
                and isinstance(arg, int)
                and not isinstance(arg, bool)
                and 100 <= arg < 600
            ):
                status = arg
    refused: str | None = None
    if isinstance(status, int):
        if status not in RETRYABLE_HTTP:
            refused = REFUSED_ENDPOINT if status in _ENDPOINT_HTTP else REFUSED_REQUEST
    elif isinstance(status, str) and status not in _RETRYABLE_GRPC:
        refused = REFUSED_ENDPOINT if status in _ENDPOINT_GRPC else REFUSED_REQUEST
    return ExportFailure(failure_reason(records), refused, status, retry_after)


def failure_reason(records: Sequence[logging.LogRecord]) -> str:
    """One short phrase for why an export failed, from the SDK's records of that call.

    The SDK's messages are worded for its own retry loop ("retrying in 1.02s"), which the
    bridge's user does not see, so the cause is taken from their arguments where it can be: the
    root cause of an exception ("Connection refused"), a gRPC status and its details, an HTTP
    status; else the first warning or error is quoted.
    """
    mismatch = protocol_mismatch(records)
    if mismatch is not None:
        return mismatch
    for record in records:
        args = record.args if isinstance(record.args, tuple) else ()
        for arg in args:
            if isinstance(arg, BaseException):
                return describe_exception(arg)
        texts = [arg for arg in args if isinstance(arg, str)]
        for arg in args:
            if isinstance(arg, enum.Enum):  # grpc.StatusCode, followed by its details
                return _clip(f"{arg.name}: {texts[-1]}" if texts else arg.name)
            if isinstance(arg, int) and not isinstance(arg, bool) and 100 <= arg < 600:
                return _clip(f"HTTP {arg} {texts[-1]}" if texts else f"HTTP {arg}")
        if str(record.msg).startswith("Transient error") and texts:
            return _clip(texts[0])  # the HTTP exporter's reason phrase ("Service Unavailable")
    for record in records:
        if record.levelno >= logging.WARNING:
            return _clip(record.getMessage())
    return "the exporter reported a failure"


def describe_exception(exc: BaseException) -> str:
    """The innermost OS error under an exception (what urllib3 and requests wrap three deep:
    "[Errno 111] Connection refused"), else the exception itself, clipped."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
        nested = [
            current.__cause__,
            current.__context__,
            getattr(current, "reason", None),
            *current.args,
        ]
        todo.extend(item for item in nested if isinstance(item, BaseException))
    return _clip(f"{type(exc).__name__}: {exc}")


def _clip(text: str, limit: int = 240) -> str:
    text = " ".join(without_credentials(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
