"""Outcomes and errors: how a task ended (task_complete, session.error, abort), and warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import semconv as sc
from ..._records import AttributeValue, SpanEventRecord
from ...decode._events import Event
from .._fields import compact, read_int, read_str

if TYPE_CHECKING:
    from .._parts import Parts


def on_task_complete(parts: Parts, event: Event) -> None:
    """The task's outcome; ends the loop at the end of its turn (or now, if nothing is open).
    `outcome: continue` (the reviewer sent the model back to work) is ignored."""
    interaction = parts.interaction
    if interaction is None or event.agent_id is not None:
        parts.unplaced(event)
        return
    outcome = read_str(event.data, "outcome")
    if outcome == "continue":
        return
    failed = event.data.get("success") is False or outcome == "blocked"
    interaction.outcome = sc.OUTCOME_FAILED if failed else sc.OUTCOME_COMPLETED
    interaction.task_signal = True
    attributes: dict[str, AttributeValue] = {sc.COPILOT_TASK_OUTCOME: interaction.outcome}
    summary = event.data.get("summary")
    if isinstance(summary, str):
        attributes[sc.COPILOT_TASK_SUMMARY_LENGTH] = len(summary)
    parts.spans.factory.add_event(
        interaction.root, SpanEventRecord(sc.EVENT_TASK_COMPLETE, event.timestamp_ns, attributes)
    )
    if interaction.main.turn is None and not interaction.tools:
        parts.lifecycle.loop_ended(interaction, event.timestamp_ns, sc.END_TASK_COMPLETE)


def on_error(parts: Parts, event: Event) -> None:
    """session.error: of the main agent, fails and ends the interaction; of a sub-agent, is
    recorded on its span only."""
    interaction = parts.interaction
    if interaction is None:
        parts.unplaced(event)
        return
    error_type = read_str(event.data, "errorType") or sc.ERROR_SESSION
    message = parts.content.opt_in(read_str(event.data, "message"))
    attributes = compact(
        {
            sc.ERROR_TYPE: error_type,
            sc.COPILOT_ERROR_STATUS_CODE: read_int(event.data, "statusCode"),
            sc.COPILOT_ERROR_MESSAGE: message,
        }
    )
    subagent = event.agent_id is not None
    parts.meter.add(
        sc.METRIC_SESSION_ERRORS,
        {
            sc.ERROR_TYPE: error_type,
            sc.COPILOT_AGENT_TYPE: sc.AGENT_TYPE_SUBAGENT if subagent else sc.AGENT_TYPE_MAIN,
        },
    )
    if event.agent_id is not None:  # a sub-agent's error: recorded where it happened
        agent = interaction.agents_by_id.get(event.agent_id)
        target = agent.span if agent is not None else interaction.root
        if agent is not None and agent.error is None:
            agent.error = (error_type, message)  # it ends failed, however it ends
        parts.spans.factory.add_event(
            target, SpanEventRecord(sc.EVENT_SESSION_ERROR, event.timestamp_ns, attributes)
        )
        return
    parts.spans.factory.add_event(
        interaction.root, SpanEventRecord(sc.EVENT_SESSION_ERROR, event.timestamp_ns, attributes)
    )
    parts.lifecycle.close(event.timestamp_ns, sc.END_SESSION_ERROR, error=(error_type, message))


def on_abort(parts: Parts, event: Event) -> None:
    """abort: everything open ends as aborted (tools a turn_end just left running included)."""
    interaction = parts.interaction
    if interaction is None:
        parts.unplaced(event)
        return
    reason = read_str(event.data, "reason")
    parts.spans.agent.aborted(interaction, reason)
    parts.meter.add(sc.METRIC_ABORTS, {sc.COPILOT_ABORT_REASON: reason or sc.UNKNOWN})
    parts.lifecycle.close(
        event.timestamp_ns,
        sc.END_ABORT,
        error=(sc.ERROR_ABORTED, f"aborted: {reason}" if reason else "aborted"),
    )


def on_warning(parts: Parts, event: Event) -> None:
    """session.warning: a span event on the interaction's root (after a crash and resume, on
    the interaction the killed CLI left: `interrupted_tools`). The text only with content
    capture."""
    interaction = parts.interaction
    if interaction is None:
        parts.unplaced(event)
        return
    parts.spans.factory.add_event(
        interaction.root,
        SpanEventRecord(
            sc.EVENT_SESSION_WARNING,
            event.timestamp_ns,
            compact(
                {
                    sc.COPILOT_WARNING_TYPE: read_str(event.data, "warningType"),
                    sc.COPILOT_WARNING_MESSAGE: parts.content.opt_in(
                        read_str(event.data, "message")
                    ),
                }
            ),
        ),
    )
