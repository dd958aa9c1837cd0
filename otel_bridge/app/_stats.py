"""`otel-bridge stats`: the metrics of some logs as a table, for people with no backend yet.

The numbers come from the same observations the assembler makes for the OpenTelemetry metrics
(a `MetricsRecorder` that keeps them in memory, per session), so the table and a dashboard can
never disagree about what a task or a tool failure is. What tells sessions apart for a person
(when it started, the model, the directory and repository it ran in) is not a metric:
`StatsAssembler` notes it from the events on their way through, and so it notes what no metric
says: which tasks ended unseen (`copilot.incomplete`: their outcome is `no_signal` like a
task that ended normally, but the table calls them unfinished) and which LLM calls had no usage
record (CLIs before 1.0.102 write none: their tokens are unknown, not 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from .. import semconv as sc
from .._records import AttributeValue, SpanRecord
from .._words import OUTCOMES as WORD_OUTCOMES
from .._words import UNFINISHED
from ..assembler import Assembler, AssemblerConfig
from ..decode._events import Event, parse_timestamp_ns
from ..processors import Scrubber, ScrubberConfig

__all__ = ["OUTCOMES", "ContextStats", "SessionStats", "StatsAssembler", "StatsCollector"]

#: The copilot.task.outcome values, as the metric's labels (the keys of `outcomes`).
OUTCOMES = ("completed", "failed", "error", "aborted", "no_signal")
DONE = next(o.word for o in WORD_OUTCOMES if o.value == sc.OUTCOME_NO_SIGNAL)
_COUNTED = frozenset(
    {
        sc.METRIC_USER_MESSAGES,
        sc.METRIC_TURNS,
        sc.METRIC_TASKS,
        sc.METRIC_TOOL_CALLS,
        sc.METRIC_TURNS_PER_MESSAGE,
        sc.METRIC_INFERENCE_INPUT_TOKENS,
        sc.METRIC_INFERENCE_OUTPUT_TOKENS,
        sc.METRIC_SESSION_PREMIUM_REQUESTS,
        sc.METRIC_CODE_LINES,
        sc.METRIC_CONTEXT_UTILIZATION,
        sc.METRIC_TASK_TROUBLE,
    }
)


@dataclass
class SessionStats:
    """What one session did (or all of them, summed)."""

    session: str
    started: str | None = None  # ISO 8601, UTC: the session.start (else the first event)
    model: str | None = None  # the main agent's model at the end of the log
    directory: str | None = None  # the working directory, as --paths says to show it
    #: the repository the session ran in (owner/name, from the CLI's context.repository, as
    #: the metrics' vcs_owner_name and vcs_repository_name); None outside a git checkout
    repository: str | None = None
    user_messages: int = 0
    continuations: int = 0
    tasks: int = 0
    task_turns: int = 0  # main-agent turns of the tasks counted in `tasks`
    turns: int = 0  # all turns, sub-agents' included
    tool_calls: int = 0
    tool_failures: int = 0
    llm_calls: int = 0
    #: LLM calls whose tokens are unknown (no usage record: CLI 1.0.81, 1.0.92); the token
    #: sums are of the others, and unknown (None in `to_dict`) when every call is one
    llm_calls_without_usage: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    #: premium requests as the CLI's session accounting (session.shutdown) reports them,
    #: summed over the differences the metric counts; None when no shutdown said (or when
    #: every call went to a bring-your-own-key provider: then `byok_calls` says why)
    premium_requests: float | None = None
    byok_calls: int = 0  # LLM calls to a bring-your-own-key provider (no cost to show)
    lines_added: int = 0  # from the session accounting's codeChanges, counted once
    lines_removed: int = 0
    #: tasks by `copilot.task.outcome`, as the copilot.tasks metric counts them
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    #: of the `no_signal` tasks, those whose end was not seen (the CLI killed or shut down
    #: mid-task, a log that stopped): "unfinished", not "done", for people
    unfinished: int = 0
    #: tasks that raised a trouble signal, by signal (`copilot.task.trouble`: repeated_call,
    #: tool_failures, many_turns...): what run warns of as it happens, which a report of old
    #: sessions shows under its table rather than as log lines
    trouble: dict[str, int] = field(default_factory=dict)

    @property
    def turns_per_message(self) -> float | None:
        """Mean main-agent turns per task, or None without tasks."""
        return self.task_turns / self.tasks if self.tasks else None

    @property
    def tokens_known(self) -> bool:
        """False when there were LLM calls and none said its tokens (no usage records)."""
        return not self.llm_calls or self.llm_calls_without_usage < self.llm_calls

    def by_word(self) -> dict[str, int]:
        """Tasks by the word people read (`_words`: done, completed, failed, error, aborted,
        unfinished)."""
        counts = {o.word: self.outcomes.get(o.value, 0) for o in WORD_OUTCOMES}
        counts[DONE] -= self.unfinished
        counts[UNFINISHED.word] = self.unfinished
        return counts

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
            "llm_calls_without_usage",
            "input_tokens",
            "output_tokens",
            "byok_calls",
            "lines_added",
            "lines_removed",
            "unfinished",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.premium_requests is not None:
            self.premium_requests = (self.premium_requests or 0.0) + other.premium_requests
        for outcome, count in other.outcomes.items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + count
        for signal, count in other.trouble.items():
            self.trouble[signal] = self.trouble.get(signal, 0) + count

    def to_dict(self) -> dict[str, object]:
        """A JSON-friendly view, with the derived turns per message; tokens null when unknown
        (`tokens_known`): a CLI that writes no usage records did not use 0 tokens."""
        view: dict[str, object] = {**asdict(self), "turns_per_message": self.turns_per_message}
        if not self.tokens_known:
            view["input_tokens"] = view["output_tokens"] = None
        return view


@dataclass
class ContextStats:
    """How full the context windows of one model's LLM calls got (`copilot.context.utilization`,
    counted in steps of 1%, so that a month of calls takes 101 numbers) and how often its
    tasks compacted (`copilot.task.compactions` of their roots, by the model on the root)."""

    bins: list[int] = field(default_factory=lambda: [0] * 101)
    tasks: int = 0
    compactions: int = 0

    @property
    def calls(self) -> int:
        return sum(self.bins)

    def add(self, utilization: float) -> None:
        self.bins[min(max(round(utilization * 100), 0), 100)] += 1

    def percentile(self, q: float) -> float | None:
        """The utilization `q` (0 to 1) of the calls are at or below, to 1%; None without
        calls."""
        calls = self.calls
        if not calls:
            return None
        rank = max(1, math.ceil(round(q * calls, 9)))  # the nearest rank (0.9 * 10 is 9)
        seen = 0
        for percent, count in enumerate(self.bins):
            seen += count
            if seen >= rank:
                return percent / 100
        return 1.0  # not reached: the bins hold every call

    def to_dict(self) -> dict[str, object]:
        return {
            "calls": self.calls,
            "p50": self.percentile(0.5),
            "p90": self.percentile(0.9),
            "p99": self.percentile(0.99),
            "max": self.percentile(1.0),
            "tasks": self.tasks,
            "compactions": self.compactions,
            "compactions_per_task": self.compactions / self.tasks if self.tasks else None,
        }


class StatsCollector:
    """A `MetricsRecorder` that sums, per session, what the table shows.

    Args:
        paths: how to show working directories, as `--paths`: "keep" the whole path, its
            "basename", or a "hash" (the one spans carry with `--paths hash`). Secrets in them
            are redacted either way.
    """

    def __init__(self, paths: str = "basename") -> None:
        self.sessions: dict[str, SessionStats] = {}
        #: context-window pressure by model (`gen_ai.request.model`), all sessions together
        self.context: dict[str, ContextStats] = {}
        self._scrubber = Scrubber(ScrubberConfig(paths=paths))

    def describe(
        self,
        session_id: str,
        *,
        started_ns: int | None = None,
        model: str | None = None,
        cwd: str | None = None,
        repository: str | None = None,
    ) -> None:
        """Note what a session is: its first start and directory stay, the model and the
        repository follow (a session moved to another checkout is shown in the last one)."""
        stats = self._of(session_id)
        if started_ns is not None and stats.started is None:
            moment = datetime.fromtimestamp(started_ns / 1e9, tz=timezone.utc)
            stats.started = moment.isoformat(timespec="milliseconds")
        if model:
            stats.model = model
        if cwd and stats.directory is None:
            stats.directory = self._scrubber.path(cwd)
        if repository:
            stats.repository = self._scrubber.text(repository)

    def count_llm_call(self, session_id: str) -> None:
        """One LLM call whose tokens are unknown (no usage record)."""
        stats = self._of(session_id)
        stats.llm_calls += 1
        stats.llm_calls_without_usage += 1

    def count_unfinished(self, session_id: str) -> None:
        """One task whose end was not seen (counted as `no_signal` by the metric)."""
        self._of(session_id).unfinished += 1

    def count_byok_call(self, session_id: str) -> None:
        """One LLM call to a bring-your-own-key provider: its cost of 0 is not a price."""
        self._of(session_id).byok_calls += 1

    def count_task_context(self, model: str, compactions: int) -> None:
        """One task of `model` that compacted its context `compactions` times."""
        context = self.context.setdefault(model, ContextStats())
        context.tasks += 1
        context.compactions += compactions

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
        if name == sc.METRIC_SESSION_PREMIUM_REQUESTS:
            stats.premium_requests = (stats.premium_requests or 0.0) + value
            return
        count = int(value)
        if name == sc.METRIC_CODE_LINES:
            if attributes.get(sc.COPILOT_CHANGE) == "removed":
                stats.lines_removed += count
            else:
                stats.lines_added += count
        elif name == sc.METRIC_TASK_TROUBLE:
            signal = str(attributes.get(sc.COPILOT_TROUBLE_SIGNAL))
            stats.trouble[signal] = stats.trouble.get(signal, 0) + count
        elif name == sc.METRIC_USER_MESSAGES:
            if attributes.get(sc.COPILOT_CONTINUATION):
                stats.continuations += count
            else:
                stats.user_messages += count
        elif name == sc.METRIC_TURNS:
            stats.turns += count
        elif name == sc.METRIC_TASKS:
            outcome = str(attributes.get(sc.COPILOT_TASK_OUTCOME, "no_signal"))
            stats.tasks += count
            stats.outcomes[outcome] = stats.outcomes.get(outcome, 0) + count
        elif name == sc.METRIC_TOOL_CALLS:
            stats.tool_calls += count
            if attributes.get(sc.COPILOT_TOOL_OUTCOME) == "error":
                stats.tool_failures += count

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        if name not in _COUNTED:
            return
        if name == sc.METRIC_CONTEXT_UTILIZATION:
            model = str(attributes.get(sc.GEN_AI_REQUEST_MODEL, sc.UNKNOWN))
            self.context.setdefault(model, ContextStats()).add(value)
            return
        stats = self._of(session_id)
        if name == sc.METRIC_TURNS_PER_MESSAGE:
            stats.task_turns += int(value)
        elif name == sc.METRIC_INFERENCE_INPUT_TOKENS:
            stats.input_tokens += int(value)
            stats.llm_calls += 1
        elif name == sc.METRIC_INFERENCE_OUTPUT_TOKENS:
            stats.output_tokens += int(value)

    def total(self) -> SessionStats:
        """All sessions summed."""
        total = SessionStats("total")
        for stats in self.sessions.values():
            total.merge(stats)
        return total


class StatsAssembler(Assembler):
    """An assembler that also tells `collector` when each session started, its model,
    directory and repository: from `session.start` (`startTime`, `context.cwd`;
    `session.resume` for logs that lost it), the main agent's model and the session's
    repository (`copilot.repository`, owner/name) as the assembler follows them."""

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
        repository = session.facts.attribution.get(sc.COPILOT_REPOSITORY)
        self._collector.describe(
            session.session_id,
            started_ns=started,
            model=session.model,
            cwd=cwd,
            repository=repository if isinstance(repository, str) else None,
        )
        self._note_spans(records)
        return records

    def end_stream(self, stream: str) -> list[SpanRecord]:
        records = super().end_stream(stream)
        self._note_spans(records)
        return records

    def close_all(self) -> list[SpanRecord]:
        records = super().close_all()
        self._note_spans(records)
        return records

    def _note_spans(self, records: Iterable[SpanRecord]) -> None:
        """LLM calls of CLIs that write no usage records (< 1.0.102) have no token metric to be
        counted from: their chat spans (`copilot.usage.unknown`) are counted instead. Calls to
        a bring-your-own-key provider (`copilot.usage.byok`) are noted too: a session of those
        only shows no cost, not a cost of 0. And tasks whose end was not seen (their root
        span is `copilot.incomplete`), which the metric counts as `no_signal`; and each task's
        compactions, by its model."""
        for record in records:
            attributes = record.attributes
            if sc.COPILOT_TASK_OUTCOME in attributes:
                model = attributes.get(sc.GEN_AI_REQUEST_MODEL)
                compactions = attributes.get(sc.COPILOT_TASK_COMPACTIONS)
                self._collector.count_task_context(
                    model if isinstance(model, str) else sc.UNKNOWN,
                    compactions if isinstance(compactions, int) else 0,
                )
            if (
                attributes.get(sc.COPILOT_INCOMPLETE) is True
                and attributes.get(sc.COPILOT_TASK_OUTCOME) == sc.OUTCOME_NO_SIGNAL
            ):
                self._collector.count_unfinished(str(attributes.get(sc.GEN_AI_CONVERSATION_ID)))
            if attributes.get(sc.COPILOT_USAGE_UNKNOWN) is True:
                session_id = attributes.get(sc.GEN_AI_CONVERSATION_ID)
                self._collector.count_llm_call(str(session_id))
            elif (
                attributes.get(sc.COPILOT_USAGE_BYOK) is True
                and attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT
            ):
                session_id = attributes.get(sc.GEN_AI_CONVERSATION_ID)
                self._collector.count_byok_call(str(session_id))


def _start_time(event: Event) -> int:
    text = event.data.get("startTime")
    if isinstance(text, str):
        try:
            return parse_timestamp_ns(text)
        except ValueError:
            pass
    return event.timestamp_ns
