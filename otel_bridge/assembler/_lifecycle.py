"""When an interaction opens, reopens and closes, and which agent an event belongs to.

On disk the CLI never writes `session.idle`, so the end of an agent loop is inferred
(docs/architecture.md, "When an interaction ends"): a main-agent turn whose model asked for no
tool ends the loop (in autopilot only with `session.task_complete`, since the CLI may nudge the
model on; and not while background sub-agents or shells still run, for up to the
background wait); `session.error`, `abort`,
`session.shutdown`, a new segment, the next top-level user message, and the caller (end of
input, a quiet log) end it too. Handlers decide which of these an event is; the lifecycle does
the closing. What a checkpoint saves of a session is `_snapshot.py`.
"""

from __future__ import annotations

from .. import semconv as sc
from ..decode._events import Event
from ._config import AssemblerStats
from ._fields import read_str
from ._meter import SessionMeter
from ._state import Agent, Error, Interaction, SessionFacts
from .spans import SpanBuilders

__all__ = ["Lifecycle"]

#: interactionIds of the previous interaction kept for a late steering message (a task has its
#: message's, and one per autopilot nudge).
MAX_IDS = 64
#: Sub-agents no subagent.started announced (`Agent.orphan`) an interaction makes spans for,
#: and events it places on them in all: what junk lines can add to a task is bounded.
MAX_ORPHAN_AGENTS = 4
MAX_ORPHAN_EVENTS = 16
#: What an open interaction remembers at most, so that a task that never ends (a million
#: events) holds a bounded amount: its interactionIds and background shells (each), the tool
#: calls asked for and not started yet, the sub-agents that ended (the oldest are forgotten).
#: Far above what a real task has; reaching one is counted (`otel_bridge.limits.reached`).
MAX_TASK_IDS = 256
MAX_TOOL_REQUESTS = 1_000
MAX_ENDED_SUBAGENTS = 256


class Lifecycle:
    """The open interaction of one session, and the rules that open and close it."""

    __slots__ = ("_facts", "_meter", "_spans", "_stats", "interaction", "orphaned")

    def __init__(
        self, facts: SessionFacts, stats: AssemblerStats, spans: SpanBuilders, meter: SessionMeter
    ) -> None:
        self.interaction: Interaction | None = None
        #: the last event `agent_for` gave to an orphan sub-agent, or refused as one: it does
        #: not move its task's last event time (`SessionAssembler._handle`)
        self.orphaned: Event | None = None
        self._facts = facts
        self._stats = stats
        self._spans = spans
        self._meter = meter

    # --- opening ---------------------------------------------------------------------------

    def open(self, event: Event, *, synthetic: bool) -> Interaction:
        """A new interaction (trace) opened by `event`."""
        self.interaction = self._spans.agent.root(event, synthetic=synthetic)
        self._stats.interactions += 1
        return self.interaction

    def reopen_previous(self, event: Event) -> Interaction:
        """Continue the last exported interaction (late work, a late autopilot continuation),
        or open a synthetic one if there was none."""
        if self._facts.previous is None:
            return self.open(event, synthetic=True)
        self.interaction = self._spans.agent.reopened_root(self._facts.previous, event.timestamp_ns)
        return self.interaction

    def ensure(self, event: Event) -> Interaction:
        """The open interaction, for an event that means work is going on. Work seen after the
        loop ended (a background sub-agent, say) continues the last interaction's trace; work
        with no user message before it in this segment (a log read from its middle) gets a
        synthesized interaction."""
        if self.interaction is not None:
            return self.interaction
        if self._facts.previous_in_segment:
            return self.reopen_previous(event)
        return self.open(event, synthetic=True)

    def agent_for(
        self, event: Event, interaction: Interaction, parent_call: str | None = None
    ) -> Agent | None:
        """The agent an event belongs to: main, or the sub-agent named by parentToolCallId or
        agentId (docs/events.md, "Main agent and sub-agents"); a sub-agent not seen before is
        opened here.

        A sub-agent known by its agentId only (no subagent.started announced it, no
        parentToolCallId names its call: junk, or a log read from its middle) is an orphan:
        its events make spans under the main agent's turn, but never change the task's own
        (they do not move its end, it is not waited for), and an interaction gives orphans
        at most `MAX_ORPHAN_EVENTS` events: past that (or past `MAX_ORPHAN_AGENTS` of them)
        None, and the caller counts the event as unplaced (`otel_bridge.limits.reached`)."""
        parent_call = parent_call or read_str(event.data, "parentToolCallId")
        agent_id = event.agent_id
        if parent_call:
            agent = interaction.subagents.get(parent_call)
            if agent is None:
                agent = self._spans.agent.subagent(
                    interaction, parent_call, None, event.timestamp_ns
                )
        elif agent_id is not None:
            agent = interaction.agents_by_id.get(agent_id)
            if agent is None or agent.orphan:
                return self._orphan(event, interaction, agent_id, agent)
        else:
            return interaction.main
        if agent_id is not None and agent.agent_id is None:
            self._spans.agent.identify(interaction, agent, agent_id)
        return agent

    def _orphan(
        self, event: Event, interaction: Interaction, agent_id: str, agent: Agent | None
    ) -> Agent | None:
        """The orphan sub-agent `agent_id` for `event` (opened if new), within the bounds."""
        self.orphaned = event
        if interaction.orphan_events >= MAX_ORPHAN_EVENTS or (
            agent is None and interaction.orphans >= MAX_ORPHAN_AGENTS
        ):
            self._meter.limit(sc.LIMIT_ORPHAN_AGENTS)
            return None
        interaction.orphan_events += 1
        if agent is None:
            interaction.orphans += 1
            agent = self._spans.agent.subagent(
                interaction, f"agent:{agent_id}", None, event.timestamp_ns, orphan=True
            )
            self._spans.agent.identify(interaction, agent, agent_id)
        return agent

    # --- what an open interaction remembers, bounded ---------------------------------------

    def add_id(self, interaction: Interaction, interaction_id: str) -> None:
        """One of the CLI's interactionIds of this task (`MAX_TASK_IDS` at most)."""
        ids = interaction.interaction_ids
        if interaction_id in ids:
            return
        if len(ids) >= MAX_TASK_IDS:
            self._meter.limit(sc.LIMIT_TASK_IDS)
            return
        ids.add(interaction_id)

    def add_shell(self, interaction: Interaction, shell_id: str) -> None:
        """A background shell of this task still running (`MAX_TASK_IDS` at most: past that,
        the task does not wait for more)."""
        if shell_id not in interaction.shells and len(interaction.shells) >= MAX_TASK_IDS:
            self._meter.limit(sc.LIMIT_TASK_IDS)
            return
        interaction.shells.add(shell_id)

    def requested(self, interaction: Interaction, tool_call_id: str, span_id: int) -> None:
        """The turn (span) that asked for a tool call, until the call starts; past
        `MAX_TOOL_REQUESTS` waiting calls, the oldest request is forgotten (its call, if it
        ever starts, goes under its agent's current turn)."""
        requests = interaction.requested_by
        if tool_call_id not in requests and len(requests) >= MAX_TOOL_REQUESTS:
            del requests[next(iter(requests))]
            self._meter.limit(sc.LIMIT_TOOL_REQUESTS)
        requests[tool_call_id] = span_id

    def forget_ended(self, interaction: Interaction, agent: Agent) -> None:
        """A sub-agent ended: past `MAX_ENDED_SUBAGENTS` ended ones, the oldest is forgotten
        (a late event naming its call would open a new sub-agent span); its LLM calls still
        count for the task."""
        interaction.ended.append(agent.key)
        if len(interaction.ended) <= MAX_ENDED_SUBAGENTS:
            return
        key = interaction.ended.popleft()
        old = interaction.subagents.get(key)
        if old is None or not old.done:  # its call id was taken again, by one still running
            return
        del interaction.subagents[key]
        interaction.forgotten_inference_calls += old.inference_calls
        if old.agent_id is not None and interaction.agents_by_id.get(old.agent_id) is old:
            del interaction.agents_by_id[old.agent_id]
        self._meter.limit(sc.LIMIT_SUBAGENTS)

    # --- closing ---------------------------------------------------------------------------

    def start_segment(self, *, resume: bool = False) -> None:
        """session.start or session.resume: an interaction still open was left by a CLI that
        died without a shutdown. On a resume with tools still running it stays open a little
        longer: the resumed CLI first reports on those tools (`tool.execution_complete` with
        `error.code: interrupted`, then a `session.warning`); `end_killed` closes it after."""
        interaction = self.interaction
        if interaction is not None and interaction.shut_down:
            self.end_of_input()  # shut down cleanly; its sub-agents' last words never came
        elif interaction is not None:
            if resume and interaction.tools and interaction.killed_ns is None:
                interaction.killed_ns = interaction.last_ns
            else:
                self.end_killed()
        self._facts.previous_in_segment = False

    def shutdown(self, end_ns: int) -> None:
        """session.shutdown: the segment is over, and so is the interaction still open, unless
        its loop had stopped only to wait for background sub-agents that still run: CLI 1.0.81
        logs their last turns after the shutdown. That one ends when they do."""
        interaction = self.interaction
        if (
            interaction is not None
            and interaction.awaiting_continuation
            and interaction.killed_ns is None
            and interaction.subagents_running
        ):
            interaction.shut_down = True
            return
        self.end_of_input(end_ns, sc.END_SHUTDOWN)

    def subagent_ended(self, interaction: Interaction, end_ns: int) -> None:
        """A sub-agent ended: after a shutdown that waited for it, the task ends with the
        last one (the main agent does not resume after a shutdown)."""
        if interaction.shut_down and not interaction.subagents_running:
            self.close(end_ns, sc.END_LOOP)

    def end_killed(self) -> None:
        """End the interaction a killed CLI left open, at its last event (incomplete; its
        tools the resumed CLI reported on have ended already, as interrupted). Work that comes
        next belongs to the new segment, not to this interaction."""
        interaction = self.interaction
        if interaction is None:
            return
        end_ns = interaction.last_ns if interaction.killed_ns is None else interaction.killed_ns
        self.close(end_ns, sc.END_SEGMENT, incomplete=True)
        self._facts.previous_in_segment = False

    def loop_ended(self, interaction: Interaction, end_ns: int, reason: str) -> None:
        """The main agent's loop stopped: end the interaction unless more will come."""
        interaction.main.done = True
        running = bool(interaction.shells) or interaction.subagents_running
        if not interaction.task_signal and self._facts.mode == sc.MODE_AUTOPILOT:
            interaction.awaiting_continuation = True  # the CLI may nudge the model on
            # ... unless background sub-agents or shells run: the main agent resumes when they
            # report
            interaction.awaiting_nudge = not running
            return
        if running:
            # Background sub-agents or shells still run; when they report, the CLI resumes the
            # main agent (a read_agent / read_bash call and another turn), so the loop is not
            # over yet.
            interaction.awaiting_continuation = True
            return
        self.close(end_ns, reason)

    def waited_too_long(self, now_ns: int, limit_ns: int) -> bool:
        """True when the open interaction's loop has stopped and has waited more than
        `limit_ns` since its last event for the work it left running (`now_ns`: the time of the
        next event, or the clock of a caller following a quiet log)."""
        interaction = self.interaction
        return (
            interaction is not None
            and interaction.awaiting_continuation
            and now_ns - interaction.last_ns > limit_ns
        )

    def end_of_input(self, end_ns: int | None = None, reason: str = sc.END_OF_INPUT) -> None:
        """Nothing more will come (end of a replayed file, a quiet log, a shutdown at
        `end_ns`): close what is open, incomplete, except a loop that had stopped and was only
        waiting for a continuation: that one ended at its last event. An autopilot loop the CLI
        shut down on without nudging it again was stopped by its continuation limit; at the end
        of the input (no shutdown seen) that is not known, so it is an ordinary loop end."""
        interaction = self.interaction
        if interaction is None:
            return
        if interaction.killed_ns is not None:
            self.end_killed()
        elif interaction.awaiting_continuation:
            limit = reason == sc.END_SHUTDOWN and interaction.awaiting_nudge
            self.close(interaction.last_ns, sc.END_AUTOPILOT_LIMIT if limit else sc.END_LOOP)
        else:
            self.close(interaction.last_ns if end_ns is None else end_ns, reason, incomplete=True)

    def close(
        self, end_ns: int, reason: str, *, incomplete: bool = False, error: Error | None = None
    ) -> None:
        """End the open interaction and everything in it: `error` (an abort, a session error)
        fails what was open; otherwise what was open is incomplete."""
        interaction = self.interaction
        if interaction is None:
            return
        self.interaction = None
        if interaction.autopilot_limit and error is None:  # live: the CLI said so
            reason, incomplete = sc.END_AUTOPILOT_LIMIT, False
        spans = self._spans
        if error is None:  # not an abort: tools a turn_end left running end with that turn
            self.end_dangling(interaction)
        for tool_call_id in list(interaction.tools):
            # a tool its turn_end left running ends (aborted) within that turn: the CLI writes
            # the abort a few ms after the turn_end, sometimes
            tool_end = min(end_ns, interaction.dangling.get(tool_call_id, end_ns))
            spans.tool.finish(
                interaction, tool_call_id, tool_end, error=error, incomplete=error is None
            )
        interaction.dangling.clear()
        for agent in interaction.subagents.values():  # sub-agents before the main agent
            spans.turn.finish(agent, end_ns, error=error, incomplete=error is None)
            if not agent.done:
                spans.agent.finish_subagent(agent, end_ns, error=error, incomplete=error is None)
        spans.turn.finish(interaction.main, end_ns, error=error, incomplete=incomplete)
        if interaction.root_exported:
            return
        spans.agent.finish_root(interaction, end_ns, reason, incomplete=incomplete, error=error)
        # Tool and LLM calls per task: counts of the state, not on any span.
        labels = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
            sc.GEN_AI_AGENT_NAME: interaction.root.attributes.get(
                sc.GEN_AI_AGENT_NAME, sc.MAIN_AGENT_NAME
            ),
        }
        self._meter.record(sc.METRIC_INVOKE_AGENT_TOOL_CALLS, interaction.tool_calls, labels)
        inference_calls = (
            interaction.main.inference_calls
            + interaction.forgotten_inference_calls
            + sum(agent.inference_calls for agent in interaction.subagents.values())
        )
        self._meter.record(sc.METRIC_INVOKE_AGENT_INFERENCE_CALLS, inference_calls, labels)
        self._facts.previous = (interaction.root.trace_id, interaction.root.span_id)
        self._facts.previous_in_segment = True
        self._facts.previous_ids = tuple(sorted(interaction.interaction_ids))[:MAX_IDS]

    def end_dangling(self, interaction: Interaction) -> None:
        """The event after a main turn_end was not an abort: the tools that turn left running
        just never completed; they end, incomplete, at the turn_end."""
        for tool_call_id, end_ns in interaction.dangling.items():
            if tool_call_id in interaction.tools:
                self._spans.tool.finish(interaction, tool_call_id, end_ns, incomplete=True)
        interaction.dangling.clear()
