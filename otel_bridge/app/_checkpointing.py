"""Saving run's checkpoints: never past what was delivered, and with back-off when saving
fails."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from .. import semconv as sc
from .._exceptions import CheckpointError
from .._words import plural
from ..metrics._recorder import MetricsRecorder

__all__ = ["Checkpointing"]

logger = logging.getLogger("otel_bridge")


class _Saver(Protocol):
    def save_checkpoints(self, watermark: int | None = None, *, force: bool = True) -> object: ...


class _Watermark(Protocol):
    @property
    def watermark(self) -> int: ...


class Checkpointing:
    """Saves checkpoints after polls and deliveries; a save that fails (a full disk, a
    read-only volume) is logged once, counted, retried with back-off (1 s doubling to 60 s),
    and shown by /readyz (`failing`), and `run` goes on exporting: only a crash meanwhile
    would repeat more. `clock` is the monotonic clock the back-off is measured on."""

    MAX_BACKOFF = 60.0

    def __init__(
        self,
        tailer: _Saver,
        sink: _Watermark,
        recorder: MetricsRecorder | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tailer, self._sink, self._recorder, self._clock = tailer, sink, recorder, clock
        self.failing: str | None = None  # the current failure, for /readyz
        self.first_error: str | None = None
        self.failures = 0
        self.backoff = 0.0
        self._retry_at = 0.0

    def save(self, *, final: bool) -> bool:
        """Save (throttled unless `final`); False when the save failed."""
        if not final and self._clock() < self._retry_at:
            return self.failing is None
        try:
            self._tailer.save_checkpoints(self._sink.watermark, force=final)
        except CheckpointError as exc:
            return self._failed(exc, final=final)
        if self.failing is not None:
            logger.info("checkpoints saved again after %s", plural(self.failures, "failed attempt"))
            self.failing = None
            self.backoff = 0.0
        return True

    def _failed(self, exc: CheckpointError, *, final: bool) -> bool:
        self.failures += 1
        if self._recorder is not None:
            self._recorder.add(sc.METRIC_CHECKPOINT_FAILURES, 1, {}, "")
        if final:
            logger.error(
                "%s; the next start reads again what this run delivered since the last "
                "checkpoint saved%s",
                exc,
                f" (saving has failed {self.failures} times since: {self.first_error})"
                if self.first_error and self.failures > 1
                else "",
            )
            return False
        self.backoff = min(max(self.backoff * 2, 1.0), self.MAX_BACKOFF)
        self._retry_at = self._clock() + self.backoff
        if self.failing is None:
            logger.warning(
                "%s; retrying with back-off (spans are still exported; a restart "
                "meanwhile would export again what was delivered since)",
                exc,
            )
        self.failing = str(exc)
        self.first_error = self.first_error or str(exc)
        return False
