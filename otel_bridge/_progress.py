"""A small progress bar for long replays, on stderr, only when stderr is a terminal.

No dependency: one line redrawn with a carriage return, at most ten times a second.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """Shows bytes done of a known total.

    Args:
        total: bytes expected.
        label: what is being done, e.g. "replaying 3 files".
        stream: where to draw; stderr by default.
        enabled: draw at all; defaults to whether `stream` is a terminal.
    """

    def __init__(self, total: int, label: str, stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self._stream = stream or sys.stderr
        self._enabled = self._stream.isatty() if enabled is None else enabled
        self._total = max(total, 1)
        self._label = label
        self._done = 0
        self._last_draw = 0.0

    def advance(self, amount: int) -> None:
        """Count `amount` more bytes done, redrawing now and then."""
        self._done += amount
        now = time.monotonic()
        if self._enabled and (now - self._last_draw >= 0.1 or self._done >= self._total):
            self._last_draw = now
            self._draw()

    def close(self) -> None:
        """Finish the line so that later output starts on its own line."""
        if self._enabled:
            self._draw()
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self) -> None:
        fraction = min(self._done / self._total, 1.0)
        width = 30
        filled = int(fraction * width)
        bar = "#" * filled + "-" * (width - filled)
        self._stream.write(f"\r{self._label} [{bar}] {fraction:6.1%} "
                           f"{_size(self._done)}/{_size(self._total)}")
        self._stream.flush()


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
