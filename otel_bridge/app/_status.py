"""What run says of itself while it runs: the catch-up's progress bar at start, and a status
line now and then."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from .._progress import ProgressBar
from .._words import plural
from ..assembler import Glance
from ..export import SpanSink
from ..sources import Tailer
from ._summary import sampled

__all__ = ["CatchUp", "StatusLine"]

logger = logging.getLogger("otel_bridge")


class CatchUp:
    """The progress bar of the catch-up at start (logs read from their beginning or their
    checkpoint), drawn on a terminal as replay's is, and closed once every log was read to
    its end: later lines go on as they come."""

    def __init__(self, tailer: Tailer, *, enabled: bool | None) -> None:
        self._tailer = tailer
        self._done = 0
        self._bar: ProgressBar | None = None
        if tailer.catch_up_bytes and tailer.catching_up:
            count = tailer.catching_up
            self._bar = ProgressBar(
                tailer.catch_up_bytes,
                f"catching up {count} log{'s' if count != 1 else ''}",
                enabled=enabled,
            )

    def update(self) -> None:
        if self._bar is None:
            return
        done = self._tailer.caught_up_bytes
        self._bar.advance(done - self._done)
        self._done = done
        if not self._tailer.catching_up:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class StatusLine:
    """Logs now and then what run is doing: one line an operator can read at a glance.
    `interval` 0 never logs; `clock` is the monotonic clock the interval is measured on."""

    def __init__(
        self,
        tailer: Tailer,
        sink: SpanSink,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        running: Callable[[], Glance] | None = None,
    ) -> None:
        self._tailer, self._sink, self._interval, self._clock = tailer, sink, interval, clock
        self._running = running  # what runs now, when the line should say it
        self._last = clock()
        self._events = 0

    def maybe_log(self) -> None:
        now = self._clock()
        if not self._interval or now - self._last < self._interval:
            return
        rate = (self._tailer.events_read - self._events) / (now - self._last)
        self._last, self._events = now, self._tailer.events_read
        logger.info("status: %s", self.line(rate))

    def line(self, rate: float) -> str:
        """The status, `rate` events read a second since the last."""
        lag = self._tailer.last_lag
        stats = self._sink.stats
        return (
            f"following {plural(self._tailer.followed_count, 'log')} "
            f"({self._tailer.catching_up} catching up, {self._tailer.resident} in memory), "
            f"{rate:.1f} events/s, last lag {f'{lag:.1f}s' if lag is not None else '-'}, "
            f"{plural(self._sink.queued, 'span')} queued, {stats.exported} exported, "
            f"{stats.dropped} dropped, {plural(stats.failed, 'span')} in failed "
            f"attempts{sampled(self._sink)}{self._now()}"
        )

    def _now(self) -> str:
        """'; 3 tasks open (1 waiting for a person, 0 in trouble)': the tasks of the logs
        caught up (docs/metrics.md, "Running now")."""
        if self._running is None:
            return ""
        now = self._running()
        return (
            f"; {plural(now.open, 'task')} open ({now.waiting} waiting for a person, "
            f"{now.troubled} in trouble)"
        )
