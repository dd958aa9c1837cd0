"""Reading health as metrics: lines lost by reason, and how late events are processed."""

from __future__ import annotations

from .. import semconv as sc
from ..decode._lines import ReadStats
from ..metrics._recorder import MetricsRecorder

__all__ = ["SkipCounter"]


class SkipCounter:
    """Turns the cumulative counts of a `ReadStats` into counter increments."""

    def __init__(self, stats: ReadStats, metrics: MetricsRecorder) -> None:
        self._stats = stats
        self._metrics = metrics
        self._seen = stats.skips()

    def update(self) -> None:
        """Count the lines lost since the last call."""
        now = self._stats.skips()
        for reason, count in now.items():
            delta = count - self._seen.get(reason, 0)
            if delta > 0:
                self._metrics.add(
                    sc.METRIC_LINES_SKIPPED, delta, {sc.OTEL_BRIDGE_REASON: reason}, ""
                )
        self._seen = now
