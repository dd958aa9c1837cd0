"""The terminal the bridge shares: a progress bar, log records and console output.

The bar is one line on stderr redrawn with a carriage return; log records (stderr) and console
spans (stdout, written by an exporter's worker thread) can land on the same screen at any
moment. Whatever lands on the bar's line would be glued to it and then overwritten by the next
redraw, so every write goes through `write()`: under one lock, it wipes the bar, writes its
text, and draws the bar again below. `TerminalHandler` is the logging handler that does so.

No dependency (tqdm and rich can do this too, but the bridge needs only this much).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, TextIO

__all__ = ["ProgressBar", "TerminalHandler", "compact_count", "printable", "write"]

#: Serialises every write to the terminal (bar, logs, console spans) across threads. Re-entrant
#: so that a write made while drawing cannot deadlock; nothing logs while holding it.
_LOCK = threading.RLock()
_active: ProgressBar | None = None  # the bar on the screen, if any

if TYPE_CHECKING:
    _StreamHandler = logging.StreamHandler[TextIO]
else:  # not subscriptable at run time before Python 3.11
    _StreamHandler = logging.StreamHandler


#: What a terminal (or a log read on one) acts on instead of showing: C0 and C1 control
#: characters (escape sequences clear the screen or forge colours, a carriage return or a
#: newline forges a line), DEL, the Unicode line and paragraph separators, and the
#: bidirectional overrides and isolates that reorder what is shown.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNPRINTABLE_BUT_NEWLINE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` safe to print: what a terminal would act on (`_UNPRINTABLE`) written as an
    escape (`\\n`, `\\x1b`, `\\u202e`), so that a name taken from a file (a session's
    directory, a branch, a model) shows as what it is and a line stays one line. With
    `newlines`, newlines are kept (a traceback)."""
    pattern = _UNPRINTABLE_BUT_NEWLINE if newlines else _UNPRINTABLE
    return pattern.sub(_escape, text) if pattern.search(text) is not None else text


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named is not None:
        return named
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def write(stream: IO[str], text: str) -> None:
    """Write `text` (whole lines) to `stream` without garbling the progress bar.

    When a bar is on the screen and `stream` is a terminal, the bar's line is wiped first and
    the bar drawn again after `text`, so both stay readable. To a file or a pipe, nothing but
    `text` is written.
    """
    with _LOCK:
        bar = _active if _active is not None and _active.shown and _isatty(stream) else None
        if bar is not None:
            bar.wipe()
        stream.write(text)
        stream.flush()
        if bar is not None:
            bar.draw()


class TerminalHandler(_StreamHandler):
    """A `logging.StreamHandler` whose records go through `write()`, around the progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            write(self.stream, self.format(record) + self.terminator)
        except RecursionError:
            raise
        except Exception:  # as StreamHandler: a broken stderr must not stop the bridge
            self.handleError(record)


class ProgressBar:
    """Shows bytes done of a known total, on one line it redraws at most ten times a second.

    Args:
        total: bytes expected.
        label: what is being done, e.g. "replaying 3 files".
        stream: where to draw; stderr by default.
        enabled: draw at all; defaults to whether `stream` is a terminal.
    """

    def __init__(
        self, total: int, label: str, stream: TextIO | None = None, enabled: bool | None = None
    ) -> None:
        self._stream = stream or sys.stderr
        self._enabled = _isatty(self._stream) if enabled is None else enabled
        self._total = max(total, 1)
        self._label = printable(label)
        self._done = 0
        self._last_draw = 0.0
        self._drawn = 0  # characters of the bar now on the line
        self.shown = False  # the bar is on the screen (and others must write around it)

    def advance(self, amount: int) -> None:
        """Count `amount` more bytes done, redrawing now and then."""
        global _active
        self._done += amount
        now = time.monotonic()
        if self._enabled and (now - self._last_draw >= 0.1 or self._done >= self._total):
            self._last_draw = now
            with _LOCK:
                _active = self
                self.draw()

    def close(self) -> None:
        """Finish the line so that later output starts on its own line."""
        global _active
        if not self._enabled:
            return
        with _LOCK:
            self.draw()
            self._stream.write("\n")
            self._stream.flush()
            self.shown = False
            self._drawn = 0
            if _active is self:
                _active = None

    def wipe(self) -> None:
        """Blank the bar's line and put the cursor at its start (caller holds the lock)."""
        if self.shown:
            # Spaces rather than an ANSI erase: works on any terminal, TERM=dumb included.
            self._stream.write("\r" + " " * self._drawn + "\r")
            self._stream.flush()
            self.shown = False

    def draw(self) -> None:
        """Draw the bar over its line (caller holds the lock)."""
        columns = _columns(self._stream)
        fraction = min(self._done / self._total, 1.0)
        tail = f" {fraction:6.1%} {_size(self._done)}/{_size(self._total)}"
        # Never wider than the terminal: a wrapped bar cannot be redrawn with "\r".
        width = max(min(30, columns - 1 - len(self._label) - len(tail) - 3), 5)
        filled = int(fraction * width)
        line = f"{self._label} [{'#' * filled}{'-' * (width - filled)}]{tail}"[: columns - 1]
        padding = " " * max(self._drawn - len(line), 0)
        self._stream.write("\r" + line + padding)
        self._stream.flush()
        self._drawn = len(line)
        self.shown = True


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _columns(stream: IO[str]) -> int:
    """The width of the terminal `stream` is on (80 when that cannot be told)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return 80


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def compact_count(n: int) -> str:
    """12345 -> "12.3k": a glance, not a ledger (exact numbers are on the spans and in --json)."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def table_width(environ: Mapping[str, str], stream: IO[str]) -> int | None:
    """How wide the table may be: $COLUMNS, else the terminal's width; None (no limit) when
    printing to a pipe or file, which gets every column."""
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return shutil.get_terminal_size().columns if tty else None
