"""Messages and turns: the user's message, the agents' turns, their answers and LLM calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ... import semconv as sc
from ..._records import SpanEventRecord
from ...decode._events import Event
from .._accounting import count_call
from .._context import on_call
from .._fields import compact, read_obj, read_str
from .._in_flight import turn_started
from .._state import Interaction, Message, Turn

if TYPE_CHECKING:
    from .._parts import Parts

MODES = frozenset({sc.MODE_INTERACTIVE, sc.MODE_PLAN, sc.MODE_AUTOPILOT})
#: Messages a turn keeps for its LLM calls (logs without usage records: one chat span per
#: call); a turn has a few.
MAX_TURN_MESSAGES = 1_000
#: Characters of a turn's answer kept (its size is counted in full; its hash, with a salt, and
#: its text, with content capture, are of what is kept): a turn that never ends must not grow
#: without end.
MAX_ANSWER_CHARS = 1 << 20
DELIVERIES = frozenset({sc.DELIVERY_IDLE, sc.DELIVERY_STEERING, sc.DELIVERY_QUEUED})


def delivery_of(event: Event) -> str:
    """`copilot.delivery` of a user message: idle (sent while the agent waited), steering
    (sent while it worked, into the running task) or queued (held until the task ended).
    Logs older than the field, and values not known, count as idle: a bounded label."""
    delivery = read_str(event.data, "delivery")
    return delivery if delivery in DELIVERIES else sc.DELIVERY_IDLE


def _joins(interaction: Interaction, event: Event) -> bool:
    """A steering message joins the running task when it names one of its interactionIds
    (or names none, or the task's ids are not known: a task read from its middle)."""
    if read_str(event.data, "delivery") != sc.DELIVERY_STEERING:
        return False
    interaction_id = read_str(event.data, "interactionId")
    return (
        interaction_id is None
        or not interaction.interaction_ids
        or interaction_id in interaction.interaction_ids
    )


def on_user_message(parts: Parts, event: Event) -> None:
    """A top-level message opens an interaction (closing the one before); an autopilot
    continuation, or a steering message sent into the running task, joins the current one; a
    sub-agent's own prompt is ignored."""
    if event.agent_id is not None or read_str(event.data, "parentToolCallId"):
        return
    lifecycle = parts.lifecycle
    interaction = lifecycle.interaction
    delivery = delivery_of(event)
    interaction_id = read_str(event.data, "interactionId")
    if (
        interaction is None
        and delivery == sc.DELIVERY_STEERING
        and parts.facts.previous_in_segment
        and interaction_id in parts.facts.previous_ids
    ):
        # Sent as the task's loop stopped, after the bridge had ended it: it is still that
        # task's (the CLI runs it under the task's interactionId), so it goes into its trace.
        interaction = lifecycle.reopen_previous(event)
        lifecycle.add_id(interaction, interaction_id)
    if interaction is not None and _joins(interaction, event):
        _steer(parts, interaction, event, delivery)
        return
    if event.data.get("isAutopilotContinuation") is True:
        _continue(parts, interaction or lifecycle.reopen_previous(event), event, delivery)
        return
    if interaction is not None:
        # an autopilot loop the CLI did not nudge on before this message hit its limit
        lifecycle.close(
            interaction.last_ns,
            sc.END_AUTOPILOT_LIMIT if interaction.awaiting_nudge else sc.END_NEXT_MESSAGE,
            incomplete=not (interaction.awaiting_continuation or interaction.main.done),
        )
    mode = read_str(event.data, "agentMode") or parts.facts.mode
    if mode != parts.facts.mode and mode in MODES:
        parts.facts.mode = mode
    interaction = lifecycle.open(event, synthetic=False)
    parts.meter.add(
        sc.METRIC_USER_MESSAGES, {sc.COPILOT_CONTINUATION: False, sc.COPILOT_DELIVERY: delivery}
    )
    content = event.data.get("content")
    if isinstance(content, str):
        parts.spans.agent.prompt(interaction, content)


def _steer(parts: Parts, interaction: Interaction, event: Event, delivery: str) -> None:
    """A steering message into the running task: the CLI adds it to the running turn's
    conversation, so nothing is cut or opened."""
    interaction.steering += 1
    interaction.user_messages += 1
    parts.meter.add(
        sc.METRIC_USER_MESSAGES,
        {sc.COPILOT_CONTINUATION: False, sc.COPILOT_DELIVERY: delivery},
    )
    parts.spans.factory.add_event(
        interaction.root,
        SpanEventRecord(
            sc.EVENT_STEERING,
            event.timestamp_ns,
            compact(
                {
                    sc.COPILOT_INTERACTION_ID: read_str(event.data, "interactionId"),
                    sc.COPILOT_TURN_ID: read_str(event.data, "turnId"),
                }
            ),
        ),
    )


def _continue(parts: Parts, interaction: Interaction, event: Event, delivery: str) -> None:
    """An autopilot continuation: the CLI nudged the model on, within the same task."""
    interaction.continuations += 1
    interaction.user_messages += 1
    interaction.awaiting_continuation = interaction.awaiting_nudge = False
    interaction_id = read_str(event.data, "interactionId")
    if interaction_id:
        parts.lifecycle.add_id(interaction, interaction_id)
    parts.meter.add(
        sc.METRIC_USER_MESSAGES, {sc.COPILOT_CONTINUATION: True, sc.COPILOT_DELIVERY: delivery}
    )
    parts.meter.add(sc.METRIC_AUTOPILOT_CONTINUATIONS)
    parts.spans.factory.add_event(
        interaction.root,
        SpanEventRecord(
            sc.EVENT_AUTOPILOT_CONTINUATION,
            event.timestamp_ns,
            compact({sc.COPILOT_INTERACTION_ID: interaction_id}),
        ),
    )


def on_turn_start(parts: Parts, event: Event) -> None:
    """A new turn of the event's agent (its previous turn, if still open, ends incomplete)."""
    interaction = parts.lifecycle.ensure(event)
    agent = parts.lifecycle.agent_for(event, interaction)
    if agent is None:  # junk beyond what an interaction takes of it
        parts.unplaced(event)
        return
    if agent.turn is not None:  # its turn_end never came
        parts.spans.turn.finish(agent, event.timestamp_ns, incomplete=True)
    parts.spans.turn.open(interaction, agent, event)
    parts.meter.add(sc.METRIC_TURNS, {sc.COPILOT_AGENT_TYPE: agent.type})
    if agent is interaction.main:
        interaction.awaiting_continuation = interaction.awaiting_nudge = False
        interaction.main.done = False
        interaction_id = read_str(event.data, "interactionId")
        if interaction_id:
            parts.lifecycle.add_id(interaction, interaction_id)
        turn_started(parts, interaction, event.timestamp_ns)


def on_turn_end(parts: Parts, event: Event) -> None:
    """Ends the agent's turn. A main-agent turn whose model answered without asking for tools
    (or after a task_complete) ends the loop."""
    interaction = parts.interaction
    if interaction is None:
        parts.unplaced(event)
        return
    agent = parts.lifecycle.agent_for(event, interaction)
    turn = agent.turn if agent is not None else None
    if agent is None or turn is None:
        parts.unplaced(event)
        return
    if agent is interaction.main:  # held for one event, in case it is an abort
        interaction.dangling.update(
            {
                call: event.timestamp_ns
                for call, tool in interaction.tools.items()
                if tool.agent is agent
            }
        )
    else:
        parts.spans.tool.finish_all_of(interaction, agent, event.timestamp_ns)
    parts.spans.turn.finish(agent, event.timestamp_ns)
    if agent is not interaction.main:
        return
    # A turn whose model calls all failed has no answer at all: a session.error follows, so
    # wait for it.
    answered = bool(turn.messages) or turn.llm_calls > 0
    if interaction.task_signal or (answered and not turn.asked_for_tools):
        parts.lifecycle.loop_ended(
            interaction,
            event.timestamp_ns,
            sc.END_TASK_COMPLETE if interaction.task_signal else sc.END_LOOP,
        )


def on_assistant_message(parts: Parts, event: Event) -> None:
    """Which turn requested which tool calls; whether the turn asked for tools; its answer;
    the message itself, for chat spans of logs without usage records."""
    interaction = parts.lifecycle.ensure(event)
    agent = parts.lifecycle.agent_for(event, interaction)
    if agent is None:
        parts.unplaced(event)
        return
    turn = agent.turn
    owner = agent.current_span
    requests = event.data.get("toolRequests")
    if isinstance(requests, list):
        if not agent.orphan:  # junk does not get to say which turn asked for a real call
            for request in requests:
                call_id = read_str(request, "toolCallId") if isinstance(request, dict) else None
                if call_id:
                    parts.lifecycle.requested(interaction, call_id, owner.span_id)
        if turn is not None and requests:
            turn.asked_for_tools = True
    if turn is not None:
        if len(turn.messages) < MAX_TURN_MESSAGES:
            turn.messages.append(
                Message(
                    event.key,
                    event.timestamp_ns,
                    read_str(event.data, "model"),
                    read_str(event.data, "apiCallId"),
                )
            )
        else:  # only needed for logs without usage records; a turn has a few
            parts.meter.limit(sc.LIMIT_TURN_MESSAGES)
        answer = event.data.get("content")
        if isinstance(answer, str) and answer:
            append_answer(parts, turn, answer)
        if turn.held:  # content capture on: the call's chat span waits for this text
            parts.spans.chat.answered(
                agent, read_str(event.data, "apiCallId"), answer if isinstance(answer, str) else ""
            )


def append_answer(parts: Parts, turn: Turn, text: str) -> None:
    """Add a message's text to its turn's answer, up to `MAX_ANSWER_CHARS` (counted beyond).
    A turn's messages are joined by a newline: glued, the end of one and the start of the
    next could hide a secret's shape from the scrubber (`...nginx` + `echo X | sudo -S`)."""
    if not text:
        return
    if turn.answer_length:
        text = "\n" + text
    turn.answer_length += len(text)
    room = MAX_ANSWER_CHARS - len(turn.answer)
    if len(text) > room:
        text = text[: max(room, 0)]
        parts.meter.limit(sc.LIMIT_ANSWER)
    if text:
        turn.answer += text


def on_usage(parts: Parts, event: Event) -> None:
    """session.usage_record (disk) / assistant.usage (live): one chat span per LLM call. Both
    carry the same accounting.usageId, so a call seen in both gives one span."""
    usage: Mapping[str, Any] | None = read_obj(event.data, "usage")
    if usage is None:
        usage = event.data  # live assistant.usage carries the fields at the top
    interaction = parts.lifecycle.ensure(event)
    call_key = (
        read_str(read_obj(usage, "accounting"), "usageId")
        or read_str(usage, "apiCallId")
        or event.key
    )
    agent = parts.lifecycle.agent_for(event, interaction, read_str(usage, "parentToolCallId"))
    if agent is None:
        parts.unplaced(event)
        return
    if agent.orphan:  # junk does not get to take a real call's key
        call_key = f"{agent.key}\x00{call_key}"
    if interaction.chat_keys.seen(call_key):
        return  # the same call seen twice (disk record and live event)
    record = parts.spans.chat.from_usage(interaction, agent, event, usage, call_key)
    on_call(interaction.context, record.attributes)
    count_call(parts.facts, record.attributes)
