"""Live-only events: the SDK stream has them, the log never does (docs/events.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import semconv as sc
from ..._records import SpanEventRecord
from ...decode._events import Event
from .._fields import compact, read_str

if TYPE_CHECKING:
    from .._parts import Parts


def on_idle(parts: Parts, event: Event) -> None:
    """session.idle: the loop is over, background agents included. The one end signal the
    log never has; with `aborted`, it closes what an abort left open."""
    interaction = parts.interaction
    if interaction is None or event.agent_id is not None:
        return
    if event.data.get("aborted") is True:
        parts.lifecycle.close(event.timestamp_ns, sc.END_ABORT, error=(sc.ERROR_ABORTED, "aborted"))
    else:
        parts.lifecycle.close(
            event.timestamp_ns,
            sc.END_IDLE,
            incomplete=not (interaction.main.done or interaction.awaiting_continuation),
        )


def on_turn_retry(parts: Parts, event: Event) -> None:
    """assistant.turn_retry: a span event on the agent's turn."""
    interaction = parts.interaction
    if interaction is None:
        return
    agent = parts.lifecycle.agent_for(event, interaction)
    if agent is None:
        parts.unplaced(event)
        return
    parts.spans.factory.add_event(
        agent.current_span,
        SpanEventRecord(
            sc.EVENT_TURN_RETRY,
            event.timestamp_ns,
            compact(
                {
                    sc.COPILOT_RETRY_REASON: read_str(event.data, "reason"),
                    sc.GEN_AI_REQUEST_MODEL: read_str(event.data, "model"),
                }
            ),
        ),
    )


def on_call_failure(parts: Parts, event: Event) -> None:
    """model.call_failure: a failed chat span per failed attempt."""
    interaction = parts.lifecycle.ensure(event)
    agent = parts.lifecycle.agent_for(event, interaction)
    if agent is None:
        parts.unplaced(event)
        return
    parts.spans.chat.failed_call(interaction, agent, event)


def on_interrupted(parts: Parts, event: Event) -> None:
    """agent.interrupted: the user stopped the agent; the tools it names will not finish."""
    interaction = parts.interaction
    calls = event.data.get("toolCallIds")
    if interaction is None or not isinstance(calls, list):
        return
    for call in calls:
        if isinstance(call, str) and call in interaction.tools:
            parts.spans.tool.finish(
                interaction, call, event.timestamp_ns, error=(sc.ERROR_ABORTED, "interrupted")
            )


def on_autopilot_stopped(parts: Parts, event: Event) -> None:
    """session.autopilot_stopped: the CLI will not nudge this task on. Its reason goes on the
    root; `cap_reached` (`--max-autopilot-continues`) makes the end reason `autopilot_limit`,
    and ends the task now if its loop had stopped (else at the end that follows)."""
    interaction = parts.interaction
    reason = read_str(event.data, "reason")
    if interaction is None or event.agent_id is not None or reason is None:
        return
    if not interaction.root_exported:
        interaction.root.attributes[sc.COPILOT_AUTOPILOT_STOP_REASON] = reason
    if reason != sc.AUTOPILOT_CAP_REACHED:
        return
    interaction.autopilot_limit = True
    if interaction.awaiting_nudge:
        parts.lifecycle.close(interaction.last_ns, sc.END_AUTOPILOT_LIMIT)


#: Live requests for a person's answer, by type: what the task waits for until its
#: completion comes (docs/metrics.md, "Running now").
QUESTIONS = {
    "user_input.requested": sc.WAIT_QUESTION,
    "elicitation.requested": sc.WAIT_QUESTION,
    "exit_plan_mode.requested": sc.WAIT_PLAN_APPROVAL,
}
#: Live requests a task keeps waiting, at most (a stream of requests never answered).
MAX_QUESTIONS = 100


def on_question(parts: Parts, event: Event) -> None:
    """user_input / elicitation / exit_plan_mode .requested: the task waits for a person
    until the request's completion (a task counts once per kind of wait: the tool's own call,
    ask_user or exit_plan_mode, and its request are one wait)."""
    interaction = parts.interaction
    request = read_str(event.data, "requestId")
    if interaction is None or request is None:
        parts.unplaced(event)
        return
    questions = interaction.watch.questions
    if len(questions) < MAX_QUESTIONS:
        # the first request of an id says since when it waits
        questions.setdefault(
            request, (QUESTIONS.get(event.type, sc.WAIT_QUESTION), event.timestamp_ns)
        )


def on_answer(parts: Parts, event: Event) -> None:
    """The completion of a live request: the wait is over."""
    interaction = parts.interaction
    request = read_str(event.data, "requestId")
    if interaction is not None and request is not None:
        interaction.watch.questions.pop(request, None)
