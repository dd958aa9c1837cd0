"""The console exporter: what a person watching `otel-bridge run` or `replay` reads.

A trace is some ten to a thousand spans of about 1,000 characters of JSON each, children before
parents: unreadable on a terminal. So on a terminal the default is one line per finished task
("summary"), built from the task's spans; "tree" prints the span tree; "json" is OpenTelemetry's
own console format (one span per line), the default for pipes and files, which tests and
scripts parse. How a line reads is `_console_render.py`'s.

Spans arrive in batches from an export worker's thread, a trace possibly split across batches
and children always before their parent, so the human formats hold each task's spans until its
root span (the interaction) comes. A root is a span without a parent or, when the interactions
hang under an outside span (`LiveBridge(parent=...)`, one trace for many tasks), the span the
assembler marks as the end of an interaction (`copilot.end_reason`, `copilot.task.outcome`).
Spans that come after their task's root (a late background shell) make a line of their own
("continued"). Two logs of one session (a copy of a session's folder) give spans of the same
ids: each copy's spans are held apart, and a span printed before under its root is a copy's,
not late work, so every copy prints as the task it is. The number of tasks held is bounded
(the oldest is printed as it is, unfinished); the tasks still held at shutdown are one line
that says how many.

Finished tasks are printed in the order they started, not in the order their logs were read:
when `run` catches up many logs at start, or `replay` reads many, the tasks of each log come
together, log after log. So a finished task's line waits until no span has come for
`hold_seconds` (half a second; at most `_MAX_HOLD_SECONDS` in all), and what waited is printed
sorted by start time; a line says the date when it changes.

Names on a line come from logs another user may write (a session id, a tool or model name, an
error type): on a terminal, an escape sequence in one could clear the screen or move the
cursor, and a newline forge a line. So every such text is shown with its control characters,
newlines, bidirectional overrides and lone surrogates escaped (`\\x1b`, `\\n`, `\\u202e`), and
what the stream's encoding cannot show is escaped too: a bad string never stops the output.
The JSON format is OpenTelemetry's (json.dumps escapes all of these already).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter as _SdkConsoleSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from .. import semconv as sc
from .._progress import table_width, write
from ._common import CONSOLE_FORMATS
from ._console_render import RESET, Task, day, day_line, shown, span_id, tree_lines

__all__ = ["CONSOLE_FORMATS", "ConsoleSpanExporter", "shown"]

logger = logging.getLogger(__name__)

#: Tasks whose spans are held while waiting for their root; beyond, the oldest is printed as it
#: is (unfinished). Thousands of tasks open at once do not happen; a lost root does.
MAX_HELD_TRACES = 1000
_PRINTED_ROOTS = 10_000  # root span ids remembered, to recognise late spans hanging under them
_PRINTED_CHILDREN = 1000  # of each, the ids of the spans printed right under it
#: How long finished tasks wait for more spans before they are printed, sorted by start time.
HOLD_SECONDS = 0.5
_MAX_HOLD_SECONDS = 10.0  # a task waits no longer than this however many spans come
_MAX_WAITING = 10_000  # tasks waiting to be printed; then they are printed at once


def _json_line(span: ReadableSpan) -> str:
    """Exactly what the bridge always printed (OpenTelemetry's console format, one line)."""
    return str(span.to_json(indent=None)) + "\n"


@dataclass(order=True)
class _Finished:
    """A task ready to print: sorted by start time, then by when it came."""

    start_ns: int
    number: int
    task: Task = field(compare=False)
    tree: list[str] = field(compare=False)


class ConsoleSpanExporter(_SdkConsoleSpanExporter):
    """Prints spans for people (summary, tree) or as JSON lines, through the progress bar.

    A subclass of OpenTelemetry's console exporter: with format "json" it prints the same.

    Args:
        out: where to print; stdout by default.
        console_format: "summary", "tree" or "json"; None: summary when `out` is a terminal,
            json otherwise.
        color: colour the human formats; None: only on a terminal, and not when NO_COLOR is
            set (https://no-color.org) or TERM is dumb.
        max_held_traces: tasks held at most while waiting for their root span.
        hold_seconds: how long finished tasks wait for more spans to be printed with them in
            the order they started (0: printed as each export call ends, sorted within it).
            `force_flush` and `shutdown` print what waits.
        width: the width lines are cut to; None: $COLUMNS or the terminal's, none for a pipe.
    """

    def __init__(
        self,
        out: IO[str] | None = None,
        console_format: str | None = None,
        *,
        color: bool | None = None,
        max_held_traces: int = MAX_HELD_TRACES,
        hold_seconds: float = HOLD_SECONDS,
        width: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        stream = out or sys.stdout
        super().__init__(out=stream, formatter=_json_line)
        tty = _isatty(stream)
        self.format = console_format or ("summary" if tty else "json")
        if self.format not in CONSOLE_FORMATS:
            raise ValueError(f"console format must be one of {', '.join(CONSOLE_FORMATS)}")
        if color is None:
            color = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        self._stream = stream
        self._color = color
        self._width = width
        self._max_held = max(max_held_traces, 1)
        # by trace id, one dict (span id -> span) per copy of the trace: two logs of one
        # session give spans of the same ids
        self._held: OrderedDict[int, list[dict[int, ReadableSpan]]] = OrderedDict()
        #: root span id -> the ids of the spans printed right under it
        self._printed: OrderedDict[int, set[int]] = OrderedDict()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._hold = hold_seconds
        self._clock = clock
        self._waiting: list[_Finished] = []
        self._numbered = 0
        self._first_waiting = 0.0  # when the oldest task waiting became ready
        self._last_span = 0.0  # when the last span came
        self._day: str | None = None  # the date of the last line printed
        self._flusher: threading.Thread | None = None
        self._closed = False
        self._broken = False
        encoding = getattr(stream, "encoding", None)  # None: a StringIO, which takes any text
        self._unicode = encoding is None or "utf" in encoding.lower()
        self._encoding = encoding if isinstance(encoding, str) and not self._unicode else None

    @property
    def reads_unfiltered(self) -> bool:
        """The lines for people read a task's session, outcome, tools, tokens and model from
        its spans' attributes: `SpanSink` gives them the spans before the attribute allow and
        deny lists (secrets redacted all the same). The JSON format, for scripts and files,
        gets them filtered like any exporter."""
        return self.format != "json"

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            if self.format == "json":
                self._write(self._encodable("".join(_json_line(span) for span in spans)))
                return SpanExportResult.SUCCESS
            for span in spans:
                self._take(span)
            self._last_span = self._clock()
            if self._hold <= 0 or len(self._waiting) >= _MAX_WAITING:
                self._print_waiting()
            elif self._waiting:
                self._start_flusher()
                self._cond.notify()
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Print the finished tasks that wait (not those whose root has not come)."""
        with self._lock:
            self._print_waiting()
        return True

    def shutdown(self) -> None:
        """Print what waits, then one line for the tasks still open (whose root has not
        come): their spans so far made a line per top span ("unfinished"), 11 lines for 5
        tasks at a Ctrl-C, of tasks that are not over (`run` reads them again at its next
        start, and prints each when it ends)."""
        with self._lock:
            still_open = sum(len(copies) for copies in self._held.values())
            self._held.clear()
            self._print_waiting()
            if still_open:
                tasks = "1 task" if still_open == 1 else f"{still_open} tasks"
                self._write(
                    f"{tasks} still open at the stop, not printed: a task's line is printed "
                    "when it ends\n"
                )
            self._closed = True
            self._cond.notify_all()
            flusher = self._flusher
        if flusher is not None:
            flusher.join(timeout=5)

    # --- holding spans until their root ----------------------------------------------------

    def _take(self, span: ReadableSpan) -> None:
        """Hold `span`; when it is a root, its task is finished (and its spans let go)."""
        context = span.context
        if context is None:
            return
        copies = self._held.setdefault(context.trace_id, [])
        trace = next((t for t in copies if context.span_id not in t), None)
        if trace is None:  # a span of this id is held already: another copy's
            trace = {}
            copies.append(trace)
        trace[context.span_id] = span
        if self._is_root(span):
            spans = _pop_subtree(trace, context.span_id)
            if not trace:
                copies.remove(trace)
                if not copies:
                    del self._held[context.trace_id]
            self._finished(span, spans)
        elif len(self._held) > self._max_held:
            _, oldest = self._held.popitem(last=False)
            for held in oldest:
                self._leftovers(held)

    def _is_root(self, span: ReadableSpan) -> bool:
        attributes = span.attributes or {}
        return (
            span.parent is None
            or sc.COPILOT_END_REASON in attributes
            or sc.COPILOT_TASK_OUTCOME in attributes
            or self._late(span)
        )

    def _late(self, span: ReadableSpan) -> bool:
        """Late work of a task printed before: a span under its root that was not printed
        there (one that was is the same span again: another copy of the log, or a repeat
        after a restart, which waits for its own root)."""
        parent = span.parent
        if parent is None:
            return False
        printed = self._printed.get(parent.span_id)
        return printed is not None and span_id(span) not in printed

    def _leftovers(self, trace: dict[int, ReadableSpan]) -> None:
        """What is held of a trace whose root never came, a task per top span."""
        tops = [s for s in trace.values() if s.parent is None or s.parent.span_id not in trace]
        for top in sorted(tops, key=lambda s: s.start_time or 0):
            self._finished(top, _pop_subtree(dict(trace), span_id(top)))

    def _finished(self, top: ReadableSpan, spans: list[ReadableSpan]) -> None:
        """A task (or late work of one) whose spans are all here: remember what was printed
        under its root, and make it wait to be printed."""
        attributes = top.attributes or {}
        parent = top.parent.span_id if top.parent is not None else None
        late = sc.COPILOT_TASK_OUTCOME not in attributes and parent in self._printed
        if late and parent is not None:
            under = self._printed[parent]
            if len(under) < _PRINTED_CHILDREN:
                under.add(span_id(top))
        elif sc.COPILOT_TASK_OUTCOME in attributes or top.parent is None:
            top_id = span_id(top)
            under = self._printed.setdefault(top_id, set())
            under.update(
                span_id(s) for s in spans if s.parent is not None and s.parent.span_id == top_id
            )
            self._printed.move_to_end(top_id)
            if len(self._printed) > _PRINTED_ROOTS:
                self._printed.popitem(last=False)
        tree = []
        if self.format == "tree":
            tree = tree_lines(top, spans, unicode=self._unicode, paint=self._paint)
        if not self._waiting:
            self._first_waiting = self._clock()
        self._numbered += 1
        self._waiting.append(
            _Finished(top.start_time or 0, self._numbered, Task.of(top, spans, late=late), tree)
        )

    # --- printing in the order tasks started -----------------------------------------------

    def _start_flusher(self) -> None:
        if self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_loop, name="console", daemon=True)
            self._flusher.start()

    def _flush_loop(self) -> None:
        """Print what waits once no span has come for `hold_seconds`, or once the oldest
        has waited `_MAX_HOLD_SECONDS`."""
        with self._cond:
            while not self._closed:
                if not self._waiting:
                    self._cond.wait()
                    continue
                due = min(self._last_span + self._hold, self._first_waiting + _MAX_HOLD_SECONDS)
                now = self._clock()
                if now < due:
                    self._cond.wait(due - now)
                    continue
                self._print_waiting()

    def _print_waiting(self) -> None:
        """Print the tasks that wait, in the order they started. Call with the lock held."""
        if not self._waiting:
            return
        width = self._width if self._width is not None else _terminal_width(self._stream)
        lines = []
        for finished in sorted(self._waiting):
            today = day(finished.start_ns)
            if today != self._day:
                lines.append(day_line(finished.start_ns))
                self._day = today
            lines.append(finished.task.line(self._paint, width))
            lines.extend(finished.tree)
        self._waiting = []
        self._write(self._encodable("\n".join(lines) + "\n"))

    # --- writing ---------------------------------------------------------------------------

    def _paint(self, color: str, text: str) -> str:
        return f"{color}{text}{RESET}" if self._color and text.strip() else text

    def _encodable(self, text: str) -> str:
        """`text` as the stream's encoding can write it: what it cannot (an accent on an ASCII
        terminal) escaped, rather than an error that would stop the output for good."""
        if self._encoding is None or text.isascii():
            return text
        try:
            return text.encode(self._encoding, "backslashreplace").decode(self._encoding)
        except LookupError:  # an encoding Python does not know: ASCII, escaped
            return text.encode("ascii", "backslashreplace").decode("ascii")

    def _write(self, text: str) -> None:
        if not text or self._broken:
            return
        try:
            try:
                write(self._stream, text)
            except UnicodeError:  # text the stream cannot encode is no reason to stop printing
                write(self._stream, text.encode("ascii", "backslashreplace").decode("ascii"))
        except (OSError, ValueError) as exc:  # a closed pipe (| head) or stream
            # Retrying cannot help and would hold back every checkpoint: stop printing.
            self._broken = True
            logger.warning("console output stopped: %s", exc)


def _pop_subtree(trace: dict[int, ReadableSpan], top: int) -> list[ReadableSpan]:
    """Remove `top` and every span below it from `trace`; return them, `top` first."""
    children: dict[int, list[int]] = {}
    for key, span in trace.items():
        if span.parent is not None and key != top:
            children.setdefault(span.parent.span_id, []).append(key)
    out: list[ReadableSpan] = []
    stack = [top]
    while stack:
        key = stack.pop()
        if key in trace:
            out.append(trace.pop(key))
            stack.extend(children.get(key, ()))
    return out


def _terminal_width(stream: IO[str]) -> int | None:
    """$COLUMNS, else the terminal's width; None (no limit) for a pipe or a file."""
    return table_width(os.environ, stream)


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
