"""The `stats` table: sessions as rows that fit the terminal.

Kept apart from the counting (`app/_stats.py`) because what fits a screen is its own problem: the
columns step down, in a fixed order, as the width shrinks (the `stats --help` text says which).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from .._progress import printable, table_width
from .._words import OUTCOMES, UNFINISHED, short_count, shortened
from ._stats import ContextStats, SessionStats

__all__ = ["render_context", "render_table", "table_width", "trouble_notes"]


# --- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Column:
    header: str
    cell: Callable[[SessionStats], str]
    left: bool = False  # text, aligned left; numbers go right
    group: str = ""  # a heading over adjacent columns of the same group
    cut: bool = False  # may be cut ("...") to fit: long model, directory and repository names


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
    """in/out ("2.5k/112"); "n/a" when unknown, "+" after when some calls' are unknown."""
    if not stats.tokens_known:
        return "n/a"
    more = "+" if stats.llm_calls_without_usage else ""
    return f"{short_count(stats.input_tokens)}/{short_count(stats.output_tokens)}{more}"


def _token_count(stats: SessionStats, count: int, exact: bool = False) -> str:
    """A token sum: "n/a" when unknown (no usage records: not 0), with "+" when some calls
    are unknown (the sum is of the others: at least this)."""
    if not stats.tokens_known:
        return "n/a"
    text = f"{count:,}" if exact else short_count(count)
    return text + "+" if stats.llm_calls_without_usage else text


def _per_message(stats: SessionStats) -> str:
    per_message = stats.turns_per_message
    return f"{per_message:.2f}" if per_message is not None else "-"


def _premium(stats: SessionStats) -> str:
    """Premium requests as the CLI's session accounting reports them; "n/a (BYOK)" when every
    call went to a bring-your-own-key provider (whose 0 is not a price), "-" when no
    shutdown said."""
    if stats.premium_requests is None:
        return "n/a (BYOK)" if stats.byok_calls else "-"
    return f"{stats.premium_requests:.2f}".rstrip("0").rstrip(".")


def _lines(stats: SessionStats) -> str:
    return f"+{stats.lines_added}/-{stats.lines_removed}"


#: The words of the tasks that ended well: with a completion signal, or without one (the way
#: of interactive mode, where the CLI does not ask for it).
_ENDED_WELL = ("done", "completed")


def _tasks_ok(stats: SessionStats) -> str:
    words = stats.by_word()
    return f"{sum(words[w] for w in _ENDED_WELL)}/{stats.tasks}"


_SESSION_FULL = _Column("session", lambda s: s.session, left=True)
_SESSION = _Column("session", _short, left=True)
_STARTED = _Column("started", _started(False), left=True)
_DATE = _Column("started", _started(True), left=True)
_MODEL = _Column("model", lambda s: s.model or "", left=True, cut=True)
_DIRECTORY = _Column("directory", lambda s: s.directory or "", left=True, cut=True)
#: owner/name, "-" outside a git checkout (the total has none: blank)
_REPOSITORY = _Column(
    "repository",
    lambda s: "" if s.session == "total" else s.repository or "-",
    left=True,
    cut=True,
)


def _outcome(word: str) -> Callable[[SessionStats], str]:
    return lambda stats: str(stats.by_word()[word])


_OUTCOME_COLUMNS = [
    _Column(word, _outcome(word), group="tasks by outcome")
    for word in (*(o.word for o in OUTCOMES), UNFINISHED.word)
]
_MESSAGES = _Column("messages", lambda s: str(s.user_messages))
_TURNS = _Column("turns", lambda s: str(s.turns))
_PER_MESSAGE = _Column("turns/msg", _per_message)
_TOOLS = _Column("tools", lambda s: str(s.tool_calls))
_TOOL_ERRORS = _Column("tool err", lambda s: str(s.tool_failures))
#: What the session cost and changed (its shutdowns' accounting): dropped in the narrowest layout.
_COST = [_Column("premium req", _premium), _Column("lines +/-", _lines)]

#: Where a session ran and what it did: the same in the three widest layouts (the fourth
#: drops the repository, for a terminal that has room for the cost but not for it).
_WHERE = [_STARTED, _MODEL, _DIRECTORY, _REPOSITORY]
_WORK = [_MESSAGES, _TURNS, _PER_MESSAGE, _TOOLS, _TOOL_ERRORS]
#: From the widest to the narrowest; the first that fits is printed (help of `stats` says so).
_LAYOUTS: list[list[_Column]] = [
    [
        _SESSION_FULL,
        *_WHERE,
        *_WORK,
        *_OUTCOME_COLUMNS,
        _Column("in tokens", lambda s: _token_count(s, s.input_tokens, exact=True)),
        _Column("out tokens", lambda s: _token_count(s, s.output_tokens, exact=True)),
        *_COST,
    ],
    [
        _SESSION,
        *_WHERE,
        *_WORK,
        *_OUTCOME_COLUMNS,
        _Column("in tok", lambda s: _token_count(s, s.input_tokens)),
        _Column("out tok", lambda s: _token_count(s, s.output_tokens)),
        *_COST,
    ],
    [
        _SESSION,
        *_WHERE,
        *_WORK,
        _Column("ok/tasks", _tasks_ok),
        _Column("tokens in/out", _tokens),
        *_COST,
    ],
    [
        _SESSION,
        *(c for c in _WHERE if c is not _REPOSITORY),
        *_WORK,
        _Column("ok/tasks", _tasks_ok),
        _Column("tokens in/out", _tokens),
        *_COST,
    ],
    [
        _SESSION,
        _DATE,
        _MODEL,
        _Column("dir", _DIRECTORY.cell, left=True, cut=True),
        _TURNS,
        _Column("t/msg", _per_message),
        _TOOLS,
        _Column("err", lambda s: str(s.tool_failures)),
        _Column("ok/tasks", _tasks_ok),
        _Column("tokens", _tokens),
    ],
]
#: Spaces between columns; the narrowest layout's one space lets it keep turns per message
#: at 80 columns (its numbers are right-aligned under wider headers: they stay apart).
_GAP = 2
_NARROW_GAP = 1
_MIN_CUT = 5  # a model or directory name is never cut shorter than this


def render_table(
    sessions: Sequence[SessionStats], total: SessionStats, width: int | None = None
) -> str:
    """A plain-text table: one row per session, then the total; at most `width` wide.

    `turns` counts every turn (sub-agents' too); `turns/msg` is main-agent turns per task, as
    the `copilot.turns_per_message` metric; `tools`/`tool err` are tool calls and those that
    failed; the six outcome columns are tasks by how they ended, in the words of `_words`
    (done, completed, failed, error, aborted, unfinished), and `ok/tasks` those that ended
    well (done or completed) of all; tokens are "n/a" when unknown (a CLI that writes no
    usage records), with "+" when some calls' are; `premium req` and `lines +/-` are
    what the session's shutdowns say it cost and changed (once across resumes; "n/a (BYOK)"
    for a session of bring-your-own-key calls only); `repository` is owner/name ("-" outside a
    git checkout). With no `width`, every column; when narrower, the first of `_LAYOUTS` that
    fits: the full session id becomes its first 8 characters and tokens are shortened (12.3k),
    then the outcomes become ended well/all ("ok/tasks"), then the repository goes, then
    messages, cost and lines go, the start shows its date only and one space parts the
    columns (turns per message stays, as `t/msg`);
    then long model and directory names are shortened (their first words to their first
    letter, `g-4.1-mini`; never so that two different names look the same while another
    column can give way), and at last the lines.
    """
    notes = trouble_notes(sessions, total)
    for columns in _LAYOUTS:
        gap = _NARROW_GAP if columns is _LAYOUTS[-1] else _GAP
        lines = _layout(columns, sessions, total, None, gap)
        if width is None or max(map(len, lines)) <= width:
            return "\n".join([*lines, *notes])
    narrowest = _layout(_LAYOUTS[-1], sessions, total, width, _NARROW_GAP)
    return "\n".join([*(line[:width] for line in narrowest), *notes])


#: Sessions named under the table with their trouble signals; --json has every one.
_TROUBLE_NOTES = 10


def trouble_notes(sessions: Sequence[SessionStats], total: SessionStats) -> list[str]:
    """The lines under the table about the tasks that raised a trouble signal: how many, of
    which signals, and in which sessions (at most `_TROUBLE_NOTES`). A report of old sessions
    says this once, here, where run warns of each as it happens."""
    if not total.trouble:
        return []
    troubled = [s for s in sessions if s.trouble]
    raised = short_count(sum(total.trouble.values()))
    lines = [
        "",
        f"trouble signals (copilot.task.trouble): {raised} raised, in {len(troubled)} of "
        f"{len(sessions)} sessions",
    ]
    for stats in troubled[:_TROUBLE_NOTES]:
        said = ", ".join(f"{n} {c}" if c > 1 else n for n, c in sorted(stats.trouble.items()))
        lines.append(f"  {_short(stats)}  {printable(said)}")
    if len(troubled) > _TROUBLE_NOTES:
        lines.append(f"  and {len(troubled) - _TROUBLE_NOTES} more (--json has every one)")
    return lines


def _distinct(cells: Sequence[str], size: int) -> bool:
    """Do different cells stay different when shortened to `size`?"""
    values = set(cells)
    return len({shortened(cell, size) for cell in values}) == len(values)


def _layout(
    columns: Sequence[_Column],
    sessions: Sequence[SessionStats],
    total: SessionStats,
    width: int | None,
    gap: int = _GAP,
) -> list[str]:
    # cells come from the logs (a session's directory, model, repository): escaped, so that
    # one cannot clear the screen or break a row
    rows = [[printable(c.cell(s)) for c in columns] for s in sessions]
    last = [printable(c.cell(total)) for c in columns]
    widths = [
        max(len(c.header), *(len(r[i]) for r in [*rows, last])) for i, c in enumerate(columns)
    ]
    if width is not None:  # cut the cuttable columns, the widest first, until it fits
        while sum(widths) + gap * (len(widths) - 1) > width:
            cuttable = [i for i, c in enumerate(columns) if c.cut and widths[i] > _MIN_CUT]
            # a column whose names would no longer be told apart gives way last
            distinct = [i for i in cuttable if _distinct([r[i] for r in rows], widths[i] - 1)]
            if not cuttable:
                break
            widest = max(distinct or cuttable, key=lambda i: widths[i])
            widths[widest] -= 1

    def fit(text: str, size: int) -> str:
        return shortened(text, size)

    def line(cells: Sequence[str]) -> str:
        return (
            (" " * gap)
            .join(
                fit(cell, w).ljust(w) if c.left else fit(cell, w).rjust(w)
                for cell, w, c in zip(cells, widths, columns, strict=True)
            )
            .rstrip()
        )

    groups = []
    for i, column in enumerate(columns):
        if column.group and (i == 0 or columns[i - 1].group != column.group):
            span = [j for j, c in enumerate(columns) if c.group == column.group]
            start = sum(widths[: span[0]]) + gap * span[0]
            size = sum(widths[j] for j in span) + gap * (len(span) - 1)
            groups.append((start, column.group.center(size)))
    heading = ""
    for start, text in groups:
        heading = heading.ljust(start) + text
    rule = (" " * gap).join("-" * w for w in widths)
    out = [line([c.header for c in columns]), rule, *(line(r) for r in rows), rule, line(last)]
    return [heading.rstrip(), *out] if heading.strip() else out


# --- context windows by model ------------------------------------------------------------------


def render_context(context: Mapping[str, ContextStats], width: int | None = None) -> str:
    """How full the context windows got, a row per model: its LLM calls with a prompt limit,
    the utilization half of them, 90% and 99% stayed at or below and the highest (to 1%), its
    tasks and their compactions per task, under a title; at most `width` wide (cut). "" when
    no call said its limit (nothing to show, not a row of zeros)."""
    rows = [
        (model, stats)
        for model, stats in sorted(context.items())
        if stats.calls or stats.compactions
    ]
    if not rows:
        return ""
    header = ("model", "calls", "p50", "p90", "p99", "max", "tasks", "compact/task")
    table: list[tuple[str, ...]] = [header]
    for model, stats in rows:
        table.append(
            (
                printable(model),
                str(stats.calls),
                *(_percent(stats.percentile(q)) for q in (0.5, 0.9, 0.99, 1.0)),
                str(stats.tasks),
                f"{stats.compactions / stats.tasks:.2f}" if stats.tasks else "-",
            )
        )
    sizes = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["context window (LLM calls with a prompt limit), by model"] + [
        "  ".join(
            cell.ljust(size) if i == 0 else cell.rjust(size)
            for i, (cell, size) in enumerate(zip(row, sizes, strict=True))
        ).rstrip()
        for row in table
    ]
    return "\n".join(line if width is None else line[:width] for line in lines)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
