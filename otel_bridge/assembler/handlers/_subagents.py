"""Sub-agents: spawned by a `task` call, completed, failed or cancelled.

Events of a sub-agent's own turns, messages and tools are handled with the main agent's (in
`_messages.py` and `_tools.py`); `Lifecycle.agent_for` tells whose they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import semconv as sc
from ...decode._events import Event
from .._fields import read_str
from .._state import Error
from ..spans import UNNAMED_AGENT

if TYPE_CHECKING:
    from .._parts import Parts


def on_subagent_started(parts: Parts, event: Event) -> None:
    tool_call_id = read_str(event.data, "toolCallId")
    if not tool_call_id:
        parts.unplaced(event)
        return
    interaction = parts.lifecycle.ensure(event)
    agent = parts.spans.agent.started(
        interaction,
        tool_call_id,
        read_str(event.data, "agentName") or UNNAMED_AGENT,
        read_str(event.data, "model"),
        event.timestamp_ns,
    )
    if event.agent_id is not None:  # subagent.* events carry the sub-agent's own id
        parts.spans.agent.identify(interaction, agent, event.agent_id)


def on_subagent_completed(parts: Parts, event: Event) -> None:
    _end_subagent(parts, event, None)


def on_subagent_failed(parts: Parts, event: Event) -> None:
    message = parts.content.opt_in(read_str(event.data, "error"))
    _end_subagent(parts, event, (sc.ERROR_SUBAGENT_FAILED, message))


def _end_subagent(parts: Parts, event: Event, error: Error | None) -> None:
    """End the sub-agent of `toolCallId` with what it left open. `cancelled` (an abort of it or
    its parent tore it down) makes all of it aborted."""
    interaction = parts.interaction
    agent = (
        interaction.subagents.get(read_str(event.data, "toolCallId") or "")
        if interaction is not None
        else None
    )
    if interaction is None or agent is None or agent.done:
        parts.unplaced(event)
        return
    cut_short: Error | None = None
    if event.data.get("cancelled") is True:
        error = cut_short = (sc.ERROR_ABORTED, None)
    elif error is None:
        error = agent.error  # CLI 1.0.81: subagent.completed after the sub-agent's session.error
    parts.spans.tool.finish_all_of(interaction, agent, event.timestamp_ns, cut_short)
    parts.spans.turn.finish(agent, event.timestamp_ns, error=cut_short, incomplete=True)
    parts.spans.agent.finish_subagent(agent, event.timestamp_ns, error=error)
    parts.lifecycle.forget_ended(interaction, agent)
    parts.lifecycle.subagent_ended(interaction, event.timestamp_ns)


def on_agent_selected(parts: Parts, event: Event) -> None:
    """subagent.selected without agentId: a custom agent runs the session's tasks (`--agent
    NAME`, written before the first user message of each process that selects it); the roots
    of the tasks that follow carry its name. With agentId it is a sub-agent's own selection,
    which `subagent.started` has already named."""
    name = read_str(event.data, "agentName")
    if event.agent_id is None and name:
        parts.facts.agent_name = name


def on_agent_deselected(parts: Parts, event: Event) -> None:
    """subagent.deselected without agentId: back to the default agent."""
    if event.agent_id is None:
        parts.facts.agent_name = None
