"""What became of each span the sink queued, over all its destinations: a span counts as
exported once every destination has it, as dropped when a full queue drops it (or an exporter
cannot take it even alone, `_poison`), and every failed attempt counts. The counts go to
`ExportStats` (the summaries) and to the metrics (otel_bridge.spans.exported, .dropped,
.rejected, otel_bridge.export.failures); `SpanSink.watermark` comes from the workers.

Log lines keep the logger they have always had, otel_bridge.export._sink.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import semconv as sc
from .._words import plural
from ..metrics._recorder import MetricsRecorder

__all__ = ["Delivery", "ExportStats"]

logger = logging.getLogger("otel_bridge.export._sink")


@dataclass
class ExportStats:
    """What became of the spans, each span counted once however many destinations it has.

    Attributes:
        exported: spans delivered to every destination.
        failed: spans in failed export attempts (retried; a span counts at each attempt).
        dropped: spans dropped from a full queue, or refused alone by an exporter (of at least
            one destination).
        rejected: spans an exporter could not take even alone (`_poison`), per exporter that
            refused them (so a span two exporters refused counts twice).
        by_exporter: spans delivered, per destination (its label), for a summary that says
            which destination fell behind when there are several.
    """

    exported: int = 0
    failed: int = 0
    dropped: int = 0
    rejected: int = 0
    by_exporter: dict[str, int] = field(default_factory=dict)


class Delivery:
    """The spans not yet delivered to every destination, and the counts of the rest.
    Thread-safe: the workers report from their threads.

    Args:
        labels: the destinations, as their workers are labelled.
        metrics: where the counts go.
    """

    def __init__(self, labels: Sequence[str], metrics: MetricsRecorder) -> None:
        self._lock = threading.Lock()
        self._destinations = len(labels)
        self.stats = ExportStats(by_exporter=dict.fromkeys(labels, 0))
        self.metrics = metrics
        # sequence number -> destinations that have not got the span yet; a span leaves when
        # the last one has it (exported) or when a full queue drops it (dropped)
        self._pending: dict[int, int] = {}
        #: Called (from an export thread, so it must be quick and thread-safe) after each
        #: delivered batch.
        self.on_delivered: Callable[[], None] | None = None

    def queued(self, sequence: Sequence[int]) -> None:
        """The spans numbered `sequence` were queued for every destination."""
        with self._lock:
            for seq in sequence:
                self._pending[seq] = self._destinations

    def undelivered(self) -> int:
        """Spans not delivered to every destination (nor dropped)."""
        with self._lock:
            return len(self._pending)

    def result(self, label: str, exporter: str, sequence: Sequence[int], ok: bool | None) -> None:
        """A worker's report (`_queue.ResultCallback`): delivered (ok), a failed attempt
        (False: retried), or dropped from a full queue (None)."""
        with self._lock:
            if ok is None:
                dropped = sum(self._pending.pop(seq, None) is not None for seq in sequence)
                logger.warning("%s: queue full, %s dropped", label, plural(len(sequence), "span"))
                if dropped:
                    self.stats.dropped += dropped
                    self.metrics.add(sc.METRIC_SPANS_DROPPED, dropped, {}, "")
            elif ok:
                if self.on_delivered is not None:
                    self.on_delivered()
                self.stats.by_exporter[label] = self.stats.by_exporter.get(label, 0) + len(sequence)
                done = 0
                for seq in sequence:
                    left = self._pending.get(seq)
                    if left is None:  # dropped by another destination's queue
                        continue
                    if left <= 1:
                        del self._pending[seq]
                        done += 1
                    else:
                        self._pending[seq] = left - 1
                if done:
                    self.stats.exported += done
                    self.metrics.add(sc.METRIC_SPANS_EXPORTED, done, {}, "")
            else:
                self.stats.failed += len(sequence)
                self.metrics.add(
                    sc.METRIC_EXPORT_FAILURES, 1, {sc.OTEL_BRIDGE_EXPORTER: exporter}, ""
                )

    def rejected(self, exporter: str, sequence: Sequence[int]) -> None:
        """Spans an exporter could not take even alone (`_poison`; its worker logged the first):
        dropped, as from a full queue, so that the watermark and the checkpoints pass them.
        Counted in otel_bridge.spans.dropped like those (its alerts and dashboards see them),
        and by exporter in otel_bridge.spans.rejected."""
        with self._lock:
            dropped = sum(self._pending.pop(seq, None) is not None for seq in sequence)
            self.stats.rejected += len(sequence)
            self.metrics.add(
                sc.METRIC_SPANS_REJECTED,
                len(sequence),
                {sc.OTEL_BRIDGE_EXPORTER: exporter},
                "",
            )
            if dropped:
                self.stats.dropped += dropped
                self.metrics.add(sc.METRIC_SPANS_DROPPED, dropped, {}, "")
