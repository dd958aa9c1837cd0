"""`otel-bridge stats`: the metrics of some logs as a table, for people with no backend yet.

The numbers come from the same observations the assembler makes for the OpenTelemetry metrics
(a `MetricsRecorder` that keeps them in memory, per session), so the table and a dashboard can
never disagree about what a task or a tool failure is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from ._records import AttributeValue

__all__ = ["SessionStats", "StatsCollector", "render_table"]

OUTCOMES = ("completed", "failed", "error", "aborted", "no_signal")
_COUNTED = frozenset({"copilot.user_messages", "copilot.turns", "copilot.tasks",
                      "copilot.tool.calls", "copilot.turns_per_message",
                      "gen_ai.client.token.usage"})


@dataclass
class SessionStats:
    """What one session did (or all of them, summed)."""

    session: str
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
        for name in ("user_messages", "continuations", "tasks", "task_turns", "turns",
                     "tool_calls", "tool_failures", "llm_calls", "input_tokens",
                     "output_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for outcome, count in other.outcomes.items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + count

    def to_dict(self) -> dict[str, object]:
        """A JSON-friendly view, with the derived turns per message."""
        return {**asdict(self), "turns_per_message": self.turns_per_message}


class StatsCollector:
    """A `MetricsRecorder` that sums, per session, what the table shows."""

    def __init__(self) -> None:
        self.sessions: dict[str, SessionStats] = {}

    def _of(self, session_id: str) -> SessionStats:
        stats = self.sessions.get(session_id)
        if stats is None:
            stats = self.sessions[session_id] = SessionStats(session_id)
        return stats

    def add(self, name: str, value: float, attributes: Mapping[str, AttributeValue],
            session_id: str) -> None:
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

    def record(self, name: str, value: float, attributes: Mapping[str, AttributeValue],
               session_id: str) -> None:
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


_COLUMNS = ("session", "messages", "turns", "turns/msg", "tools", "tool err", "completed",
            "failed", "error", "aborted", "no signal", "in tokens", "out tokens")


def _row(stats: SessionStats) -> list[str]:
    per_message = stats.turns_per_message
    return [stats.session, str(stats.user_messages), str(stats.turns),
            f"{per_message:.2f}" if per_message is not None else "-",
            str(stats.tool_calls), str(stats.tool_failures),
            *(str(stats.outcomes.get(o, 0)) for o in OUTCOMES),
            f"{stats.input_tokens:,}", f"{stats.output_tokens:,}"]


def render_table(sessions: Sequence[SessionStats], total: SessionStats) -> str:
    """A plain-text table: one row per session, then the total.

    `turns` counts every turn (sub-agents' too); `turns/msg` is main-agent turns per task, as
    the `copilot.turns_per_message` metric; `tools`/`failed` are tool calls and those that
    failed; the five outcome columns are tasks by outcome.
    """
    rows = [_row(s) for s in sessions] + [_row(total)]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(_COLUMNS)]
    group = " " * (sum(widths[:6]) + 2 * 6) + "tasks by outcome".center(
        sum(widths[6:11]) + 2 * 4)

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    rule = "  ".join("-" * w for w in widths)
    body = [line(r) for r in rows[:-1]]
    return "\n".join([group.rstrip(), line(_COLUMNS), rule, *body, rule, line(rows[-1])])
