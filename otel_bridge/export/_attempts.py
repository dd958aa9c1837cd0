"""What an export worker (`_queue`) asks of its exporter, apart from the queue it drains: one
export call and what it came to (read from the SDK's records of the call, kept off the
terminal), a span the exporter cannot take even alone rejected and said once, and an outage
said once (a warning when it starts, one line when it ends, the rest at DEBUG).

Log lines keep the logger they have always had, otel_bridge.export._queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .._words import plural
from ._otlp_json import EncodedSpan
from ._poison import Verdict, classify, span_ids
from ._sdk_logs import capture_exporter_logs
from ._verdicts import describe_exception, failure_reason

__all__ = ["Attempt", "ExportItem", "ExporterCalls", "Outage"]

#: What a queue holds: SDK spans, or spans already encoded for the OTLP JSON file (the sink
#: gives that exporter those; the queue passes them on as they are).
ExportItem = ReadableSpan | EncodedSpan

logger = logging.getLogger("otel_bridge.export._queue")


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one export call came to.

    Attributes:
        ok: it went through.
        reason: why not, from what the SDK logged meanwhile (for a log line).
        verdict: what that says of the batch (`_poison.classify`).
        cause: the failure in words that quote nothing from the spans.
        retry_after: the seconds the collector asked to wait, if it did.
    """

    ok: bool
    reason: str = ""
    verdict: Verdict | None = None
    cause: str = ""
    retry_after: float | None = None


class ExporterCalls:
    """One exporter, called by one worker thread.

    Args:
        exporter: where the spans go.
        label: the exporter as a person knows it, for log lines.
        on_rejected: called with (exporter class name, sequence numbers) for spans the
            exporter could not take even alone (`_poison`).
    """

    def __init__(
        self,
        exporter: SpanExporter,
        label: str,
        on_rejected: Callable[[str, Sequence[int]], None] | None,
    ) -> None:
        self.name = type(exporter).__name__
        self.label = label
        self._exporter = exporter
        self._on_rejected = on_rejected
        self._rejection_logged = False

    def attempt(
        self, spans: list[ExportItem], on_trouble: Callable[[], None] | None = None
    ) -> Attempt:
        """One export call: whether it went through, and if not, why (from what the SDK
        logged meanwhile, which is kept off the terminal) and what that says of the batch.
        `on_trouble`: called at the first failure inside the call (`capture_exporter_logs`),
        which the SDK may retry for its whole timeout before the call returns."""
        with capture_exporter_logs(on_trouble) as records:
            try:
                # EncodedSpans are given only to the OTLP JSON file exporter (SpanSink)
                ok = self._exporter.export(spans) is SpanExportResult.SUCCESS  # type: ignore[arg-type]
            except Exception as exc:  # an exporter bug must not stop the bridge
                logger.debug("exporter %s raised", self.label, exc_info=True)
                verdict, cause, wait = classify(exc, records)
                reason = f"the exporter raised {describe_exception(exc)}"
                return Attempt(False, reason, verdict, cause, wait)
        if ok:
            return Attempt(True)
        verdict, cause, wait = classify(None, records)
        return Attempt(False, failure_reason(records), verdict, cause, wait)

    def try_part(self, part: list[tuple[int, ExportItem]]) -> tuple[Verdict | None, str]:
        """One export call of a part of a batch that failed about its data (`_poison`)."""
        result = self.attempt([span for _, span in part])
        return result.verdict, result.cause

    def reject(self, item: tuple[int, ExportItem], cause: str) -> None:
        """A span the exporter could not take, even alone: dropped from this exporter, counted
        (by the sink), and said once per exporter, by its ids only (its content may be
        private, and the cause is the exporter's, not the span's)."""
        seq, span = item
        if not self._rejection_logged:
            self._rejection_logged = True
            logger.warning(
                "%s: a span it cannot take was dropped (trace %s, span %s: %s); the other "
                "spans go on; further such spans are counted in otel_bridge.spans.rejected, "
                "not logged",
                self.label,
                *span_ids(span),
                cause or "refused",
            )
        if self._on_rejected is not None:
            self._on_rejected(self.name, [seq])

    def shutdown(self) -> None:
        """Shut the exporter down (its retry messages kept off the terminal); a failure is
        logged, not raised."""
        try:
            with capture_exporter_logs():
                self._exporter.shutdown()
        except Exception:
            logger.exception("exporter %s failed to shut down", self.label)


class Outage:
    """A worker's exporter failing: said once when it starts (with the reason and what to
    check), once when it works again, at DEBUG in between."""

    def __init__(self, label: str) -> None:
        self.label = label
        #: monotonic time the current batch first met a failure (a refused connection inside
        #: the SDK's call counts at once, `trouble`); what /readyz counts from
        self.failing_since: float | None = None
        self._said = False  # the warning that the exporter is failing was logged

    def trouble(self) -> None:
        """A failure inside an export call that has not returned yet (the SDK retries a
        refused connection for its whole timeout, 10 s by default): the outage starts now
        for /readyz; the warning waits for the call's reason (`failed`). Called on the
        worker's own thread, as `failed` and `recovered` are."""
        if self.failing_since is None:
            self.failing_since = time.monotonic()

    def recovered(self, depth: int) -> None:
        """An export went through; `depth`: spans still queued."""
        if self.failing_since is not None and self._said:
            logger.info(
                "%s: exporting again after %.0f s of failures; %s queued",
                self.label,
                time.monotonic() - self.failing_since,
                plural(depth, "span"),
            )
        self.failing_since = None
        self._said = False

    def failed(
        self, result: Attempt, attempt: int, batch: int, delay: float, depth: int, *, shut: bool
    ) -> None:
        """Attempt number `attempt` at a batch of `batch` spans failed; retried in `delay`
        seconds; `depth` spans queued. `shut`: the exporter was shut down under the call (a
        stop): no news."""
        refused_for_good = result.verdict is Verdict.ENDPOINT
        if not self._said and not shut:
            if self.failing_since is None:
                self.failing_since = time.monotonic()
            self._said = True
            logger.warning(
                "%s: export failed (%s); %s queued, retrying with back-off %s",
                self.label,
                result.reason,
                plural(depth, "span"),
                "(this endpoint takes no OTLP traces: check OTEL_EXPORTER_OTLP_ENDPOINT "
                "or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; `otel-bridge doctor` checks it)"
                if refused_for_good
                else "(`otel-bridge doctor` checks the set-up)",
            )
        else:
            logger.debug(
                "%s: export of %s failed again (attempt %d: %s); retrying in %.1f s",
                self.label,
                plural(batch, "span"),
                attempt,
                result.reason,
                delay,
            )
