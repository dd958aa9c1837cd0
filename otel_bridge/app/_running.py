"""`run`'s gauges of what runs now (docs/metrics.md, "Running now"), and the clock that the
signals of a stalled or long task need between events.

The figures come from the assembler's open state (`Assembler.in_flight`), computed once per
collection of the metrics, not per gauge, and not at all between scrapes: nothing is worked
out while nothing is asked. A series seen once goes on at 0 when its tasks have ended (a
gauge that vanishes reads as "no data", not as "nothing runs"), within a bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Container, Iterable, Mapping

from .._records import AttributeValue
from ..assembler import TASK_METRICS, Assembler, Glance, InFlight, label_dict
from ..export import OtelMetricsRecorder
from ..feed import StreamFeeder

__all__ = ["RunningNow"]

#: Series kept at 0 after their tasks ended, per metric, at most: past it, those at 0 are
#: forgotten (the recorder caps each label's values anyway).
MAX_KEPT = 1_000
#: One computation serves the gauges of one collection: they are read within this many
#: seconds of one another.
FRESH_SECONDS = 1.0
#: How often the clock's signals are looked for (a scan of the open tasks).
WATCH_SECONDS = 5.0


class RunningNow:
    """The running-now gauges over an assembler, and `watch`, called from the loop that
    feeds it, for the signals only a clock tells."""

    def __init__(
        self,
        assembler: Assembler,
        clock: Callable[[], float] = time.time,
        catching: Callable[[], Container[str]] = frozenset,
        quiet: StreamFeeder | None = None,
    ) -> None:
        self._assembler = assembler
        # the quiet-task policy that says which task is stalled: `run`'s feeder, whose
        # timeouts are the tailer's; by default one with the default timeouts
        self._quiet = quiet or StreamFeeder(assembler, lambda _records: None)
        self._clock = clock
        # the logs still being caught up: their tasks are not counted as running now, so
        # that a restart does not show (and alert on) a task read half-way, an hour old and
        # waiting for a permission answered further down its log
        self._catching = catching
        self._lock = threading.Lock()
        self._view: InFlight = {}
        self._at = float("-inf")
        self._seen: dict[str, set[tuple[str | None, ...]]] = {name: set() for name in TASK_METRICS}
        self._watched = float("-inf")

    def register(self, recorder: OtelMetricsRecorder) -> None:
        """A gauge per metric of `TASK_METRICS`."""
        for name in TASK_METRICS:
            recorder.gauge_series(name, self._reader(name))

    def _reader(
        self, name: str
    ) -> Callable[[], Iterable[tuple[float, Mapping[str, AttributeValue]]]]:
        def read() -> list[tuple[float, Mapping[str, AttributeValue]]]:
            return self.series(name)

        return read

    def series(self, name: str) -> list[tuple[float, Mapping[str, AttributeValue]]]:
        """The series of gauge `name` now: those of the open tasks, and those seen before at 0."""
        with self._lock:
            now = time.monotonic()
            if now - self._at > FRESH_SECONDS:
                self._view = self._assembler.in_flight(
                    int(self._clock() * 1e9), skip=self._catching()
                )
                self._at = now
            values = self._view.get(name, {})
            seen = self._seen[name]
            if len(seen) + len(values) > MAX_KEPT:
                seen.clear()
            seen.update(values)
            return [(values.get(key, 0.0), label_dict(name, key)) for key in sorted(seen, key=str)]

    def glance(self) -> Glance:
        """Tasks open now, waiting for a person, in trouble (the logs caught up only)."""
        return self._assembler.glance(skip=self._catching())

    def watch(self, catching_up: bool = False) -> None:
        """Every few seconds, the signals of stalled and long tasks (`StreamFeeder.watch`);
        from the thread that feeds the assembler. Not while logs are caught up at start: a
        task read half-way is not silent, its next events are still on disk."""
        now = time.monotonic()
        if catching_up or now - self._watched < WATCH_SECONDS:
            return
        self._watched = now
        self._quiet.watch(self._clock())
