"""Sampling that keeps what matters: every task with a failure, a share of the rest.

A head sampler decides before it knows how a task ends; this one decides when the task's root
span (the interaction) ends, holding that interaction's finished spans until then. It decides
per interaction, not per trace: spans carry their interaction's root (`SpanRecord.root_span_id`),
and when interactions hang under a caller's span (`AssemblerConfig.parent`) they all share that
caller's trace id, yet each is decided on its own. An interaction is kept when anything in it
failed (an error status or `error.type`: a failed tool or sub-agent, a session error, an abort)
or its task did not complete (`copilot.task.outcome` failed, error, aborted); otherwise it is
kept with probability `ratio`. That coin is derived from the trace id as OpenTelemetry's
TraceIdRatioBased sampler does (the low 64 bits against ratio * 2^64) when the interaction is
its own trace, and from its root span id the same way when its trace is shared (the root has a
parent). Both ids are derived from the log, so every replica of the bridge makes the same
choice. Metrics are not sampled.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import semconv as sc
from .._records import SpanRecord, StatusCode

__all__ = ["TraceSampler"]

_KEEP_OUTCOMES = frozenset({sc.OUTCOME_FAILED, sc.OUTCOME_ERROR, sc.OUTCOME_ABORTED})
_DECISIONS_REMEMBERED = 10_000  # late spans of a decided interaction follow its decision
_LOW_64 = (1 << 64) - 1

#: What spans are held and decided by: (trace id, the interaction's root span id). A record that
#: does not know its root (None) is decided with the rest of its trace.
_Key = tuple[int, int | None]


def _key(record: SpanRecord) -> _Key:
    return (record.trace_id, record.root_span_id)


class TraceSampler:
    """Holds each interaction's spans until its root ends, then forwards or drops them all.

    Args:
        ratio: the share of healthy interactions to keep, 0.0 to 1.0; 1.0 keeps everything
            and holds nothing back.
    """

    def __init__(self, ratio: float = 1.0) -> None:
        if not 0.0 <= ratio <= 1.0:
            raise ValueError("the sampling ratio must be between 0 and 1")
        self.ratio = ratio
        self._bound = int(ratio * (1 << 64))
        self._held: dict[_Key, list[SpanRecord]] = {}
        self._decided: dict[_Key, bool] = {}
        self.kept_spans = 0
        self.dropped_spans = 0

    def offer(self, records: Iterable[SpanRecord]) -> list[SpanRecord]:
        """Take finished spans; return those to export now."""
        if self.ratio >= 1.0:
            return list(records)
        out: list[SpanRecord] = []
        for record in records:
            key = _key(record)
            decision = self._decided.get(key)
            if decision is not None:
                self._count(out, [record], decision)
                continue
            held = self._held.setdefault(key, [])
            held.append(record)
            if sc.COPILOT_END_REASON in record.attributes:  # the interaction's root ended
                keep = self._keep(held, record)
                self._remember(key, keep)
                self._count(out, self._held.pop(key), keep)
        return out

    def flush(self) -> list[SpanRecord]:
        """Decide every interaction still held (at shutdown) on what is known of it; one whose
        root never came is decided from its trace id."""
        out: list[SpanRecord] = []
        for key, held in list(self._held.items()):
            keep = self._keep(held, None)
            self._remember(key, keep)
            self._count(out, held, keep)
        self._held.clear()
        return out

    @property
    def held(self) -> int:
        """Spans waiting for their interaction's decision."""
        return sum(len(h) for h in self._held.values())

    def _keep(self, spans: list[SpanRecord], root: SpanRecord | None) -> bool:
        for span in spans:
            if span.status is StatusCode.ERROR or sc.ERROR_TYPE in span.attributes:
                return True
            if span.attributes.get(sc.COPILOT_TASK_OUTCOME) in _KEEP_OUTCOMES:
                return True
        return self._coin(spans[0].trace_id, root)

    def _coin(self, trace_id: int, root: SpanRecord | None) -> bool:
        """Keep a healthy interaction? From its trace id when the trace is its own; from its
        root's span id when the trace is a caller's (the root has a parent), shared with the
        caller's other interactions."""
        if root is not None and root.parent_span_id is not None:
            return (root.span_id & _LOW_64) < self._bound
        return (trace_id & _LOW_64) < self._bound

    def _remember(self, key: _Key, keep: bool) -> None:
        self._decided[key] = keep
        if len(self._decided) > _DECISIONS_REMEMBERED:
            del self._decided[next(iter(self._decided))]

    def _count(self, out: list[SpanRecord], spans: list[SpanRecord], keep: bool) -> None:
        if keep:
            out.extend(spans)
            self.kept_spans += len(spans)
        else:
            self.dropped_spans += len(spans)
