"""The open state of one session: what the assembler remembers between events.

Only what is still open is kept: the interaction (a user message and its agent loop) with its
agents, their current turns and running tools, plus a few session facts. Finished spans leave as
`SpanRecord`s and are forgotten. Plain data: the rules that change it are in the lifecycle and the
handlers.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, insort
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import semconv as sc
from .._records import (
    AttributeValue,
    LinkRecord,
    SpanEventRecord,
    SpanKind,
    SpanRecord,
    StatusCode,
)

if TYPE_CHECKING:
    from ._totals import Totals

__all__ = [
    "MAIN",
    "Agent",
    "ContextWatch",
    "Error",
    "Interaction",
    "Message",
    "OpenSpan",
    "RecentSet",
    "SeenSet",
    "SessionFacts",
    "TaskWatch",
    "Tool",
    "Turn",
]

#: Agent key of the main agent (a sub-agent's key is its spawning toolCallId).
MAIN = ""
#: How many recent event ids and span ids a session remembers (at least), to drop redelivered
#: events and to keep a reused tool call id from giving two different spans one id. Kept across
#: segments (a resumed session may be redelivered); 8 bytes an entry (`SeenSet`), at most about
#: 130 KB per kind and session.
MEMORY = 10_000
#: How many entries a `SeenSet` adds to its young array before it joins a generation.
RECENT = 1024

#: A failure to put on a span: (error.type, status message or None).
Error = tuple[str, str | None]


@dataclass(eq=False, slots=True)
class OpenSpan:
    """A span still open: mutable until it is finished into a `SpanRecord`."""

    trace_id: int
    span_id: int
    parent_span_id: int | None
    name: str
    start_ns: int
    kind: SpanKind = SpanKind.INTERNAL
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: list[SpanEventRecord] = field(default_factory=list)
    links: tuple[LinkRecord, ...] = ()
    status: StatusCode = StatusCode.UNSET
    status_message: str | None = None
    #: the span id of the interaction's root it belongs to (its own, for the root): not
    #: exported, it lets the sampler decide per interaction (`SpanRecord.root_span_id`)
    root_span_id: int | None = None

    def fail(self, error_type: str, message: str | None = None) -> None:
        """Status ERROR with `error.type` (and the message, if any)."""
        self.status = StatusCode.ERROR
        self.attributes[sc.ERROR_TYPE] = error_type
        if message:
            self.status_message = message

    def finish(self, end_ns: int) -> SpanRecord:
        """The finished record; it never ends before it starts."""
        return SpanRecord(
            trace_id=self.trace_id,
            span_id=self.span_id,
            parent_span_id=self.parent_span_id,
            name=self.name,
            kind=self.kind,
            start_ns=self.start_ns,
            end_ns=max(end_ns, self.start_ns),
            attributes=dict(self.attributes),
            status=self.status,
            status_message=self.status_message,
            events=tuple(self.events),
            links=self.links,
            root_span_id=self.root_span_id,
        )


@dataclass(eq=False, slots=True)
class Message:
    """An assistant.message, kept until its turn ends in case no usage record names its call."""

    key: str
    timestamp_ns: int
    model: str | None
    api_call_id: str | None


@dataclass(eq=False, slots=True)
class Turn:
    """An agent's open turn (assistant.turn_start .. assistant.turn_end)."""

    span: OpenSpan
    turn_id: str
    asked_for_tools: bool = False
    llm_calls: int = 0
    messages: list[Message] = field(default_factory=list)
    answer: str = ""  # the assistant's text in this turn (its size, hash or text go on the span)
    answer_length: int = 0  # its size, all of it (`answer` keeps a bounded part)
    #: With content capture on, chat spans waiting for their call's message, whose text is their
    #: `output.value` (the log writes a call's usage record before its message): (apiCallId,
    #: record). Released at the message, else when the turn ends.
    held: list[tuple[str | None, SpanRecord]] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Agent:
    """The main agent of an interaction, or one sub-agent, with its current turn."""

    key: str
    span: OpenSpan
    turn: Turn | None = None
    turns: int = 0
    agent_id: str | None = None
    done: bool = False
    #: chat spans of this agent (LLM calls, failed ones included): gen_ai.invoke_agent.
    #: inference_calls sums them over a task
    inference_calls: int = 0
    #: a session.error of this sub-agent (CLI 1.0.81 ends it with subagent.completed after one)
    error: Error | None = None
    #: known by its agentId only: no subagent.started announced it, no parentToolCallId names
    #: its call. Junk, as far as the bridge can tell: its events never change the task's own
    #: spans (`Lifecycle.agent_for`)
    orphan: bool = False

    @property
    def type(self) -> str:
        """`copilot.agent.type`: main or subagent."""
        return sc.AGENT_TYPE_MAIN if self.key == MAIN else sc.AGENT_TYPE_SUBAGENT

    @property
    def current_span(self) -> OpenSpan:
        """Where work of this agent hangs: its open turn, else the agent's own span."""
        return self.turn.span if self.turn is not None else self.span


@dataclass(eq=False, slots=True)
class Tool:
    """A running tool call and the agent that runs it."""

    span: OpenSpan
    agent: Agent
    detached: bool = False  # a shell started with `detach: true`: it outlives the session


@dataclass(eq=False, slots=True)
class TaskWatch:
    """What the signals of a task in trouble count while it runs (`_in_flight`): kept with
    the task, so that a restart, which reads an open task's events again, counts them again."""

    #: calls by hash of (tool name, arguments): never the arguments themselves
    calls: dict[int, int] = field(default_factory=dict)
    repeats: int = 0  # the most calls of one tool with the same arguments
    #: failures in a row, by tool name
    failing: dict[str, int] = field(default_factory=dict)
    failures: int = 0  # the most failures in a row of one tool
    raised: set[str] = field(default_factory=set)  # the signals raised (TROUBLE_*)
    #: the time (ns) of the last event before the task was last found stalled: the stall
    #: lasts while that is still its last event (`_in_flight.check_clock`)
    stalled_at: int | None = None
    #: live requests for a person's answer not answered yet (user_input, elicitation,
    #: exit_plan_mode), by request id: what they wait for, and since when (ns)
    questions: dict[str, tuple[str, int]] = field(default_factory=dict)


@dataclass(eq=False, slots=True)
class ContextWatch:
    """How full a task's context window is (`_context`): its highest utilization over its
    LLM calls (with that call's tokens and limit), the latest one (the running-now gauges),
    and the compactions and truncations inside it. Kept with the task, as `TaskWatch` is."""

    peak: float | None = None  # the highest copilot.context.utilization of its calls
    peak_tokens: int = 0
    peak_limit: int = 0
    current: float | None = None  # the latest utilization: a call, a compaction, usage_info
    limit: int | None = None  # the latest window limit seen (a compaction's has none)
    model: str | None = None  # the model of the latest call
    compactions: int = 0
    truncations: int = 0
    removed: int | None = None  # tokens the compactions and truncations removed


@dataclass(eq=False, slots=True)
class Interaction:
    """A top-level user message and its agent loop: one trace, open until the loop ends."""

    trace_id: int
    root: OpenSpan
    main: Agent
    root_exported: bool = False  # a late continuation of an interaction already exported
    tools: dict[str, Tool] = field(default_factory=dict)  # running, by toolCallId
    # toolCallId -> span id of the turn that asked for it, until the call starts
    requested_by: dict[str, int] = field(default_factory=dict)
    subagents: dict[str, Agent] = field(default_factory=dict)  # spawning toolCallId -> agent
    agents_by_id: dict[str, Agent] = field(default_factory=dict)
    # spawning toolCallIds of the sub-agents that ended, oldest first: the oldest are forgotten
    # past a bound (`Lifecycle.forget_ended`), with the LLM calls they made
    ended: deque[str] = field(default_factory=deque)
    forgotten_inference_calls: int = 0
    # LLM calls seen (usage ids): the disk record and the live event of one call give one span.
    # They come close together: the last `RECENT` calls or so are enough.
    chat_keys: RecentSet = field(default_factory=lambda: RecentSet(RECENT))
    outcome: str | None = None
    task_signal: bool = False  # a terminal session.task_complete was seen
    awaiting_continuation: bool = False  # the loop stopped, but more work may come
    # ... because autopilot may nudge it on: no task_complete yet (docs/events.md, "Autopilot")
    awaiting_nudge: bool = False
    autopilot_limit: bool = False  # live: session.autopilot_stopped said cap_reached
    user_messages: int = 1
    continuations: int = 0
    steering: int = 0  # steering messages that joined the running task
    # The CLI's interactionIds of this task (its message, autopilot nudges, its turns): a
    # steering message with one of them joins the task.
    interaction_ids: set[str] = field(default_factory=set)
    # Background shells still running (by shellId): the CLI resumes this task's loop when one
    # reports with a system.notification, so the task is not over before that.
    shells: set[str] = field(default_factory=set)
    tool_calls: int = 0
    # Tools still running when their main-agent turn ended, and when it ended: `copilot -p`
    # interrupted by SIGINT writes turn_end 1-2 ms before abort, so wait one event to know
    # whether they were aborted (docs/recorded-captures.md).
    dangling: dict[str, int] = field(default_factory=dict)
    last_ns: int = 0
    # The process running this interaction was killed (a session.resume came while tools ran):
    # the time of its last event. The interaction stays open for the resumed process's reports
    # on those tools (synthetic `interrupted` completions, a session.warning), then ends there.
    killed_ns: int | None = None
    # The CLI logged session.shutdown while background sub-agents still ran (CLI 1.0.81 lets
    # them finish after it): the task ends when the last of them does (or at the next segment,
    # or the end of the input), not at the shutdown.
    shut_down: bool = False
    # Permission decisions for tool calls that have not started yet, by toolCallId.
    decisions: dict[str, dict[str, AttributeValue]] = field(default_factory=dict)

    watch: TaskWatch = field(default_factory=TaskWatch)  # signals of trouble (`_in_flight`)
    context: ContextWatch = field(default_factory=ContextWatch)  # window pressure (`_context`)
    # Events placed on orphan sub-agents (`Agent.orphan`), and those agents: both bounded.
    orphan_events: int = 0
    orphans: int = 0

    @property
    def subagents_running(self) -> bool:
        """A sub-agent of this interaction has not ended yet (orphans are not waited for: the
        bridge never saw them start, so it cannot see them end)."""
        return any(not agent.done and not agent.orphan for agent in self.subagents.values())


@dataclass(eq=False, slots=True)
class SessionFacts:
    """What outlives interactions: the session's identity and settings, and the previous
    interaction's root (for links). This is what a checkpoint saves."""

    session_id: str
    named: bool = False  # session id confirmed by a session.start
    #: the id the source gave (the log's directory name), which a session.start may not
    #: contradict when it has the shape of a session id (`handlers._session_events`)
    directory: str = ""
    mode: str = "interactive"
    model: str | None = None
    copilot_version: str | None = None
    agent_name: str | None = None  # the custom agent of this segment (`--agent`), if any
    previous: tuple[int, int] | None = None  # (trace id, span id) of the last root
    previous_in_segment: bool = False  # `previous` belongs to the current segment
    # The CLI's interactionIds of the previous interaction: a steering message that names one
    # after the bridge ended that task (the loop stopped as it was sent) still joins it.
    previous_ids: tuple[str, ...] = ()
    # What every span of the session carries for attribution: repository, branch, commit,
    # directories and client (`_attribution`, docs/attribution.md); replaced per segment.
    attribution: dict[str, AttributeValue] = field(default_factory=dict)
    # The figures of the last session.shutdown's accounting snapshot (cumulative over the
    # session): the next snapshot counts only what it adds (`_accounting`).
    accounting: Totals | None = None
    # LLM calls by a bring-your-own-key provider, and others: a session of BYOK calls only
    # has no cost to show (its 0 is not a price).
    byok_calls: int = 0
    billed_calls: int = 0


#: What a Copilot session id looks like (a UUID): the name of its directory under
#: session-state.
SESSION_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.ASCII | re.IGNORECASE
)


def disagrees(directory: str, claimed: str) -> bool:
    """A log names another session (in its session.start, or a checkpoint saved from it) than
    its directory does. Only a directory named like a session id (a UUID, as the CLI names them
    under session-state) says which session it is: a log replayed from elsewhere
    (tests/fixtures/<name>/events.jsonl) takes the id its session.start gives, as always."""
    return SESSION_ID.fullmatch(directory) is not None and claimed.lower() != directory.lower()


class RecentSet:
    """A set that remembers at least its `size` most recent entries: two sets, the older
    forgotten when the newer fills. Cheaper per lookup than a `SeenSet` (one or two set
    lookups), for a few entries kept only while a task is open."""

    __slots__ = ("_new", "_old", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._new: set[int] = set()
        self._old: set[int] = set()

    def seen(self, key: str) -> bool:
        """True if `key` is already in the set; else add it (forgetting the older half if
        full). Kept as its hash: an int, not the string."""
        digest = hash(key)
        if digest in self._new or digest in self._old:
            return True
        self._new.add(digest)
        if len(self._new) >= self._size:
            self._old, self._new = self._new, set()
        return False

    def __len__(self) -> int:
        return len(self._new) + len(self._old)


class SeenSet:
    """A set that remembers at least its `limit` most recent entries, compactly.

    A daemon keeps one per followed log and per kind (event ids, span ids) for as long as it
    follows the log, most of them quiet; a dict of strings took some 120 bytes an entry. Here an
    entry is its `hash()` (a span id is its own hash; two different keys share one with odds of
    about limit / 2^61), 8 bytes in sorted arrays searched by bisection: the newest in a "young"
    array kept sorted as they come, at most `RECENT`; when full, it joins the newest of the
    older generations (at most `limit // 2` entries each, oldest first), or starts one. The
    oldest generation is forgotten once the younger ones hold `limit`. A lookup is at most four
    bisections; no step re-sorts more than a generation.
    """

    __slots__ = ("_generations", "_limit", "_search", "_young")

    def __init__(self, limit: int = MEMORY) -> None:
        self._limit = limit
        self._young = array("q")
        self._generations: list[array[int]] = []  # oldest first; only the last one grows
        self._search: tuple[array[int], ...] = (self._young,)  # newest first

    def seen(self, key: str | int) -> bool:
        """True if `key` is already in the set; else add it (forgetting the oldest if full)."""
        digest = hash(key)
        for packed in self._search:  # inlined: this runs for every event and span
            at = bisect_left(packed, digest)
            if at < len(packed) and packed[at] == digest:
                return True
        insort(self._young, digest)
        if len(self._young) >= RECENT:
            self._grow()
        return False

    def _grow(self) -> None:
        """The young array joins the newest generation (or starts one); the oldest generation
        goes once the others hold `limit` entries."""
        new = list(self._young)
        generations = self._generations
        if generations and len(generations[-1]) + len(new) <= max(self._limit // 2, RECENT):
            new += generations.pop()
        generations.append(array("q", sorted(new)))
        while sum(map(len, generations[1:])) >= self._limit:
            del generations[0]
        self._young = array("q")
        self._search = (self._young, *reversed(generations))

    def __len__(self) -> int:
        return len(self._young) + sum(map(len, self._generations))
