"""The console exporter: what a person watching `otel-bridge run` or `replay` reads.

A trace is some ten to a thousand spans of about 1,000 characters of JSON each, children before
parents: unreadable on a terminal. So on a terminal the default is one line per finished task
("summary"), built from the task's spans; "tree" prints the span tree; "json" is OpenTelemetry's
own console format (one span per line), the default for pipes and files, which tests and
scripts parse.

Spans arrive in batches from an export worker's thread, a trace possibly split across batches
and children always before their parent, so the human formats hold each task's spans until its
root span (the interaction) comes. A root is a span without a parent or, when the interactions
hang under an outside span (`LiveBridge(parent=...)`, one trace for many tasks), the span the
assembler marks as the end of an interaction (`copilot.end_reason`, `copilot.task.outcome`).
Spans that come after their task's root (a late autopilot continuation) make a line of their
own. The number of tasks held is bounded; what is still held at shutdown is printed as
unfinished.

Names on a line come from logs another user may write (a session id, a tool or model name, an
error type): on a terminal, an escape sequence in one could clear the screen or move the
cursor, and a newline forge a line. So every such text is shown with its control characters,
newlines, bidirectional overrides and lone surrogates escaped (`\x1b`, `\n`, `\u202e`), and
what the stream's encoding cannot show is escaped too: a bad string never stops the output.
The JSON format is OpenTelemetry's (json.dumps escapes all of these already).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import IO

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter as _SdkConsoleSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace.status import StatusCode

from .. import semconv as sc
from .._progress import compact_count, write

__all__ = ["CONSOLE_FORMATS", "ConsoleSpanExporter", "shown"]

logger = logging.getLogger(__name__)

#: The formats of `--console-format`.
CONSOLE_FORMATS = ("summary", "tree", "json")

#: Tasks whose spans are held while waiting for their root; beyond, the oldest is printed as it
#: is (unfinished). Thousands of tasks open at once do not happen; a lost root does.
MAX_HELD_TRACES = 1000
_PRINTED_ROOTS = 10_000  # root span ids remembered, to recognise late spans hanging under them

_GREEN, _RED, _YELLOW, _DIM, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[2m", "\x1b[0m"
_OUTCOME_COLORS = {
    sc.OUTCOME_COMPLETED: _GREEN,
    sc.OUTCOME_FAILED: _RED,
    sc.OUTCOME_ERROR: _RED,
    sc.OUTCOME_ABORTED: _YELLOW,
}


def _json_line(span: ReadableSpan) -> str:
    """Exactly what the bridge always printed (OpenTelemetry's console format, one line)."""
    return str(span.to_json(indent=None)) + "\n"


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
    """

    def __init__(
        self,
        out: IO[str] | None = None,
        console_format: str | None = None,
        *,
        color: bool | None = None,
        max_held_traces: int = MAX_HELD_TRACES,
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
        self._max_held = max(max_held_traces, 1)
        self._held: OrderedDict[int, dict[int, ReadableSpan]] = OrderedDict()  # by trace id
        self._printed: OrderedDict[int, None] = OrderedDict()  # root span ids
        self._lock = threading.Lock()
        self._broken = False
        encoding = getattr(stream, "encoding", None)  # None: a StringIO, which takes any text
        self._unicode = encoding is None or "utf" in encoding.lower()
        self._encoding = encoding if isinstance(encoding, str) and not self._unicode else None

    @property
    def reads_unfiltered(self) -> bool:
        """The lines for people read a task's session, outcome, turns, tools and tokens from
        its spans' attributes: `SpanSink` gives them the spans before the attribute allow and
        deny lists (secrets redacted all the same). The JSON format, for scripts and files,
        gets them filtered like any exporter."""
        return self.format != "json"

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            if self.format == "json":
                text = "".join(_json_line(span) for span in spans)
            else:
                text = "".join(self._take(span) for span in spans)
            self._write(self._encodable(text))
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        """Print what is still held (tasks whose root never came), unfinished."""
        with self._lock:
            text = "".join(self._render_leftovers(trace) for trace in self._held.values())
            self._held.clear()
            self._write(self._encodable(text))

    # --- holding spans until their root ----------------------------------------------------

    def _take(self, span: ReadableSpan) -> str:
        """Hold `span`; when it is a root, return its task rendered (and forget its spans)."""
        context = span.context
        if context is None:
            return ""
        trace = self._held.setdefault(context.trace_id, {})
        trace[context.span_id] = span
        if self._is_root(span):
            spans = _pop_subtree(trace, context.span_id)
            if not trace:
                del self._held[context.trace_id]
            self._printed[context.span_id] = None
            if len(self._printed) > _PRINTED_ROOTS:
                self._printed.popitem(last=False)
            return self._render(span, spans)
        if len(self._held) > self._max_held:
            _, oldest = self._held.popitem(last=False)
            return self._render_leftovers(oldest)
        return ""

    def _is_root(self, span: ReadableSpan) -> bool:
        attributes = span.attributes or {}
        return (
            span.parent is None
            or sc.COPILOT_END_REASON in attributes
            or sc.COPILOT_TASK_OUTCOME in attributes
            or span.parent.span_id in self._printed
        )  # late: its task was printed

    def _render_leftovers(self, trace: dict[int, ReadableSpan]) -> str:
        tops = [s for s in trace.values() if s.parent is None or s.parent.span_id not in trace]
        return "".join(
            self._render(top, _pop_subtree(dict(trace), _span_id(top)))
            for top in sorted(tops, key=_start)
        )

    # --- rendering -------------------------------------------------------------------------

    def _render(self, top: ReadableSpan, spans: list[ReadableSpan]) -> str:
        line = self._summary(top, spans)
        if self.format != "tree":
            return line + "\n"
        children: dict[int, list[ReadableSpan]] = {}
        for span in spans:
            if span.parent is not None and span is not top:
                children.setdefault(span.parent.span_id, []).append(span)
        lines = [line]
        self._tree(top, children, "", lines)
        return "\n".join(lines) + "\n"

    def _summary(self, top: ReadableSpan, spans: list[ReadableSpan]) -> str:
        """time  session  outcome  turns  tools (failed)  tokens  model  duration."""
        attributes = top.attributes or {}
        session = next(
            (
                str(s.attributes[sc.GEN_AI_CONVERSATION_ID])
                for s in [top, *spans]
                if s.attributes and sc.GEN_AI_CONVERSATION_ID in s.attributes
            ),
            "",
        )
        outcome = attributes.get(sc.COPILOT_TASK_OUTCOME)
        if outcome is None:
            late = top.parent is not None and top.parent.span_id in self._printed
            outcome = "continued" if late else "unfinished"
        outcome = shown(outcome)
        turns = attributes.get(sc.COPILOT_TURNS)
        if not isinstance(turns, int):
            turns = sum(1 for s in spans if s.name.startswith("turn "))
        tools = [s for s in spans if _operation(s) == sc.OP_EXECUTE_TOOL]
        failed = sum(1 for s in tools if s.status.status_code is StatusCode.ERROR)
        agents = sum(1 for s in spans if s is not top and _operation(s) == sc.OP_INVOKE_AGENT)
        chats = [s for s in spans if _operation(s) == sc.OP_CHAT]
        tokens_in = sum(_int(s, sc.GEN_AI_USAGE_INPUT_TOKENS) for s in chats)
        tokens_out = sum(_int(s, sc.GEN_AI_USAGE_OUTPUT_TOKENS) for s in chats)
        model = attributes.get(sc.GEN_AI_REQUEST_MODEL) or _most_common(
            s.attributes.get(sc.GEN_AI_REQUEST_MODEL) for s in chats if s.attributes
        )
        error_type = attributes.get(sc.ERROR_TYPE)
        if error_type and error_type != outcome:  # why it failed: "error (rate_limited)"
            outcome += f" ({shown(error_type)})"
        if attributes.get(sc.COPILOT_INCOMPLETE):
            outcome += " incomplete"
        parts = [
            self._paint(_DIM, _clock(_start(top))),
            shown(session[:8]).ljust(8),
            self._paint(_OUTCOME_COLORS.get(outcome.split()[0], _DIM), outcome.ljust(10)),
            _plural(turns, "turn").ljust(8),
        ]
        tool_text = _plural(len(tools), "tool")
        if failed:
            tool_text += " " + self._paint(_RED, f"({failed} failed)")
        parts.append(tool_text)
        if agents:
            parts.append(_plural(agents, "sub-agent"))
        if chats:
            parts.append(f"{compact_count(tokens_in)} in / {compact_count(tokens_out)} out tokens")
        if model:
            parts.append(shown(model))
        parts.append(_duration(_end(top) - _start(top)))
        return "  ".join(parts)

    def _tree(
        self,
        span: ReadableSpan,
        children: dict[int, list[ReadableSpan]],
        prefix: str,
        lines: list[str],
    ) -> None:
        below = sorted(children.get(_span_id(span), []), key=lambda s: (_start(s), s.name))
        for index, child in enumerate(below):
            last = index == len(below) - 1
            if self._unicode:
                branch, stem = ("└─ ", "   ") if last else ("├─ ", "│  ")
            else:
                branch, stem = ("`- ", "   ") if last else ("+- ", "|  ")
            lines.append(f"{prefix}{branch}{self._node(child)}")
            self._tree(child, children, prefix + stem, lines)

    def _node(self, span: ReadableSpan) -> str:
        """One span of the tree: name, duration, status and what matters for its kind."""
        attributes = span.attributes or {}
        parts = [shown(span.name), self._paint(_DIM, _duration(_end(span) - _start(span)))]
        if span.status.status_code is StatusCode.ERROR:
            why = attributes.get(sc.ERROR_TYPE) or span.status.description or ""
            parts.append(self._paint(_RED, f"ERROR {shown(why)}".rstrip()))
        if _operation(span) == sc.OP_CHAT and sc.GEN_AI_USAGE_INPUT_TOKENS in attributes:
            parts.append(
                f"{compact_count(_int(span, sc.GEN_AI_USAGE_INPUT_TOKENS))} in / "
                f"{compact_count(_int(span, sc.GEN_AI_USAGE_OUTPUT_TOKENS))} out tokens"
            )
        if sc.COPILOT_TOOL_EXIT_CODE in attributes:
            parts.append(f"exit {shown(attributes[sc.COPILOT_TOOL_EXIT_CODE])}")
        if attributes.get(sc.COPILOT_INCOMPLETE):
            parts.append("incomplete")
        return "  ".join(parts)

    def _paint(self, color: str, text: str) -> str:
        return f"{color}{text}{_RESET}" if self._color else text

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


def shown(value: object) -> str:
    """A value from a log as text fit for one line of a terminal: characters that are not
    printable (controls, the escape that starts a terminal sequence, newlines, bidirectional
    overrides, lone surrogates: everything `str.isprintable` refuses) escaped as Python
    writes them, so that none can act on the terminal or start a line of its own."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


def _pop_subtree(trace: dict[int, ReadableSpan], top: int) -> list[ReadableSpan]:
    """Remove `top` and every span below it from `trace`; return them, `top` first."""
    children: dict[int, list[int]] = {}
    for span_id, span in trace.items():
        if span.parent is not None and span_id != top:
            children.setdefault(span.parent.span_id, []).append(span_id)
    out: list[ReadableSpan] = []
    stack = [top]
    while stack:
        span_id = stack.pop()
        if span_id in trace:
            out.append(trace.pop(span_id))
            stack.extend(children.get(span_id, ()))
    return out


def _span_id(span: ReadableSpan) -> int:
    return span.context.span_id if span.context is not None else 0


def _start(span: ReadableSpan) -> int:
    return span.start_time or 0


def _end(span: ReadableSpan) -> int:
    return span.end_time or _start(span)


def _operation(span: ReadableSpan) -> object:
    return (span.attributes or {}).get(sc.GEN_AI_OPERATION_NAME)


def _int(span: ReadableSpan, key: str) -> int:
    value = (span.attributes or {}).get(key)
    return value if isinstance(value, int) else 0


def _most_common(values: Iterable[object]) -> str | None:
    counts = Counter(v for v in values if isinstance(v, str) and v)
    return counts.most_common(1)[0][0] if counts else None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _duration(ns: int) -> str:
    seconds = max(ns, 0) / 1e9
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m {int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m"


def _clock(ns: int) -> str:
    """Local time of day; with the date when it is not today (a replay of old logs)."""
    moment = datetime.fromtimestamp(ns / 1e9)
    if moment.date() == datetime.now().date():
        return moment.strftime("%H:%M:%S")
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
