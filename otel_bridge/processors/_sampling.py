"""Sampling that keeps what matters: every trace with a failure, a share of the rest.

A head sampler decides before it knows how a task ends; this one decides when the task's root
span (the interaction) ends, holding that trace's finished spans until then. A trace is kept
when anything in it failed (an error status or `error.type`: a failed tool or sub-agent, a
session error, an abort) or its task did not complete (`copilot.task.outcome` failed, error,
aborted); otherwise it is kept with probability `ratio`, decided from the trace id as
OpenTelemetry's TraceIdRatioBased sampler does (the low 64 bits against ratio * 2^64), so every
replica of the bridge makes the same choice for the same trace. Metrics are not sampled.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import semconv as sc
from .._records import SpanRecord, StatusCode

__all__ = ["TraceSampler"]

_KEEP_OUTCOMES = frozenset({sc.OUTCOME_FAILED, sc.OUTCOME_ERROR, sc.OUTCOME_ABORTED})
_DECISIONS_REMEMBERED = 10_000  # late spans of a decided trace follow its decision
_LOW_64 = (1 << 64) - 1


class TraceSampler:
    """Holds each trace's spans until its root ends, then forwards or drops them all.

    Args:
        ratio: the share of healthy traces to keep, 0.0 to 1.0; 1.0 keeps everything and
            holds nothing back.
    """

    def __init__(self, ratio: float = 1.0) -> None:
        if not 0.0 <= ratio <= 1.0:
            raise ValueError("the sampling ratio must be between 0 and 1")
        self.ratio = ratio
        self._bound = int(ratio * (1 << 64))
        self._held: dict[int, list[SpanRecord]] = {}
        self._decided: dict[int, bool] = {}
        self.kept_spans = 0
        self.dropped_spans = 0

    def offer(self, records: Iterable[SpanRecord]) -> list[SpanRecord]:
        """Take finished spans; return those to export now."""
        if self.ratio >= 1.0:
            return list(records)
        out: list[SpanRecord] = []
        for record in records:
            decision = self._decided.get(record.trace_id)
            if decision is not None:
                self._count(out, [record], decision)
                continue
            held = self._held.setdefault(record.trace_id, [])
            held.append(record)
            if sc.COPILOT_END_REASON in record.attributes:  # the interaction's root ended
                keep = self._keep(held)
                self._remember(record.trace_id, keep)
                self._count(out, self._held.pop(record.trace_id), keep)
        return out

    def flush(self) -> list[SpanRecord]:
        """Decide every trace still held (at shutdown) on what is known of it."""
        out: list[SpanRecord] = []
        for trace_id, held in list(self._held.items()):
            keep = self._keep(held)
            self._remember(trace_id, keep)
            self._count(out, held, keep)
        self._held.clear()
        return out

    @property
    def held(self) -> int:
        """Spans waiting for their trace's decision."""
        return sum(len(h) for h in self._held.values())

    def _keep(self, spans: list[SpanRecord]) -> bool:
        for span in spans:
            if span.status is StatusCode.ERROR or sc.ERROR_TYPE in span.attributes:
                return True
            if span.attributes.get(sc.COPILOT_TASK_OUTCOME) in _KEEP_OUTCOMES:
                return True
        return (spans[0].trace_id & _LOW_64) < self._bound

    def _remember(self, trace_id: int, keep: bool) -> None:
        self._decided[trace_id] = keep
        if len(self._decided) > _DECISIONS_REMEMBERED:
            del self._decided[next(iter(self._decided))]

    def _count(self, out: list[SpanRecord], spans: list[SpanRecord], keep: bool) -> None:
        if keep:
            out.extend(spans)
            self.kept_spans += len(spans)
        else:
            self.dropped_spans += len(spans)
