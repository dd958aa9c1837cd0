"""Tools: execution start and completion, and the wait for a permission to run one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import semconv as sc
from ..._events import Event
from .._fields import read_obj, read_str

if TYPE_CHECKING:
    from .._session import SessionAssembler

#: Permission requests waiting for an answer that a session remembers.
MAX_OPEN_PERMISSIONS = 1_000


def on_tool_start(session: SessionAssembler, event: Event) -> None:
    interaction = session.lifecycle.ensure(event)
    tool_call_id = read_str(event.data, "toolCallId") or event.key
    if tool_call_id in interaction.tools:
        return  # delivered twice
    agent = session.lifecycle.agent_for(event, interaction)
    session.spans.tool.open(interaction, agent, event, tool_call_id)


def on_tool_complete(session: SessionAssembler, event: Event) -> None:
    interaction = session.interaction
    tool_call_id = read_str(event.data, "toolCallId")
    if interaction is None or not tool_call_id or tool_call_id not in interaction.tools:
        session.unplaced(event)  # e.g. the synthetic completions after a --resume
        return
    session.spans.tool.complete(interaction, tool_call_id, event)


def on_permission_requested(session: SessionAssembler, event: Event) -> None:
    request_id = read_str(event.data, "requestId")
    if request_id is not None and len(session.permissions) < MAX_OPEN_PERMISSIONS:
        tool_call_id = read_str(read_obj(event.data, "permissionRequest"), "toolCallId") or (
            read_str(read_obj(event.data, "promptRequest"), "toolCallId")
        )
        session.permissions[request_id] = (event.timestamp_ns, tool_call_id)


def on_permission_completed(session: SessionAssembler, event: Event) -> None:
    """Time spent waiting for a permission answer (the user, a hook or a policy); the
    decision goes on the tool span it was for (`toolCallId`)."""
    request_id = read_str(event.data, "requestId")
    asked = session.permissions.pop(request_id, None) if request_id is not None else None
    kind = read_str(read_obj(event.data, "result"), "kind")
    interaction = session.interaction
    tool_call_id = read_str(event.data, "toolCallId") or (asked[1] if asked else None)
    if interaction is not None and tool_call_id:
        session.spans.tool.permission(
            interaction, tool_call_id, kind, read_str(event.data, "decisionSource")
        )
    if asked is None:
        return
    asked_ns = asked[0]
    session.meter.record(
        sc.METRIC_PERMISSION_WAIT,
        max(event.timestamp_ns - asked_ns, 0) / 1e9,
        {sc.COPILOT_PERMISSION_RESULT: kind or sc.UNKNOWN},
    )
