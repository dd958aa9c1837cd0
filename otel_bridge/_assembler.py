"""The session assembler: Copilot events in, finished OpenTelemetry span records out.

Pure: no I/O, no clock, no threads. Time comes from the events, ids from `_ids`, so feeding the
same events twice yields the same records. One `SessionAssembler` holds the open state of one
session log (or live session); `Assembler` routes the events of many streams to theirs.

The span model (docs/architecture.md):

    invoke_agent copilot                  one trace per top-level user message (an interaction)
     +- turn <n>                          assistant.turn_start .. assistant.turn_end
     |   +- chat <model>                  one per LLM call (session.usage_record / assistant.usage)
     |   +- execute_tool <tool>           tool.execution_start .. tool.execution_complete
     |   |   +- invoke_agent <agent>      a sub-agent spawned by `task`; its turns nest below
     +- turn <n+1> ...

How an interaction ends when reading from disk, where `session.idle` is never written
(docs/events.md): a main-agent turn whose messages asked for no tool ends the loop
(in autopilot only together with `session.task_complete`, since the CLI may nudge the model on with
a continuation message); `session.error`, `abort`, `session.shutdown`, a new segment, the next
top-level user message, and the caller (`end_stream` at end of input, `flush_quiet` after a quiet
timeout) end it too.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _ids
from . import semconv as sc
from ._event_types import KNOWN_EVENT_TYPES
from ._events import Event, printable_type
from ._metrics import MetricsRecorder, NullRecorder
from ._records import (
    AttributeValue,
    LinkRecord,
    SpanEventRecord,
    SpanKind,
    SpanRecord,
    StatusCode,
)

__all__ = ["Assembler", "AssemblerConfig", "AssemblerStats", "SessionAssembler"]

_MAIN = ""  # agent key of the main agent
#: At most this many distinct unknown event types are named in a metric label; the rest are
#: "other", so that a hostile log cannot blow up the metric's cardinality.
_MAX_UNKNOWN_TYPES = 50
#: Permission requests waiting for an answer that a session remembers.
_MAX_OPEN_PERMISSIONS = 1_000
_GENAI_AGENT: Mapping[str, AttributeValue] = {
    sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
    sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
}
#: How many recent event ids and span ids a session remembers to drop redelivered events and
#: to keep a reused tool call id from giving two different spans one id. Kept across segments
#: (a resumed session may be redelivered); about 1 MB per session at most.
_MEMORY = 10_000
#: String fields of compaction/truncation events safe to copy onto span events (short labels).
_LABEL_FIELDS = frozenset({"trigger", "performedBy", "outcome", "model"})


@dataclass(frozen=True, slots=True)
class AssemblerConfig:
    """Choices that change what the spans carry.

    Attributes:
        capture_content: put text from the log (tool error messages) on spans. Off by default:
            logs hold prompts, code and secrets (docs/privacy.md).
        parent: (trace id, span id) of a span the interactions hang under (an app's request,
            a CI job); None: each interaction is its own trace.
        hash_salt: if set, prompts, answers and tool arguments and results also get a salted
            SHA-256 (content off or on), so equal texts can be matched without being sent.
    """

    capture_content: bool = False
    parent: tuple[int, int] | None = None
    hash_salt: str | None = None


@dataclass
class AssemblerStats:
    """Events the assembler could not place, by type, and other health counts."""

    unplaced: Counter[str] = field(default_factory=Counter)
    unknown_types: Counter[str] = field(default_factory=Counter)
    duplicates: int = 0
    interactions: int = 0
    spans: int = 0


@dataclass(eq=False, slots=True)
class _Span:
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

    def fail(self, error_type: str, message: str | None = None) -> None:
        self.status = StatusCode.ERROR
        self.attributes[sc.ERROR_TYPE] = error_type
        if message:
            self.status_message = message

    def finish(self, end_ns: int) -> SpanRecord:
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
        )


@dataclass(eq=False, slots=True)
class _Message:
    """An assistant.message, kept until its turn ends in case no usage record names its call."""

    key: str
    timestamp_ns: int
    model: str | None
    api_call_id: str | None


@dataclass(eq=False, slots=True)
class _Turn:
    span: _Span
    turn_id: str
    asked_for_tools: bool = False
    llm_calls: int = 0
    messages: list[_Message] = field(default_factory=list)
    answer: str = ""  # the assistant's text in this turn (content capture only)


@dataclass(eq=False, slots=True)
class _Agent:
    """The main agent of an interaction, or one sub-agent, with its current turn."""

    key: str
    span: _Span
    turn: _Turn | None = None
    turns: int = 0
    agent_id: str | None = None
    done: bool = False


@dataclass(eq=False, slots=True)
class _Interaction:
    trace_id: int
    root: _Span
    main: _Agent
    root_exported: bool = False  # a late continuation of an interaction already exported
    tools: dict[str, tuple[_Span, _Agent]] = field(default_factory=dict)
    requested_by: dict[str, int] = field(default_factory=dict)  # toolCallId -> turn span id
    subagents: dict[str, _Agent] = field(default_factory=dict)  # spawning toolCallId -> agent
    agents_by_id: dict[str, _Agent] = field(default_factory=dict)
    chat_keys: set[str] = field(default_factory=set)
    outcome: str | None = None
    task_signal: bool = False  # a terminal session.task_complete was seen
    awaiting_continuation: bool = False  # autopilot loop stopped without task_complete
    user_messages: int = 1
    continuations: int = 0
    tool_calls: int = 0
    # Tools still running when their main-agent turn ended, and when it ended: `copilot -p`
    # interrupted by SIGINT writes turn_end 1-2 ms before abort, so wait one event to know
    # whether they were aborted (docs/recorded-captures.md).
    dangling: dict[str, int] = field(default_factory=dict)
    last_ns: int = 0


class SessionAssembler:
    """Turns the events of one session, in log order, into finished span records.

    Not thread-safe; call from one thread. Every method returns the spans it finished.

    Args:
        session_id: the session id to use until a `session.start` names it (sources pass the
            session directory name, which the CLI makes equal to the session id).
        config: what the spans carry.
        stats: counters to add to.
        metrics: where metric observations go (none by default).
    """

    def __init__(
        self,
        session_id: str,
        config: AssemblerConfig | None = None,
        stats: AssemblerStats | None = None,
        metrics: MetricsRecorder | None = None,
    ) -> None:
        self.session_id = session_id
        self.config = config or AssemblerConfig()
        self.stats = stats if stats is not None else AssemblerStats()
        self.metrics: MetricsRecorder = metrics or NullRecorder()
        self.mode = "interactive"
        self.model: str | None = None
        self.copilot_version: str | None = None
        self._interaction: _Interaction | None = None
        self._previous: tuple[int, int] | None = None  # (trace id, span id) of the last root
        self._named = False  # session id confirmed by a session.start
        self._previous_in_segment = False  # _previous belongs to the current segment
        self._out: list[SpanRecord] = []
        self._seen_events: dict[str, None] = {}  # insertion-ordered: the oldest go first
        self._used_span_ids: dict[int, None] = {}
        self._permissions: dict[str, int] = {}  # open permission request id -> asked at (ns)
        self._handlers: dict[str, Callable[[Event], None]] = {
            "session.start": self._on_segment_start,
            "session.resume": self._on_segment_start,
            "session.shutdown": self._on_shutdown,
            "session.mode_changed": self._on_mode_changed,
            "session.model_change": self._on_model_change,
            "user.message": self._on_user_message,
            "assistant.turn_start": self._on_turn_start,
            "assistant.turn_end": self._on_turn_end,
            "assistant.message": self._on_assistant_message,
            "session.usage_record": self._on_usage,
            "assistant.usage": self._on_usage,
            "tool.execution_start": self._on_tool_start,
            "tool.execution_complete": self._on_tool_complete,
            "subagent.started": self._on_subagent_started,
            "subagent.completed": self._on_subagent_ended,
            "subagent.failed": self._on_subagent_ended,
            "session.task_complete": self._on_task_complete,
            "session.error": self._on_error,
            "abort": self._on_abort,
            "session.compaction_start": self._on_span_event,
            "session.compaction_complete": self._on_span_event,
            "session.truncation": self._on_span_event,
            "permission.requested": self._on_permission,
            "permission.completed": self._on_permission,
            # live only (the SDK stream; never on disk)
            "session.idle": self._on_idle,
            "assistant.turn_retry": self._on_turn_retry,
            "model.call_failure": self._on_call_failure,
            "agent.interrupted": self._on_interrupted,
        }

    @property
    def has_open_interaction(self) -> bool:
        """True while an interaction's spans are still open."""
        return self._interaction is not None

    def feed(self, event: Event) -> list[SpanRecord]:
        """Take one event; return the spans it finished."""
        self._out = []
        if _remember(self._seen_events, event.key):
            self.stats.duplicates += 1  # redelivered (an SDK resume replays history)
            return []
        interaction = self._interaction
        if interaction is not None and interaction.dangling and event.type != "abort":
            self._end_dangling(interaction)
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(event)
        if event.type not in KNOWN_EVENT_TYPES:
            self._count_unknown(event.type)
        if interaction is not None and interaction is self._interaction:
            interaction.last_ns = max(interaction.last_ns, event.timestamp_ns)
        return self._take()

    def end_of_input(self) -> list[SpanRecord]:
        """No more events will come (end of a replayed file): close what is open.

        Open spans end at the last event's time and are marked `copilot.incomplete`, except an
        autopilot loop that had stopped and was only waiting for a continuation: that one ended.
        """
        self._out = []
        interaction = self._interaction
        if interaction is not None:
            if interaction.awaiting_continuation:
                self._close(interaction.last_ns, "loop_end")
            else:
                self._close(interaction.last_ns, "end_of_input", incomplete=True)
        return self._take()

    def snapshot(self) -> dict[str, Any]:
        """The session-level state a restart needs to resume after the last finished
        interaction and give the same spans: ids, mode, model, the link to the previous
        interaction. Only meaningful while no interaction is open. JSON-friendly."""
        return {
            "session_id": self.session_id, "named": self._named, "mode": self.mode,
            "model": self.model, "copilot_version": self.copilot_version,
            "previous": [f"{self._previous[0]:032x}", f"{self._previous[1]:016x}"]
            if self._previous is not None else None,
            "previous_in_segment": self._previous_in_segment,
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Take back a `snapshot()` (of a previous run). Unknown or bad fields are ignored."""
        if isinstance(snapshot.get("session_id"), str) and snapshot["session_id"]:
            self.session_id = snapshot["session_id"]
        self._named = snapshot.get("named") is True
        if isinstance(snapshot.get("mode"), str):
            self.mode = snapshot["mode"]
        for name in ("model", "copilot_version"):
            if isinstance(snapshot.get(name), str):
                setattr(self, name, snapshot[name])
        previous = snapshot.get("previous")
        try:
            self._previous = (int(previous[0], 16), int(previous[1], 16)) if previous else None
        except (TypeError, ValueError, IndexError):
            self._previous = None
        self._previous_in_segment = snapshot.get("previous_in_segment") is True

    # --- segment and session state ---------------------------------------------------------

    def _on_segment_start(self, event: Event) -> None:
        if self._interaction is not None:  # the CLI died without a shutdown
            self._close(self._interaction.last_ns, "segment_end", incomplete=True)
        self._previous_in_segment = False
        session_id = event.data.get("sessionId")
        if isinstance(session_id, str) and session_id and not self._named:
            self.session_id = session_id
            self._named = True
        version = event.data.get("copilotVersion")
        if isinstance(version, str):
            self.copilot_version = version
        model = event.data.get("selectedModel")
        if isinstance(model, str) and model:
            self.model = model
        self.mode = "interactive"

    def _on_shutdown(self, event: Event) -> None:
        interaction = self._interaction
        if interaction is not None:
            if interaction.awaiting_continuation:
                self._close(interaction.last_ns, "loop_end")
            else:
                self._close(event.timestamp_ns, "shutdown", incomplete=True)

    def _on_mode_changed(self, event: Event) -> None:
        mode = event.data.get("newMode")
        if isinstance(mode, str) and mode:
            self.mode = mode

    def _on_model_change(self, event: Event) -> None:
        model = event.data.get("newModel")
        if event.agent_id is None and isinstance(model, str) and model:
            self.model = model

    # --- interactions ----------------------------------------------------------------------

    def _on_user_message(self, event: Event) -> None:
        if event.agent_id is not None or _str(event.data, "parentToolCallId"):
            return  # a sub-agent's own prompt, not the user's
        interaction = self._interaction
        if event.data.get("isAutopilotContinuation") is True:
            if interaction is None:
                interaction = self._reopen_previous(event)
            interaction.continuations += 1
            interaction.user_messages += 1
            interaction.awaiting_continuation = False
            self._add("copilot.user_messages", {"copilot.continuation": True})
            self._add("copilot.autopilot.continuations")
            interaction.root.events.append(
                SpanEventRecord("copilot.autopilot.continuation", event.timestamp_ns,
                                _compact({sc.COPILOT_INTERACTION_ID: _str(event.data,
                                                                          "interactionId")}))
            )
            return
        if interaction is not None:
            self._close(interaction.last_ns, "next_message",
                        incomplete=not (interaction.awaiting_continuation
                                        or interaction.main.done))
        mode = _str(event.data, "agentMode") or self.mode
        if mode != self.mode and mode in ("interactive", "plan", "autopilot"):
            self.mode = mode
        self._open(event, synthetic=False)
        self._add("copilot.user_messages", {"copilot.continuation": False})
        content = event.data.get("content")
        if isinstance(content, str) and self._interaction is not None:
            self._content(self._interaction.root.attributes, "copilot.prompt", content,
                          sc.GEN_AI_INPUT_MESSAGES, lambda text: _messages("user", text))

    def _open(self, event: Event, *, synthetic: bool) -> _Interaction:
        key = event.key
        parent = self.config.parent
        trace_id = parent[0] if parent is not None else _ids.trace_id(self.session_id, key)
        attributes: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
            sc.GEN_AI_AGENT_NAME: sc.MAIN_AGENT_NAME,
            sc.GEN_AI_CONVERSATION_ID: self.session_id,
            sc.COPILOT_MODE: self.mode,
        }
        if self.model:
            attributes[sc.GEN_AI_REQUEST_MODEL] = self.model
        if self.copilot_version:
            attributes[sc.COPILOT_VERSION] = self.copilot_version
        interaction_id = _str(event.data, "interactionId")
        if interaction_id:
            attributes[sc.COPILOT_INTERACTION_ID] = interaction_id
        if synthetic:
            attributes[sc.COPILOT_SYNTHETIC] = True
        links: tuple[LinkRecord, ...] = ()
        if self._previous is not None:
            links = (LinkRecord(self._previous[0], self._previous[1],
                                {"copilot.link.type": "previous_interaction"}),)
        root = _Span(trace_id, self._span_id("interaction", key, key),
                     parent[1] if parent is not None else None,
                     f"{sc.OP_INVOKE_AGENT} {sc.MAIN_AGENT_NAME}", event.timestamp_ns,
                     attributes=attributes, links=links)
        interaction = _Interaction(trace_id, root, _Agent(_MAIN, root),
                                   last_ns=event.timestamp_ns)
        self._interaction = interaction
        self.stats.interactions += 1
        return interaction

    def _reopen_previous(self, event: Event) -> _Interaction:
        """Continue the last exported interaction (late autopilot continuation) or open one."""
        if self._previous is None:
            return self._open(event, synthetic=True)
        trace_id, root_id = self._previous
        root = _Span(trace_id, root_id, None, "", event.timestamp_ns)
        interaction = _Interaction(trace_id, root, _Agent(_MAIN, root), root_exported=True,
                                   last_ns=event.timestamp_ns)
        self._interaction = interaction
        return interaction

    def _ensure_interaction(self, event: Event) -> _Interaction:
        """The open interaction. Work seen after the loop ended (a background sub-agent, say)
        continues the last interaction's trace; work with no user message before it in this
        segment (a log read from its middle) gets a synthesized interaction."""
        if self._interaction is not None:
            return self._interaction
        if self._previous_in_segment:
            return self._reopen_previous(event)
        return self._open(event, synthetic=True)

    def _loop_ended(self, interaction: _Interaction, end_ns: int, reason: str) -> None:
        """The main agent's loop stopped: end the interaction unless more will come."""
        interaction.main.done = True
        if not interaction.task_signal and self.mode == "autopilot":
            interaction.awaiting_continuation = True  # the CLI may nudge the model on
            return
        if any(not agent.done for agent in interaction.subagents.values()):
            # Background sub-agents still run; when they report, the CLI resumes the main
            # agent (a read_agent call and another turn), so the loop is not over yet.
            interaction.awaiting_continuation = True
            return
        self._close(end_ns, reason)

    def _close(self, end_ns: int, reason: str, *, incomplete: bool = False,
               error: tuple[str, str | None] | None = None) -> None:
        """End the open interaction and everything in it."""
        interaction = self._interaction
        if interaction is None:
            return
        self._interaction = None
        if error is None:  # not an abort: tools a turn_end left running end with that turn
            self._end_dangling(interaction)
        for tool_call_id in list(interaction.tools):
            self._end_tool(interaction, tool_call_id, end_ns, error=error,
                           incomplete=error is None)
        for agent in interaction.subagents.values():  # sub-agents before the main agent
            self._end_turn(agent, end_ns, error=error, incomplete=error is None)
            if not agent.done:
                self._end_agent(agent, end_ns, error=error, incomplete=error is None)
        self._end_turn(interaction.main, end_ns, error=error, incomplete=incomplete)
        root = interaction.root
        if interaction.root_exported:
            return
        if error is not None:
            root.fail(*error)
            interaction.outcome = sc.OUTCOME_ABORTED if error[0] == sc.ERROR_ABORTED \
                else sc.OUTCOME_ERROR
        if incomplete:
            root.attributes[sc.COPILOT_INCOMPLETE] = True
        root.attributes[sc.COPILOT_TASK_OUTCOME] = interaction.outcome or sc.OUTCOME_NO_SIGNAL
        root.attributes[sc.COPILOT_END_REASON] = reason
        root.attributes[sc.COPILOT_TURNS] = interaction.main.turns
        root.attributes[sc.COPILOT_USER_MESSAGES] = interaction.user_messages
        if interaction.continuations:
            root.attributes[sc.COPILOT_CONTINUATIONS] = interaction.continuations
        record = root.finish(end_ns)
        self._emit(record)
        mode = str(root.attributes.get(sc.COPILOT_MODE, self.mode))
        self._record("copilot.turns_per_message", interaction.main.turns,
                     {sc.COPILOT_MODE: mode})
        self._add("copilot.tasks", {sc.COPILOT_TASK_OUTCOME: root.attributes[
            sc.COPILOT_TASK_OUTCOME], sc.COPILOT_MODE: mode})
        agent_attributes = {**_GENAI_AGENT, sc.GEN_AI_AGENT_NAME: sc.MAIN_AGENT_NAME}
        self._record("gen_ai.invoke_agent.duration", _seconds(record),
                     _compact({**agent_attributes, sc.ERROR_TYPE: root.attributes.get(
                         sc.ERROR_TYPE)}))
        self._record("gen_ai.invoke_agent.tool_calls", interaction.tool_calls, agent_attributes)
        self._previous = (root.trace_id, root.span_id)
        self._previous_in_segment = True

    # --- agents and turns ------------------------------------------------------------------

    def _agent_for(self, event: Event, interaction: _Interaction,
                   parent_call: str | None = None) -> _Agent:
        """The agent an event belongs to: main, or the sub-agent named by parentToolCallId or
        agentId (sub-agent events carry both; see docs/events.md, "Main agent and sub-agents")."""
        parent_call = parent_call or _str(event.data, "parentToolCallId")
        agent_id = event.agent_id
        if parent_call:
            agent = interaction.subagents.get(parent_call)
            if agent is None:
                agent = self._new_subagent(interaction, parent_call, None, event.timestamp_ns)
        elif agent_id is not None:
            agent = interaction.agents_by_id.get(agent_id)
            if agent is None:  # a sub-agent whose spawning call we never saw
                agent = self._new_subagent(interaction, f"agent:{agent_id}", None,
                                           event.timestamp_ns, orphan=True)
        else:
            return interaction.main
        if agent_id is not None and agent.agent_id is None:
            agent.agent_id = agent_id
            agent.span.attributes[sc.GEN_AI_AGENT_ID] = agent_id
            interaction.agents_by_id[agent_id] = agent
        return agent

    def _new_subagent(self, interaction: _Interaction, tool_call_id: str, name: str | None,
                      start_ns: int, *, orphan: bool = False) -> _Agent:
        if orphan:
            parent = interaction.main.turn.span if interaction.main.turn else interaction.root
            parent_id = parent.span_id
        else:  # the execute_tool span of the spawning call, by its deterministic id
            parent_id = _ids.span_id("tool", self.session_id, tool_call_id)
        span_id = self._span_id("subagent", tool_call_id, f"{tool_call_id}@{start_ns}")
        span = _Span(interaction.trace_id, span_id, parent_id,
                     f"{sc.OP_INVOKE_AGENT} {name or 'subagent'}", start_ns,
                     attributes={
                         sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                         sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
                         sc.GEN_AI_CONVERSATION_ID: self.session_id,
                         sc.GEN_AI_TOOL_CALL_ID: tool_call_id,
                     })
        if name:
            span.attributes[sc.GEN_AI_AGENT_NAME] = name
        agent = _Agent(tool_call_id, span)
        interaction.subagents[tool_call_id] = agent
        return agent

    def _on_subagent_started(self, event: Event) -> None:
        tool_call_id = _str(event.data, "toolCallId")
        if not tool_call_id:
            self.stats.unplaced[event.type] += 1
            return
        interaction = self._ensure_interaction(event)
        name = _str(event.data, "agentName") or "subagent"
        agent = interaction.subagents.get(tool_call_id)
        if agent is None:
            agent = self._new_subagent(interaction, tool_call_id, name, event.timestamp_ns)
        else:  # events of the sub-agent came first: name it now
            agent.span.name = f"{sc.OP_INVOKE_AGENT} {name}"
            agent.span.attributes[sc.GEN_AI_AGENT_NAME] = name
            agent.span.start_ns = min(agent.span.start_ns, event.timestamp_ns)
        model = _str(event.data, "model")
        if model:
            agent.span.attributes[sc.GEN_AI_REQUEST_MODEL] = model
        if event.agent_id is not None:  # subagent.* events carry the sub-agent's own id
            agent.agent_id = event.agent_id
            agent.span.attributes[sc.GEN_AI_AGENT_ID] = event.agent_id
            interaction.agents_by_id[event.agent_id] = agent

    def _on_subagent_ended(self, event: Event) -> None:
        interaction = self._interaction
        agent = interaction.subagents.get(_str(event.data, "toolCallId") or "") \
            if interaction is not None else None
        if agent is None or agent.done:
            self.stats.unplaced[event.type] += 1
            return
        assert interaction is not None
        error: tuple[str, str | None] | None = None
        if event.type == "subagent.failed":
            message = _str(event.data, "error") if self.config.capture_content else None
            error = (sc.ERROR_SUBAGENT_FAILED, message)
        cut_short = None
        if event.data.get("cancelled") is True:  # torn down by an abort of it or its parent
            error = cut_short = (sc.ERROR_ABORTED, None)
        self._end_tools_of(interaction, agent, event.timestamp_ns, cut_short)
        self._end_turn(agent, event.timestamp_ns, error=cut_short, incomplete=True)
        self._end_agent(agent, event.timestamp_ns, error=error)

    def _end_agent(self, agent: _Agent, end_ns: int, *,
                   error: tuple[str, str | None] | None = None, incomplete: bool = False) -> None:
        agent.done = True
        record = self._finish(agent.span, end_ns, error, incomplete)
        self._record("gen_ai.invoke_agent.duration", _seconds(record), _compact({
            **_GENAI_AGENT, sc.GEN_AI_AGENT_NAME: record.attributes.get(sc.GEN_AI_AGENT_NAME),
            sc.ERROR_TYPE: record.attributes.get(sc.ERROR_TYPE)}))

    def _on_turn_start(self, event: Event) -> None:
        interaction = self._ensure_interaction(event)
        agent = self._agent_for(event, interaction)
        if agent.turn is not None:  # its turn_end never came
            self._end_turn(agent, event.timestamp_ns, incomplete=True)
        agent.turns += 1
        turn_id = _str(event.data, "turnId") or str(agent.turns - 1)
        span = _Span(interaction.trace_id, self._span_id("turn", event.key, event.key),
                     agent.span.span_id, f"turn {agent.turns}", event.timestamp_ns,
                     attributes=_compact({
                         sc.COPILOT_TURN_ID: turn_id,
                         sc.COPILOT_TURN_INDEX: agent.turns,
                         sc.COPILOT_INTERACTION_ID: _str(event.data, "interactionId"),
                         sc.GEN_AI_REQUEST_MODEL: _str(event.data, "model"),
                     }))
        agent.turn = _Turn(span, turn_id)
        self._add("copilot.turns", {"copilot.agent.type": _agent_type(agent)})
        if agent is interaction.main:
            interaction.awaiting_continuation = False
            interaction.main.done = False

    def _on_turn_end(self, event: Event) -> None:
        interaction = self._interaction
        if interaction is None:
            self.stats.unplaced[event.type] += 1
            return
        agent = self._agent_for(event, interaction)
        turn = agent.turn
        if turn is None:
            self.stats.unplaced[event.type] += 1
            return
        if agent is interaction.main:
            interaction.dangling.update({call: event.timestamp_ns for call, (_, owner)
                                         in interaction.tools.items() if owner is agent})
        else:
            self._end_tools_of(interaction, agent, event.timestamp_ns)
        self._end_turn(agent, event.timestamp_ns)
        if agent is not interaction.main:
            return
        # The loop is over when the model answered without asking for tools. A turn whose model
        # calls all failed has no answer at all: a session.error follows, so wait for it.
        answered = bool(turn.messages) or turn.llm_calls > 0
        if interaction.task_signal or (answered and not turn.asked_for_tools):
            self._loop_ended(interaction, event.timestamp_ns,
                             "task_complete" if interaction.task_signal else "loop_end")

    def _end_turn(self, agent: _Agent, end_ns: int, *,
                  error: tuple[str, str | None] | None = None, incomplete: bool = False) -> None:
        turn = agent.turn
        if turn is None:
            return
        agent.turn = None
        if turn.llm_calls == 0:
            self._emit_message_chats(turn)
        if turn.answer:
            self._content(turn.span.attributes, "copilot.response", turn.answer,
                          sc.GEN_AI_OUTPUT_MESSAGES, lambda text: _messages("assistant", text))
        self._finish(turn.span, end_ns, error, incomplete)

    def _emit_message_chats(self, turn: _Turn) -> None:
        """Logs without usage records (CLI < 1.0.102): one chat span per model call, told
        apart by apiCallId, else one per assistant.message; each ends at its message."""
        start = turn.span.start_ns
        seen: set[str] = set()
        for message in turn.messages:
            call = message.api_call_id or message.key
            if call in seen:
                continue
            seen.add(call)
            model = message.model or self.model
            span = _Span(turn.span.trace_id, self._span_id("chat", call, message.key),
                         turn.span.span_id, f"{sc.OP_CHAT} {model or 'unknown'}", start,
                         kind=SpanKind.CLIENT,
                         attributes=_compact({
                             sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                             sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
                             sc.GEN_AI_CONVERSATION_ID: self.session_id,
                             sc.GEN_AI_REQUEST_MODEL: model,
                             sc.GEN_AI_RESPONSE_MODEL: message.model,
                             sc.GEN_AI_RESPONSE_ID: message.api_call_id,
                             sc.COPILOT_TURN_ID: turn.turn_id,
                         }))
            self._emit(span.finish(message.timestamp_ns))
            start = message.timestamp_ns

    def _on_assistant_message(self, event: Event) -> None:
        interaction = self._ensure_interaction(event)
        agent = self._agent_for(event, interaction)
        turn = agent.turn
        owner = turn.span if turn is not None else agent.span
        requests = event.data.get("toolRequests")
        if isinstance(requests, list):
            for request in requests:
                call_id = _str(request, "toolCallId") if isinstance(request, dict) else None
                if call_id:
                    interaction.requested_by[call_id] = owner.span_id
            if turn is not None and requests:
                turn.asked_for_tools = True
        if turn is not None:
            turn.messages.append(_Message(event.key, event.timestamp_ns,
                                          _str(event.data, "model"),
                                          _str(event.data, "apiCallId")))
            answer = event.data.get("content")
            if isinstance(answer, str) and answer:
                turn.answer += answer

    def _on_usage(self, event: Event) -> None:
        usage = event.data.get("usage")
        if not isinstance(usage, dict):
            usage = event.data  # live assistant.usage carries the fields at the top
        interaction = self._ensure_interaction(event)
        accounting = usage.get("accounting")
        call_key = (_str(accounting, "usageId") if isinstance(accounting, dict) else None) \
            or _str(usage, "apiCallId") or event.key
        if call_key in interaction.chat_keys:
            return  # the same call seen twice (disk record and live event)
        interaction.chat_keys.add(call_key)
        agent = self._agent_for(event, interaction, _str(usage, "parentToolCallId"))
        turn = agent.turn
        parent = turn.span if turn is not None else agent.span
        if turn is not None:
            turn.llm_calls += 1
        model = _str(usage, "model") or self.model
        duration_ms = _num(usage, "duration")
        end_ns = event.timestamp_ns
        start_ns = end_ns - int(duration_ms * 1_000_000) if duration_ms else end_ns
        start_ns = max(start_ns, parent.start_ns)
        ttft = _num(usage, "timeToFirstTokenMs")
        finish = _str(usage, "finishReason")
        span = _Span(interaction.trace_id, self._span_id("chat", call_key, event.key),
                     parent.span_id, f"{sc.OP_CHAT} {model or 'unknown'}", start_ns,
                     kind=SpanKind.CLIENT,
                     attributes=_compact({
                         sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                         sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
                         sc.GEN_AI_CONVERSATION_ID: self.session_id,
                         sc.GEN_AI_REQUEST_MODEL: model,
                         sc.GEN_AI_RESPONSE_MODEL: _str(usage, "model"),
                         sc.GEN_AI_RESPONSE_ID: _str(usage, "apiCallId"),
                         sc.GEN_AI_RESPONSE_FINISH_REASONS: [finish] if finish else None,
                         sc.GEN_AI_USAGE_INPUT_TOKENS: _int(usage, "inputTokens"),
                         sc.GEN_AI_USAGE_OUTPUT_TOKENS: _int(usage, "outputTokens"),
                         sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: _int(usage, "cacheReadTokens"),
                         sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS:
                             _int(usage, "cacheWriteTokens"),
                         sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: _int(usage, "reasoningTokens"),
                         sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK:
                             ttft / 1000.0 if ttft is not None else None,
                         sc.COPILOT_INITIATOR: _str(usage, "initiator"),
                         sc.COPILOT_USAGE_COST: _num(usage, "cost"),
                         sc.COPILOT_USAGE_DURATION_MS: duration_ms,
                         sc.COPILOT_TURN_ID: turn.turn_id if turn is not None else None,
                     }))
        record = span.finish(end_ns)
        self._emit(record)
        model_attributes = _compact({
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
            sc.GEN_AI_REQUEST_MODEL: model, sc.GEN_AI_RESPONSE_MODEL: _str(usage, "model")})
        if duration_ms is not None:
            self._record("gen_ai.client.operation.duration", duration_ms / 1000.0,
                         model_attributes)
        for token_type, key in (("input", "inputTokens"), ("output", "outputTokens")):
            tokens = _int(usage, key)
            if tokens is not None:
                self._record("gen_ai.client.token.usage", tokens,
                             {**model_attributes, "gen_ai.token.type": token_type})

    # --- tools -----------------------------------------------------------------------------

    def _on_tool_start(self, event: Event) -> None:
        interaction = self._ensure_interaction(event)
        tool_call_id = _str(event.data, "toolCallId") or event.key
        if tool_call_id in interaction.tools:
            return  # delivered twice
        agent = self._agent_for(event, interaction)
        parent_id = interaction.requested_by.get(tool_call_id)
        if parent_id is None:
            parent_id = agent.turn.span.span_id if agent.turn is not None else agent.span.span_id
        name = _str(event.data, "toolName") or "unknown"
        span = _Span(interaction.trace_id, self._span_id("tool", tool_call_id, event.key),
                     parent_id, f"{sc.OP_EXECUTE_TOOL} {name}", event.timestamp_ns,
                     attributes=_compact({
                         sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                         sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
                         sc.GEN_AI_CONVERSATION_ID: self.session_id,
                         sc.GEN_AI_TOOL_NAME: name,
                         sc.GEN_AI_TOOL_CALL_ID: tool_call_id,
                         sc.GEN_AI_TOOL_TYPE: "function",
                         sc.COPILOT_TOOL_MCP_SERVER: _str(event.data, "mcpServerName"),
                         sc.COPILOT_TURN_ID: _str(event.data, "turnId"),
                     }))
        arguments = event.data.get("arguments")
        if arguments is not None:
            self._content(span.attributes, "copilot.tool.arguments", _json(arguments),
                          sc.GEN_AI_TOOL_CALL_ARGUMENTS)
        interaction.tools[tool_call_id] = (span, agent)
        interaction.tool_calls += 1

    def _on_tool_complete(self, event: Event) -> None:
        interaction = self._interaction
        tool_call_id = _str(event.data, "toolCallId")
        if interaction is None or not tool_call_id or tool_call_id not in interaction.tools:
            self.stats.unplaced[event.type] += 1
            return
        span = interaction.tools[tool_call_id][0]
        shell = event.data.get("shellExecution")
        exit_code = _int(shell, "exitCode") if isinstance(shell, dict) else None
        if exit_code is not None:  # a non-zero exit is still a successful tool call
            span.attributes[sc.COPILOT_TOOL_EXIT_CODE] = exit_code
        result = event.data.get("result")
        text = _str(result, "content") if isinstance(result, dict) else None
        if text is not None:
            self._content(span.attributes, "copilot.tool.result", text,
                          sc.GEN_AI_TOOL_CALL_RESULT)
        if event.data.get("success") is False:
            error = event.data.get("error")
            code = _str(error, "code") if isinstance(error, dict) else None
            message = _str(error, "message") if isinstance(error, dict) else None
            span.fail(code or sc.ERROR_TOOL_FAILED,
                      message if self.config.capture_content else None)
        self._end_tool(interaction, tool_call_id, event.timestamp_ns)

    def _end_dangling(self, interaction: _Interaction) -> None:
        """The event after the turn_end was not an abort: those tools just never completed."""
        for call, end_ns in interaction.dangling.items():
            if call in interaction.tools:
                self._end_tool(interaction, call, end_ns, incomplete=True)
        interaction.dangling.clear()

    def _end_tools_of(self, interaction: _Interaction, agent: _Agent, end_ns: int,
                      error: tuple[str, str | None] | None = None) -> None:
        """Close the tools of `agent` that never reported completion: incomplete, or failed
        with `error`."""
        for tool_call_id, (_, owner) in list(interaction.tools.items()):
            if owner is agent:
                self._end_tool(interaction, tool_call_id, end_ns, error=error,
                               incomplete=error is None)

    def _end_tool(self, interaction: _Interaction, tool_call_id: str, end_ns: int, *,
                  error: tuple[str, str | None] | None = None, incomplete: bool = False) -> None:
        span, agent = interaction.tools.pop(tool_call_id)
        record = self._finish(span, end_ns, error, incomplete)
        error_type = record.attributes.get(sc.ERROR_TYPE)
        if error_type == sc.ERROR_ABORTED:
            outcome = "aborted"
        elif record.status is StatusCode.ERROR:
            outcome = "error"
        else:
            outcome = "incomplete" if incomplete else "success"
        tool = record.attributes.get(sc.GEN_AI_TOOL_NAME, "unknown")
        self._add("copilot.tool.calls", {sc.GEN_AI_TOOL_NAME: tool, "copilot.tool.outcome": outcome,
                                         "copilot.agent.type": _agent_type(agent)})
        self._record("gen_ai.execute_tool.duration", _seconds(record), _compact({
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB, sc.GEN_AI_TOOL_NAME: tool,
            sc.ERROR_TYPE: error_type}))

    # --- outcomes --------------------------------------------------------------------------

    def _on_task_complete(self, event: Event) -> None:
        interaction = self._interaction
        if interaction is None or event.agent_id is not None:
            self.stats.unplaced[event.type] += 1
            return
        outcome = _str(event.data, "outcome")
        success = event.data.get("success")
        if outcome == "continue":
            return  # the reviewer sent the model back to work
        if success is False or outcome == "blocked":
            interaction.outcome = sc.OUTCOME_FAILED
        else:
            interaction.outcome = sc.OUTCOME_COMPLETED
        interaction.task_signal = True
        summary = event.data.get("summary")
        attributes: dict[str, AttributeValue] = {sc.COPILOT_TASK_OUTCOME: interaction.outcome}
        if isinstance(summary, str):
            attributes[sc.COPILOT_TASK_SUMMARY_LENGTH] = len(summary)
        interaction.root.events.append(
            SpanEventRecord("copilot.task_complete", event.timestamp_ns, attributes))
        if interaction.main.turn is None and not interaction.tools:
            self._loop_ended(interaction, event.timestamp_ns, "task_complete")

    def _on_error(self, event: Event) -> None:
        interaction = self._interaction
        if interaction is None:
            self.stats.unplaced[event.type] += 1
            return
        error_type = _str(event.data, "errorType") or "error"
        status_code = _int(event.data, "statusCode")
        # The message can quote the request (a prompt, a path): content, so opt-in only.
        message = _str(event.data, "message") if self.config.capture_content else None
        attributes = _compact({sc.ERROR_TYPE: error_type, sc.COPILOT_ERROR_STATUS_CODE: status_code,
                               sc.COPILOT_ERROR_MESSAGE: message})
        self._add("copilot.session.errors", {
            sc.ERROR_TYPE: error_type,
            "copilot.agent.type": "subagent" if event.agent_id is not None else "main"})
        if event.agent_id is not None:  # a sub-agent's error: recorded where it happened
            agent = interaction.agents_by_id.get(event.agent_id)
            target = agent.span if agent is not None else interaction.root
            target.events.append(SpanEventRecord("copilot.session.error", event.timestamp_ns,
                                                 attributes))
            return
        interaction.root.events.append(
            SpanEventRecord("copilot.session.error", event.timestamp_ns, attributes))
        self._close(event.timestamp_ns, "session_error", error=(error_type, message))

    def _on_abort(self, event: Event) -> None:
        interaction = self._interaction
        if interaction is None:
            self.stats.unplaced[event.type] += 1
            return
        reason = _str(event.data, "reason")
        interaction.root.attributes[sc.COPILOT_ABORT_REASON] = reason or "unknown"
        self._add("copilot.aborts", {sc.COPILOT_ABORT_REASON: reason or "unknown"})
        self._close(event.timestamp_ns, "abort",
                    error=(sc.ERROR_ABORTED, f"aborted: {reason}" if reason else "aborted"))

    def _on_span_event(self, event: Event) -> None:
        """Compaction and truncation: points in time on the interaction."""
        if event.type == "session.compaction_complete":
            success = event.data.get("success")
            self._add("copilot.compactions", {"copilot.compaction.outcome":
                                              "failure" if success is False else "success"})
        interaction = self._interaction
        if interaction is None:
            self.stats.unplaced[event.type] += 1
            return
        attributes: dict[str, AttributeValue] = {}
        for name, value in event.data.items():
            if isinstance(value, bool | int | float) or (
                    name in _LABEL_FIELDS and isinstance(value, str)):
                attributes[f"copilot.{_snake(name)}"] = value
        interaction.root.events.append(
            SpanEventRecord(f"copilot.{event.type.removeprefix('session.')}",
                            event.timestamp_ns, attributes))

    def _on_permission(self, event: Event) -> None:
        """Time spent waiting for a permission answer (the user, a hook or a policy)."""
        request_id = _str(event.data, "requestId")
        if request_id is None:
            return
        if event.type == "permission.requested":
            if len(self._permissions) < _MAX_OPEN_PERMISSIONS:
                self._permissions[request_id] = event.timestamp_ns
            return
        asked = self._permissions.pop(request_id, None)
        if asked is None:
            return
        result = event.data.get("result")
        kind = _str(result, "kind") if isinstance(result, dict) else None
        self._record("copilot.permission.wait.duration",
                     max(event.timestamp_ns - asked, 0) / 1e9,
                     {"copilot.permission.result": kind or "unknown"})

    # --- live-only events -------------------------------------------------------------------

    def _on_idle(self, event: Event) -> None:
        """session.idle: the loop is over, background agents included. The one end signal the
        log never has; with `aborted`, it closes what an abort left open."""
        interaction = self._interaction
        if interaction is None or event.agent_id is not None:
            return
        if event.data.get("aborted") is True:
            self._close(event.timestamp_ns, "abort", error=(sc.ERROR_ABORTED, "aborted"))
        else:
            self._close(event.timestamp_ns, "idle",
                        incomplete=not (interaction.main.done or interaction.awaiting_continuation))

    def _on_turn_retry(self, event: Event) -> None:
        interaction = self._interaction
        if interaction is None:
            return
        agent = self._agent_for(event, interaction)
        target = agent.turn.span if agent.turn is not None else agent.span
        target.events.append(SpanEventRecord("copilot.turn_retry", event.timestamp_ns, _compact({
            "copilot.retry.reason": _str(event.data, "reason"),
            sc.GEN_AI_REQUEST_MODEL: _str(event.data, "model")})))

    def _on_call_failure(self, event: Event) -> None:
        """model.call_failure: an LLM call that failed (to be retried, or the turn fails)."""
        interaction = self._ensure_interaction(event)
        agent = self._agent_for(event, interaction)
        parent = agent.turn.span if agent.turn is not None else agent.span
        model = _str(event.data, "model") or self.model
        status_code = _int(event.data, "statusCode")
        duration_ms = _num(event.data, "durationMs")
        start_ns = event.timestamp_ns - int(duration_ms * 1e6) if duration_ms else \
            event.timestamp_ns
        span = _Span(interaction.trace_id, self._span_id("chat", event.key, event.key),
                     parent.span_id, f"{sc.OP_CHAT} {model or 'unknown'}",
                     max(start_ns, parent.start_ns), kind=SpanKind.CLIENT,
                     attributes=_compact({
                         sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                         sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
                         sc.GEN_AI_CONVERSATION_ID: self.session_id,
                         sc.GEN_AI_REQUEST_MODEL: model,
                         sc.COPILOT_ERROR_STATUS_CODE: status_code,
                         "copilot.retry.attempt": _int(event.data, "retryAttempt"),
                     }))
        error_type = _str(event.data, "errorCode") or (str(status_code) if status_code else None) \
            or _str(event.data, "failureKind") or "model_call_failure"
        message = _str(event.data, "errorMessage") if self.config.capture_content else None
        self._finish(span, event.timestamp_ns, (error_type, message), False)

    def _on_interrupted(self, event: Event) -> None:
        """agent.interrupted: the user stopped the agent; the tools it names will not finish."""
        interaction = self._interaction
        calls = event.data.get("toolCallIds")
        if interaction is None or not isinstance(calls, list):
            return
        for call in calls:
            if isinstance(call, str) and call in interaction.tools:
                self._end_tool(interaction, call, event.timestamp_ns,
                               error=(sc.ERROR_ABORTED, "interrupted"))

    # --- content ---------------------------------------------------------------------------

    def _content(self, attributes: dict[str, AttributeValue], prefix: str, text: str,
                 content_key: str,
                 encode: Callable[[str], str] | None = None) -> None:
        """Always the size of a text; its salted hash if configured; the text itself (cut to
        the configured length) only with content capture on (docs/privacy.md)."""
        attributes[f"{prefix}.length"] = len(text)
        if self.config.hash_salt is not None:
            digest = hashlib.sha256(f"{self.config.hash_salt}\x00{text}".encode(
                "utf-8", "replace")).hexdigest()
            attributes[f"{prefix}.sha256"] = digest
        if self.config.capture_content:  # cut to size on export, after secrets are redacted
            attributes[content_key] = encode(text) if encode is not None else text

    # --- metrics ---------------------------------------------------------------------------

    def _add(self, name: str, attributes: Mapping[str, AttributeValue] | None = None) -> None:
        self.metrics.add(name, 1, attributes or {}, self.session_id)

    def _record(self, name: str, value: float,
                attributes: Mapping[str, AttributeValue]) -> None:
        self.metrics.record(name, value, attributes, self.session_id)

    def _count_unknown(self, event_type: str) -> None:
        known = self.stats.unknown_types
        if event_type not in known and len(known) >= _MAX_UNKNOWN_TYPES:
            event_type = "other"
        known[event_type] += 1
        self._add("otel_bridge.events.unknown", {
            "copilot.version": printable_type(self.copilot_version or "unknown"),
            "copilot.event.type": printable_type(event_type)})

    # --- output ----------------------------------------------------------------------------

    def _span_id(self, kind: str, key: str, fallback: str) -> int:
        """The deterministic id for `key`; if the session already used it (a tool call id
        reused by a broken log, say), one derived from the event instead, so that no two
        different spans ever share an id."""
        span_id = _ids.span_id(kind, self.session_id, key)
        attempt = 0
        while _remember(self._used_span_ids, span_id):
            attempt += 1
            span_id = _ids.span_id(kind, self.session_id, f"{key}\x00{fallback}\x00{attempt}")
        return span_id

    def _finish(self, span: _Span, end_ns: int, error: tuple[str, str | None] | None,
                incomplete: bool) -> SpanRecord:
        """End a span: failed with `error`, or marked incomplete when its end was not seen."""
        if error is not None:
            span.fail(*error)
        elif incomplete:
            span.attributes[sc.COPILOT_INCOMPLETE] = True
        record = span.finish(end_ns)
        self._emit(record)
        return record

    def _emit(self, record: SpanRecord) -> None:
        self.stats.spans += 1
        self._out.append(record)

    def _take(self) -> list[SpanRecord]:
        out, self._out = self._out, []
        return out


class Assembler:
    """Routes events of many streams (one per session log or live session) to their sessions.

    Args:
        config: what the spans carry.
        metrics: where metric observations go (none by default).
    """

    def __init__(self, config: AssemblerConfig | None = None,
                 metrics: MetricsRecorder | None = None) -> None:
        self.config = config or AssemblerConfig()
        self.stats = AssemblerStats()
        self.metrics: MetricsRecorder = metrics or NullRecorder()
        self._sessions: dict[str, SessionAssembler] = {}

    def session(self, stream: str, session_id: str | None = None) -> SessionAssembler:
        """The assembler of `stream`, created on first use with `session_id` (default: stream)."""
        session = self._sessions.get(stream)
        if session is None:
            session = SessionAssembler(session_id or stream, self.config, self.stats,
                                       self.metrics)
            self._sessions[stream] = session
        return session

    def feed(self, stream: str, events: Iterable[Event],
             session_id: str | None = None) -> list[SpanRecord]:
        """Feed events of one stream in order; return the spans they finished."""
        session = self.session(stream, session_id)
        out: list[SpanRecord] = []
        for event in events:
            out.extend(session.feed(event))
        return out

    def end_stream(self, stream: str) -> list[SpanRecord]:
        """The stream ended for good (replay at end of file, a deleted log): close and forget."""
        session = self._sessions.pop(stream, None)
        return session.end_of_input() if session is not None else []

    def close_stream(self, stream: str) -> list[SpanRecord]:
        """Close the stream's open interaction but keep the session (it may go on later).

        The daemon calls this when a log has been quiet for its idle timeout: on disk nothing
        says a loop has stopped for good (`session.idle` is live-only), so a long silence has to.
        """
        session = self._sessions.get(stream)
        return session.end_of_input() if session is not None else []

    def has_open_interaction(self, stream: str) -> bool:
        """True when the stream has an interaction still open."""
        session = self._sessions.get(stream)
        return session is not None and session.has_open_interaction

    def close_all(self) -> list[SpanRecord]:
        """Close every open interaction (shutdown), keeping the sessions' identities."""
        out: list[SpanRecord] = []
        for session in self._sessions.values():
            out.extend(session.end_of_input())
        return out

    @property
    def open_interactions(self) -> int:
        """How many interactions are open across all streams."""
        return sum(1 for s in self._sessions.values() if s.has_open_interaction)


def _str(mapping: Any, key: str) -> str | None:
    value = mapping.get(key) if isinstance(mapping, Mapping) else None
    return value if isinstance(value, str) and value else None


def _int(mapping: Any, key: str) -> int | None:
    value = mapping.get(key) if isinstance(mapping, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _num(mapping: Any, key: str) -> float | None:
    value = mapping.get(key) if isinstance(mapping, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _messages(role: str, text: str) -> str:
    """GenAI semantic-convention message JSON: [{role, parts: [{type: text, content}]}]."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}],
                      ensure_ascii=False)


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _agent_type(agent: _Agent) -> str:
    return "main" if agent.key == _MAIN else "subagent"


def _seconds(record: SpanRecord) -> float:
    return (record.end_ns - record.start_ns) / 1e9


def _remember(memory: dict[Any, None], key: Any) -> bool:
    """Add `key` to a bounded memory; True if it was already there."""
    if key in memory:
        return True
    memory[key] = None
    if len(memory) > _MEMORY:
        del memory[next(iter(memory))]
    return False


def _compact(attributes: Mapping[str, Any]) -> dict[str, AttributeValue]:
    return {k: v for k, v in attributes.items() if v is not None}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
