"""What the console prints of one task, for people: its summary line and its span tree.

A summary line has fixed columns, so that lines read as a table however they come:

    04:58  17de93f3  done        4 tools, 1 failed  3.7k/168 tok   0.7s  gpt-4.1

time (local; a line of its own says the date when it changes), session (its first 8
characters), how the task ended (`_words`: done, completed, failed, error, aborted,
unfinished, continued), tool calls and how many failed, tokens in/out ("n/a" when the CLI
wrote no usage records: unknown is not zero), duration; then why it failed and its sub-agents
when it has any, the model, and the fullest its context window got (`ctx 87% of 128k`, when its
calls said their model's limit; docs/spans.md "Context window"). Up to the duration a line
takes 68 characters; what follows is cut to the terminal's width when it is known (the model
shortened in its middle, then left out; the context is left out first), so that a line never
wraps: 80 columns show the model of a task without sub-agents (up to 10 characters), 100 that
of a task with them, 120 the context too.

Names on a line come from logs another user may write: `shown` escapes what could act on a
terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace.status import StatusCode

from .. import semconv as sc
from .._words import CONTINUED, outcome_word, plural, short_count, shortened

__all__ = ["Painter", "Task", "context_text", "shown", "tree_lines"]

GREEN, RED, YELLOW, DIM, RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[2m", "\x1b[0m"
_COLORS = {"completed": GREEN, "done": GREEN, "failed": RED, "error": RED, "aborted": YELLOW}
#: Widths of the fixed columns: outcome ("unfinished"), tools ("4 tools, 1 failed"), tokens
#: ("457k/8.9k tok"), duration ("17.9s").
_OUTCOME, _TOOLS, _TOKENS, _DURATION = 10, 17, 13, 5
_MIN_MODEL = 5  # a model name is never cut shorter than this ("g...i")

Painter = Callable[[str, str], str]  # (colour, text) -> text, coloured or not


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


@dataclass(frozen=True, slots=True)
class Task:
    """One task (or the late work of one) as its summary line says it."""

    start_ns: int
    end_ns: int
    session: str
    outcome: str  # the word people read
    tools: int
    failed: int
    agents: int
    tokens: tuple[int, int] | None  # in, out; None: unknown (no usage records)
    some_unknown: bool  # some LLM calls had no usage record (the sums are at least these)
    calls: int  # LLM calls
    model: str | None
    why: str | None  # error.type, when it says more than the outcome
    #: the fullest its context window got: (utilization, limit); None when no call said
    context: tuple[float, int] | None = None

    @classmethod
    def of(cls, top: ReadableSpan, spans: Sequence[ReadableSpan], *, late: bool) -> Task:
        """The task of `top` (its root, or its top span when the root never came) and
        `spans` (the whole subtree, `top` included)."""
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
        if outcome is None and late:
            word = CONTINUED.word
        else:
            word = outcome_word(outcome, incomplete=bool(attributes.get(sc.COPILOT_INCOMPLETE)))
        tools = [s for s in spans if _operation(s) == sc.OP_EXECUTE_TOOL]
        chats = [s for s in spans if _operation(s) == sc.OP_CHAT]
        known = [s for s in chats if sc.GEN_AI_USAGE_INPUT_TOKENS in (s.attributes or {})]
        tokens = None
        if known or not chats:
            tokens = (
                sum(_int(s, sc.GEN_AI_USAGE_INPUT_TOKENS) for s in known),
                sum(_int(s, sc.GEN_AI_USAGE_OUTPUT_TOKENS) for s in known),
            )
        error_type = attributes.get(sc.ERROR_TYPE)
        return cls(
            start_ns=_start(top),
            end_ns=_end(top),
            session=session,
            outcome=word,
            tools=len(tools),
            failed=sum(1 for s in tools if s.status.status_code is StatusCode.ERROR),
            agents=sum(1 for s in spans if s is not top and _operation(s) == sc.OP_INVOKE_AGENT),
            tokens=tokens,
            some_unknown=len(known) < len(chats),
            calls=len(chats),
            model=_text(attributes.get(sc.GEN_AI_REQUEST_MODEL))
            or _most_common((s.attributes or {}).get(sc.GEN_AI_REQUEST_MODEL) for s in chats),
            why=str(error_type) if error_type and error_type != outcome else None,
            context=_peak(attributes, chats),
        )

    def line(self, paint: Painter, width: int | None = None) -> str:
        """The summary line, at most `width` characters when given: after the fixed columns,
        why it failed, the sub-agents and the model (shortened to fit), as far as they fit."""
        tools = plural(self.tools, "tool")
        failed = f", {self.failed} failed" if self.failed else ""
        fixed = "  ".join(
            [
                paint(DIM, _clock(self.start_ns)),
                shown(self.session[:8]).ljust(8),
                paint(_COLORS.get(self.outcome, DIM), self.outcome.ljust(_OUTCOME)),
                tools + paint(RED, failed) + " " * (_TOOLS - len(tools) - len(failed)),
                self._tokens().ljust(_TOKENS),
                duration(self.end_ns - self.start_ns).rjust(_DURATION),
            ]
        )
        room = None if width is None else width - _fixed_width()
        tail = []
        for part, cut in (
            (f"({shown(self.why)})" if self.why else "", False),
            (plural(self.agents, "sub-agent") if self.agents else "", False),
            (shown(self.model) if self.model else "", True),
            (context_text(*self.context) if self.context else "", False),
        ):
            if not part:
                continue
            if room is not None:
                if len(part) + 2 > room and cut and room - 2 >= _MIN_MODEL:
                    part = shortened(part, room - 2)
                if len(part) + 2 > room:
                    break
                room -= len(part) + 2
            tail.append(part)
        return "  ".join([fixed, *tail])

    def _tokens(self) -> str:
        if self.tokens is None:
            return "n/a tok"
        if not self.calls:
            return ""
        more = "+" if self.some_unknown else ""  # at least these: some calls are unknown
        return f"{short_count(self.tokens[0])}/{short_count(self.tokens[1])}{more} tok"


def _fixed_width() -> int:
    """The width of a line up to its duration."""
    return 5 + 8 + _OUTCOME + _TOOLS + _TOKENS + _DURATION + 2 * 5


def tree_lines(
    top: ReadableSpan, spans: Sequence[ReadableSpan], *, unicode: bool, paint: Painter
) -> list[str]:
    """The span tree below `top`, a line per span, children in the order they started."""
    children: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        if span.parent is not None and span is not top:
            children.setdefault(span.parent.span_id, []).append(span)
    lines: list[str] = []
    _tree(top, children, "", lines, unicode, paint)
    return lines


def _tree(
    span: ReadableSpan,
    children: dict[int, list[ReadableSpan]],
    prefix: str,
    lines: list[str],
    unicode: bool,
    paint: Painter,
) -> None:
    below = sorted(children.get(span_id(span), []), key=lambda s: (_start(s), s.name))
    for index, child in enumerate(below):
        last = index == len(below) - 1
        if unicode:
            branch, stem = ("└─ ", "   ") if last else ("├─ ", "│  ")
        else:
            branch, stem = ("`- ", "   ") if last else ("+- ", "|  ")
        lines.append(f"{prefix}{branch}{_node(child, paint)}")
        _tree(child, children, prefix + stem, lines, unicode, paint)


def _node(span: ReadableSpan, paint: Painter) -> str:
    """One span of the tree: name, duration, status and what matters for its kind."""
    attributes = span.attributes or {}
    parts = [shown(span.name), paint(DIM, duration(_end(span) - _start(span)))]
    if span.status.status_code is StatusCode.ERROR:
        why = attributes.get(sc.ERROR_TYPE) or span.status.description or ""
        parts.append(paint(RED, f"ERROR {shown(why)}".rstrip()))
    if _operation(span) == sc.OP_CHAT:
        if sc.GEN_AI_USAGE_INPUT_TOKENS in attributes:
            parts.append(
                f"{short_count(_int(span, sc.GEN_AI_USAGE_INPUT_TOKENS))}/"
                f"{short_count(_int(span, sc.GEN_AI_USAGE_OUTPUT_TOKENS))} tok"
            )
        elif attributes.get(sc.COPILOT_USAGE_UNKNOWN):
            parts.append("n/a tok")
        utilization = attributes.get(sc.COPILOT_CONTEXT_UTILIZATION)
        limit = attributes.get(sc.COPILOT_CONTEXT_LIMIT)
        if isinstance(utilization, float) and isinstance(limit, int):
            parts.append(context_text(utilization, limit))
    if sc.COPILOT_TOOL_EXIT_CODE in attributes:
        parts.append(f"exit {shown(attributes[sc.COPILOT_TOOL_EXIT_CODE])}")
    if attributes.get(sc.COPILOT_INCOMPLETE):
        parts.append("unfinished")
    return "  ".join(parts)


def context_text(utilization: float, limit: int) -> str:
    """How full a context window was: `ctx 87% of 128k`."""
    return f"ctx {utilization:.0%} of {short_count(limit)}"


def _peak(
    attributes: Mapping[str, object], chats: Sequence[ReadableSpan]
) -> tuple[float, int] | None:
    """The fullest context of a task: its root's figure (`copilot.task.context.*`), else (a
    task whose root never came) the fullest of its calls; None when none said."""
    peak = attributes.get(sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION)
    limit = attributes.get(sc.COPILOT_TASK_CONTEXT_LIMIT)
    if isinstance(peak, float) and isinstance(limit, int):
        return peak, limit
    best: tuple[float, int] | None = None
    for span in chats:
        values = span.attributes or {}
        utilization = values.get(sc.COPILOT_CONTEXT_UTILIZATION)
        window = values.get(sc.COPILOT_CONTEXT_LIMIT)
        if (
            isinstance(utilization, float)
            and isinstance(window, int)
            and (best is None or utilization > best[0])
        ):
            best = (utilization, window)
    return best


def day_line(ns: int) -> str:
    """The line that says the date, before the first line of a day."""
    return f"-- {datetime.fromtimestamp(ns / 1e9):%Y-%m-%d %a} --"


def day(ns: int) -> str:
    return f"{datetime.fromtimestamp(ns / 1e9):%Y-%m-%d}"


def duration(ns: int) -> str:
    """0.7s, 17.9s, 2m05s, 1h02m: five characters at most below 100 hours."""
    seconds = max(ns, 0) / 1e9
    if seconds < 59.95:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def _clock(ns: int) -> str:
    return f"{datetime.fromtimestamp(ns / 1e9):%H:%M}"


def span_id(span: ReadableSpan) -> int:
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


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _most_common(values: Iterable[object]) -> str | None:
    counts = Counter(v for v in values if isinstance(v, str) and v)
    return counts.most_common(1)[0][0] if counts else None
