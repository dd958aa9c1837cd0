"""A span an exporter cannot take never holds back the others: tell such failures from an outage,
and isolate the span.

A failed export call is either transient (connection refused, a timeout, 503, a collector that
asks to retry): the whole batch is retried with back-off, as `_queue` always did; or the
endpoint takes no such request at all (404: no OTLP traces receiver there, 401, 403, 501...): a
setting is wrong, the batch waits the longest back-off (and a stop does not wait for it); or
about the data: the exporter could not encode the batch (protobuf raises on a time past 2^64
ns, on a string that is not valid Unicode; an exporter that raises anything but an OSError is
taken to have met such a value), or the receiver refused the request as it is (HTTP 400, 413,
500...; gRPC INVALID_ARGUMENT...: `_verdicts.export_failure`). Retrying that batch as it is
would fail for ever: every span queued behind it would wait, the checkpoints would stop, and a
restart would meet it again.

So a batch that failed about its data is tried in parts (`isolate`): the parts that go through
are delivered, and a single span that still fails alone is rejected (the caller drops it,
counts and logs it). An exporter or receiver that refuses everything (a bug that raises at
every call, a proxy that answers 400 to any request) must not make the bridge drop every span:
a span is only rejected once some other part of its batch went through. If nothing goes
through, the batch is left whole for the ordinary back-off.

`records` are the SDK's log records of the call (`_sdk_logs.capture_exporter_logs`): the SDK
exporters say there why a call failed, as `_verdicts.failure_reason` reads them.
"""

from __future__ import annotations

import enum
import logging
import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from opentelemetry.sdk.trace import ReadableSpan

from ._otlp_json import EncodedSpan
from ._verdicts import REFUSED_ENDPOINT, REFUSED_REQUEST, export_failure

__all__ = ["Verdict", "classify", "isolate", "span_ids"]

T = TypeVar("T")


class Verdict(enum.Enum):
    """What a failed export call says about its batch."""

    TRANSIENT = "transient"  # retry the batch as it is, with back-off
    DATA = "data"  # the exporter could not encode it, or the receiver refused it as invalid
    ENDPOINT = "endpoint"  # the endpoint takes no such request at all (404, 501...): a setting


#: The OTLP/HTTP exporter's message for a batch over its max_request_size: it drops the call
#: before sending it (opentelemetry-exporter-otlp-proto-http, trace_exporter.export).
_TOO_LARGE = "Dropping span batch"


def classify(
    exc: BaseException | None, records: Sequence[logging.LogRecord]
) -> tuple[Verdict, str, float | None]:
    """The verdict on a failed call, its cause in a few words that quote nothing from the
    spans (an exception's class, an HTTP status, a gRPC code), for a log line, and the seconds
    the collector asked to wait, if it did (HTTP Retry-After).

    Args:
        exc: what the exporter's `export` raised, if it raised (the gRPC exporter encodes the
            batch outside its own error handling, so an encoding error comes out here).
        records: what the SDK logged during the call (the HTTP exporter logs the encoding
            error it caught: "Failed to encode span batch: %s", with the exception); the
            collector's answer is read from them by `_verdicts.export_failure`.
    """
    if exc is not None:
        verdict = Verdict.TRANSIENT if isinstance(exc, OSError) else Verdict.DATA
        return verdict, type(exc).__name__, None
    for record in records:
        if isinstance(record.msg, str) and record.msg.startswith(_TOO_LARGE):
            return Verdict.DATA, "batch over the exporter's max_request_size", None
        args = record.args if isinstance(record.args, tuple) else ()
        for arg in args:
            # An OSError (requests' errors are) is the network's; any other exception the
            # exporter logged is its encoder's.
            if isinstance(arg, BaseException) and not isinstance(arg, OSError):
                return Verdict.DATA, type(arg).__name__, None
    failure = export_failure(records)
    cause = "" if failure.status is None else _status(failure.status)
    if failure.refused == REFUSED_ENDPOINT:
        return Verdict.ENDPOINT, cause, failure.retry_after
    if failure.refused == REFUSED_REQUEST:  # 400, 413, gRPC INVALID_ARGUMENT...
        return Verdict.DATA, cause, failure.retry_after
    return Verdict.TRANSIENT, cause, failure.retry_after


def _status(status: int | str) -> str:
    return f"HTTP {status}" if isinstance(status, int) else status


#: Calls a batch that failed about its data gets for some part of it to go through, before the
#: failure is taken as the exporter's or the receiver's, not the spans': halves, quarters,
#: eighths and sixteenths of it, tried one level after the other.
PROBES = 30


def isolate(
    batch: Sequence[T],
    attempt: Callable[[list[T]], tuple[Verdict | None, str]],
    delivered: Callable[[list[T]], None],
    rejected: Callable[[T, str], None],
    stop: Callable[[], bool],
) -> list[T]:
    """Deliver what can be delivered of a batch whose export failed about its data.

    First, some part of it must go through: the batch is tried in halves, then quarters..., one
    level after the other (bad spans come together, those of one broken session: a half
    without them is found at once), for at most `PROBES` calls. If none does, the exporter or
    the receiver refuses everything, not these spans: the batch is left whole, for the
    back-off. Once one did, each part that still fails (spans that failed alone before are
    tried once more: the receiver may have been refusing everything then) is split again,
    depth first, until the span that fails alone is found and rejected; the rest is
    delivered.

    Args:
        batch: the spans (in order) of the failed call.
        attempt: one export call; (None, "") when it went through, else the `classify` verdict
            and cause (an `ENDPOINT` verdict is handled as a transient one: left for the
            back-off).
        delivered: told of each part that went through.
        rejected: told of each span that failed alone, once some part went through (with the
            cause): the caller drops it.
        stop: True when no further call may be made (the exporter is shutting down).

    Returns:
        the spans still to deliver, in order, to retry with back-off: none when every span was
        delivered or rejected; else those not settled when a transient failure or `stop` came,
        or when nothing went through.
    """
    search = _Search(list(batch))
    while search.parts and not stop():
        # before anything went through, level by level (breadth first); after, depth first
        start, end = search.parts.popleft()
        part = search.items[start:end]
        verdict, cause = attempt(part)
        if verdict is None:
            delivered(part)
            search.went_through()
        elif verdict is not Verdict.DATA:  # an outage, or the endpoint refuses everything
            search.parts.appendleft((start, end))
            break
        elif search.refused(start, end):
            rejected(search.items[start], cause)
        elif search.out_of_probes():
            break
    # nothing went through (else `held` was emptied), or stopped: left for the back-off
    return search.rest()


class _Search(Generic[T]):
    """Where `isolate`'s search is: the parts of the batch still to try, those held, whether
    anything went through yet, and the calls left before it does."""

    def __init__(self, items: list[T]) -> None:
        self.items = items
        self.parts: deque[tuple[int, int]] = deque(_halves(0, len(items)))  # [start, end)
        self.held: list[tuple[int, int]] = []  # failed alone before anything went through
        # some part went through: the receiver takes data; failures are the data's
        self.taken = False
        self.probes = PROBES

    def rest(self) -> list[T]:
        """The spans not settled, in order."""
        spans = sorted([*self.held, *self.parts])
        return [self.items[i] for start, end in spans for i in range(start, end)]

    def went_through(self) -> None:
        """A part went through. The first time: the receiver takes data, so the spans refused
        alone so far are tried alone once more (it may have refused them while it refused
        everything) before their failure is taken as theirs."""
        if not self.taken:
            self.taken = True
            self.parts.extendleft(reversed(self.held))
            self.held = []

    def refused(self, start: int, end: int) -> bool:
        """A part failed about its data: split it, or hold a span that failed alone before
        anything went through. True: a span failed alone after something did, to reject."""
        if end - start > 1:
            if self.taken:
                self.parts.extendleft(reversed(_halves(start, end)))
            else:
                self.parts.extend(_halves(start, end))
            return False
        if self.taken:
            return True
        self.held.append((start, end))
        return False

    def out_of_probes(self) -> bool:
        """A call was spent before anything went through: True once none is left."""
        if self.taken:
            return False
        self.probes -= 1
        return self.probes <= 0


def _halves(start: int, end: int) -> list[tuple[int, int]]:
    middle = (start + end + 1) // 2
    return [(start, middle), (middle, end)] if end - start > 1 else [(start, end)]


def span_ids(span: ReadableSpan | EncodedSpan) -> tuple[str, str]:
    """A span's trace and span ids in hex, for a log line."""
    if isinstance(span, EncodedSpan):  # its JSON starts with them (`encode_record`)
        match = _IDS.match(span.json)
        return (match.group(1), match.group(2)) if match else ("?", "?")
    context = span.context
    if context is None:
        return "?", "?"
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


_IDS = re.compile(r'\{"traceId":"([0-9a-f]{32})","spanId":"([0-9a-f]{16})"')
