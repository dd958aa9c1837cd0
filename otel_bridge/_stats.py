"""`otel-bridge stats`: the metrics of some logs as a table, for people with no backend yet.

The numbers come from the same observations the assembler makes for the OpenTelemetry metrics
(a `MetricsRecorder` that keeps them in memory, per session), so the table and a dashboard can
never disagree about what a task or a tool failure is. What tells sessions apart for a person
(when it started, the model, the directory it ran in) is not a metric: `StatsAssembler` notes
it from the events on their way through.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import IO

from . import semconv as sc
from ._events import Event, parse_timestamp_ns
from ._progress import compact_count
from ._records import AttributeValue, SpanRecord
from .assembler import Assembler, AssemblerConfig
from .processors import Scrubber, ScrubberConfig

__all__ = ["SessionStats", "StatsAssembler", "StatsCollector", "render_table", "table_width"]

OUTCOMES = ("completed", "failed", "error", "aborted", "no_signal")
_COUNTED = frozenset(
    {
        "copilot.user_messages",
        "copilot.turns",
        "copilot.tasks",
        "copilot.tool.calls",
        "copilot.turns_per_message",
        "gen_ai.client.token.usage",
    }
)


@dataclass
class SessionStats:
    """What one session did (or all of them, summed)."""

    session: str
    started: str | None = None  # ISO 8601, UTC: the session.start (else the first event)
    model: str | None = None  # the main agent's model at the end of the log
    directory: str | None = None  # the working directory, as --paths says to show it
    user_messages: int = 0
    continuations: int = 0
    tasks: int = 0
    task_turns: int = 0  # main-agent turns of the tasks counted in `tasks`
    turns: int = 0  # all turns, sub-agents' included
    tool_calls: int = 0
    tool_failures: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))

    @property
    def turns_per_message(self) -> float | None:
        """Mean main-agent turns per task, or None without tasks."""
        return self.task_turns / self.tasks if self.tasks else None

    def merge(self, other: SessionStats) -> None:
        """Add another session's numbers to these."""
        for name in (
            "user_messages",
            "continuations",
            "tasks",
            "task_turns",
            "turns",
            "tool_calls",
            "tool_failures",
            "llm_calls",
            "input_tokens",
            "output_tokens",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for outcome, count in other.outcomes.items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + count

    def to_dict(self) -> dict[str, object]:
        """A JSON-friendly view, with the derived turns per message."""
        return {**asdict(self), "turns_per_message": self.turns_per_message}


class StatsCollector:
    """A `MetricsRecorder` that sums, per session, what the table shows.

    Args:
        paths: how to show working directories, as `--paths`: "keep" the whole path, its
            "basename", or a "hash" (the one spans carry with `--paths hash`). Secrets in them
            are redacted either way.
    """

    def __init__(self, paths: str = "basename") -> None:
        self.sessions: dict[str, SessionStats] = {}
        self._scrubber = Scrubber(ScrubberConfig(paths=paths))

    def describe(
        self,
        session_id: str,
        *,
        started_ns: int | None = None,
        model: str | None = None,
        cwd: str | None = None,
    ) -> None:
        """Note what a session is: its first start and directory stay, the model follows."""
        stats = self._of(session_id)
        if started_ns is not None and stats.started is None:
            moment = datetime.fromtimestamp(started_ns / 1e9, tz=timezone.utc)
            stats.started = moment.isoformat(timespec="milliseconds")
        if model:
            stats.model = model
        if cwd and stats.directory is None:
            stats.directory = self._scrubber.text(cwd)

    def count_llm_call(self, session_id: str) -> None:
        """One LLM call whose tokens are unknown (no usage record)."""
        self._of(session_id).llm_calls += 1

    def _of(self, session_id: str) -> SessionStats:
        stats = self.sessions.get(session_id)
        if stats is None:
            stats = self.sessions[session_id] = SessionStats(session_id)
        return stats

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        if name not in _COUNTED:
            return
        stats = self._of(session_id)
        count = int(value)
        if name == "copilot.user_messages":
            if attributes.get("copilot.continuation"):
                stats.continuations += count
            else:
                stats.user_messages += count
        elif name == "copilot.turns":
            stats.turns += count
        elif name == "copilot.tasks":
            outcome = str(attributes.get("copilot.task.outcome", "no_signal"))
            stats.tasks += count
            stats.outcomes[outcome] = stats.outcomes.get(outcome, 0) + count
        elif name == "copilot.tool.calls":
            stats.tool_calls += count
            if attributes.get("copilot.tool.outcome") == "error":
                stats.tool_failures += count

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        if name not in _COUNTED:
            return
        stats = self._of(session_id)
        if name == "copilot.turns_per_message":
            stats.task_turns += int(value)
        elif name == "gen_ai.client.token.usage":
            if attributes.get("gen_ai.token.type") == "input":
                stats.input_tokens += int(value)
                stats.llm_calls += 1
            else:
                stats.output_tokens += int(value)

    def total(self) -> SessionStats:
        """All sessions summed."""
        total = SessionStats("total")
        for stats in self.sessions.values():
            total.merge(stats)
        return total


class StatsAssembler(Assembler):
    """An assembler that also tells `collector` when each session started, its model and
    directory: from `session.start` (`startTime`, `context.cwd`; `session.resume` for logs
    that lost it) and the main agent's model as the assembler follows it."""

    def __init__(self, collector: StatsCollector, config: AssemblerConfig | None = None) -> None:
        super().__init__(config, metrics=collector)
        self._collector = collector

    def feed(
        self, stream: str, events: Iterable[Event], session_id: str | None = None
    ) -> list[SpanRecord]:
        events = list(events)
        records = super().feed(stream, events, session_id)
        if not events:
            return records
        session = self.session(stream)
        started: int | None = events[0].timestamp_ns  # kept only if nothing better comes first
        cwd = None
        for event in events:
            if event.type in ("session.start", "session.resume"):
                context = event.data.get("context")
                if isinstance(context, Mapping) and isinstance(context.get("cwd"), str):
                    cwd = cwd or context["cwd"]
            if event.type == "session.start":
                started = _start_time(event)
                break
        self._collector.describe(
            session.session_id, started_ns=started, model=session.model, cwd=cwd
        )
        self._count_calls_without_usage(records)
        return records

    def end_stream(self, stream: str) -> list[SpanRecord]:
        records = super().end_stream(stream)
        self._count_calls_without_usage(records)
        return records

    def close_all(self) -> list[SpanRecord]:
        records = super().close_all()
        self._count_calls_without_usage(records)
        return records

    def _count_calls_without_usage(self, records: Iterable[SpanRecord]) -> None:
        """LLM calls of CLIs that write no usage records (< 1.0.102) have no token metric to be
        counted from: their chat spans (`copilot.usage.unknown`) are counted instead."""
        for record in records:
            if record.attributes.get(sc.COPILOT_USAGE_UNKNOWN) is True:
                session_id = record.attributes.get(sc.GEN_AI_CONVERSATION_ID)
                self._collector.count_llm_call(str(session_id))


def _start_time(event: Event) -> int:
    text = event.data.get("startTime")
    if isinstance(text, str):
        try:
            return parse_timestamp_ns(text)
        except ValueError:
            pass
    return event.timestamp_ns


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


# --- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Column:
    header: str
    cell: Callable[[SessionStats], str]
    left: bool = False  # text, aligned left; numbers go right
    group: str = ""  # a heading over adjacent columns of the same group
    cut: bool = False  # may be cut ("...") to fit: long model and directory names


def _short(stats: SessionStats) -> str:
    return stats.session if stats.session == "total" else stats.session[:8]


def _started(date_only: bool) -> Callable[[SessionStats], str]:
    def cell(stats: SessionStats) -> str:
        if stats.started is None:
            return ""
        local = datetime.fromisoformat(stats.started).astimezone()  # people read local time
        return local.strftime("%Y-%m-%d" if date_only else "%Y-%m-%d %H:%M")

    return cell


def _tokens(stats: SessionStats) -> str:
    return f"{compact_count(stats.input_tokens)}/{compact_count(stats.output_tokens)}"


def _per_message(stats: SessionStats) -> str:
    per_message = stats.turns_per_message
    return f"{per_message:.2f}" if per_message is not None else "-"


def _tasks_ok(stats: SessionStats) -> str:
    return f"{stats.outcomes.get('completed', 0)}/{stats.tasks}"


_SESSION_FULL = _Column("session", lambda s: s.session, left=True)
_SESSION = _Column("session", _short, left=True)
_STARTED = _Column("started", _started(False), left=True)
_DATE = _Column("started", _started(True), left=True)
_MODEL = _Column("model", lambda s: s.model or "", left=True, cut=True)
_DIRECTORY = _Column("directory", lambda s: s.directory or "", left=True, cut=True)


def _outcome(outcome: str) -> Callable[[SessionStats], str]:
    return lambda stats: str(stats.outcomes.get(outcome, 0))


_OUTCOME_COLUMNS = [
    _Column(o.replace("_", " "), _outcome(o), group="tasks by outcome") for o in OUTCOMES
]
_MESSAGES = _Column("messages", lambda s: str(s.user_messages))
_TURNS = _Column("turns", lambda s: str(s.turns))
_PER_MESSAGE = _Column("turns/msg", _per_message)
_TOOLS = _Column("tools", lambda s: str(s.tool_calls))
_TOOL_ERRORS = _Column("tool err", lambda s: str(s.tool_failures))

#: From the widest to the narrowest; the first that fits is printed (help of `stats` says so).
_LAYOUTS: list[list[_Column]] = [
    [
        _SESSION_FULL,
        _STARTED,
        _MODEL,
        _DIRECTORY,
        _MESSAGES,
        _TURNS,
        _PER_MESSAGE,
        _TOOLS,
        _TOOL_ERRORS,
        *_OUTCOME_COLUMNS,
        _Column("in tokens", lambda s: f"{s.input_tokens:,}"),
        _Column("out tokens", lambda s: f"{s.output_tokens:,}"),
    ],
    [
        _SESSION,
        _STARTED,
        _MODEL,
        _DIRECTORY,
        _MESSAGES,
        _TURNS,
        _PER_MESSAGE,
        _TOOLS,
        _TOOL_ERRORS,
        *_OUTCOME_COLUMNS,
        _Column("in tok", lambda s: compact_count(s.input_tokens)),
        _Column("out tok", lambda s: compact_count(s.output_tokens)),
    ],
    [
        _SESSION,
        _STARTED,
        _MODEL,
        _DIRECTORY,
        _MESSAGES,
        _TURNS,
        _PER_MESSAGE,
        _TOOLS,
        _TOOL_ERRORS,
        _Column("ok/tasks", _tasks_ok),
        _Column("tokens in/out", lambda s: _tokens(s)),
    ],
    [
        _SESSION,
        _DATE,
        _MODEL,
        _Column("dir", _DIRECTORY.cell, left=True, cut=True),
        _TURNS,
        _TOOLS,
        _Column("err", lambda s: str(s.tool_failures)),
        _Column("ok/tasks", _tasks_ok),
        _Column("tokens", lambda s: _tokens(s)),
    ],
]
_MIN_CUT = 5  # a model or directory name is never cut shorter than this


def render_table(
    sessions: Sequence[SessionStats], total: SessionStats, width: int | None = None
) -> str:
    """A plain-text table: one row per session, then the total; at most `width` wide.

    `turns` counts every turn (sub-agents' too); `turns/msg` is main-agent turns per task, as
    the `copilot.turns_per_message` metric; `tools`/`tool err` are tool calls and those that
    failed; the five outcome columns are tasks by outcome. With no `width`, every column; when
    narrower, the first of `_LAYOUTS` that fits: the full session id becomes its first 8
    characters and tokens are shortened (12.3k), then the outcomes become completed/all
    ("ok/tasks"), then messages and turns per message go and the start shows its date only;
    then long model and directory names are cut, and at last the lines.
    """
    for columns in _LAYOUTS:
        lines = _layout(columns, sessions, total, None)
        if width is None or max(map(len, lines)) <= width:
            return "\n".join(lines)
    return "\n".join(line[:width] for line in _layout(_LAYOUTS[-1], sessions, total, width))


def _layout(
    columns: Sequence[_Column],
    sessions: Sequence[SessionStats],
    total: SessionStats,
    width: int | None,
) -> list[str]:
    rows = [[c.cell(s) for c in columns] for s in sessions]
    last = [c.cell(total) for c in columns]
    widths = [
        max(len(c.header), *(len(r[i]) for r in [*rows, last])) for i, c in enumerate(columns)
    ]
    if width is not None:  # cut the cuttable columns, the widest first, until it fits
        while sum(widths) + 2 * (len(widths) - 1) > width:
            cuttable = [i for i, c in enumerate(columns) if c.cut and widths[i] > _MIN_CUT]
            if not cuttable:
                break
            widest = max(cuttable, key=lambda i: widths[i])
            widths[widest] -= 1

    def fit(text: str, size: int) -> str:
        return text if len(text) <= size else text[: size - 3] + "..."

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            fit(cell, w).ljust(w) if c.left else fit(cell, w).rjust(w)
            for cell, w, c in zip(cells, widths, columns, strict=True)
        ).rstrip()

    groups = []
    for i, column in enumerate(columns):
        if column.group and (i == 0 or columns[i - 1].group != column.group):
            span = [j for j, c in enumerate(columns) if c.group == column.group]
            start = sum(widths[: span[0]]) + 2 * span[0]
            size = sum(widths[j] for j in span) + 2 * (len(span) - 1)
            groups.append((start, column.group.center(size)))
    heading = ""
    for start, text in groups:
        heading = heading.ljust(start) + text
    rule = "  ".join("-" * w for w in widths)
    out = [line([c.header for c in columns]), rule, *(line(r) for r in rows), rule, line(last)]
    return [heading.rstrip(), *out] if heading.strip() else out
