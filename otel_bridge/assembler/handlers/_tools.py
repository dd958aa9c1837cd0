"""Tools: execution start and completion, background shells, and the wait for a permission
to run one."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ... import semconv as sc
from ..._records import SpanEventRecord
from ...decode._events import Event
from .._accounting import tool_changes
from .._fields import compact, read_int, read_obj, read_str
from .._in_flight import tool_called, tool_ended

if TYPE_CHECKING:
    from .._parts import Parts
    from .._state import Interaction

#: Permission requests waiting for an answer that a session remembers.
MAX_OPEN_PERMISSIONS = 1_000
#: Tools an interaction has running at once, at most: past that, the one running longest ends
#: (incomplete) as another starts, so that tools that never complete cannot grow a task that
#: never ends.
MAX_RUNNING_TOOLS = 1_000
#: Tools that run shell commands, which may go on in the background.
SHELL_TOOLS = frozenset({"bash", "powershell"})
#: The result of a shell call that went on in the background names its shell: "<command
#: started in background with shellId: X>" (mode async), "<command with shellId: X moved to
#: background by the user...>" (a steering message), and the like for a sync call past its wait.
BACKGROUND_RESULT = re.compile(r"<command\b[^>]*?\bshellId: ([^\s>]+)")
#: system.notification kinds that report the end of a background shell.
SHELL_DONE = frozenset({"shell_completed", "shell_detached_completed"})


def on_tool_start(parts: Parts, event: Event) -> None:
    interaction = parts.lifecycle.ensure(event)
    agent = parts.lifecycle.agent_for(event, interaction)
    if agent is None:
        parts.unplaced(event)
        return
    tool_call_id = read_str(event.data, "toolCallId") or event.key
    if agent.orphan:  # junk does not get to take a real call's id
        tool_call_id = f"{agent.key}:{tool_call_id}"
    if tool_call_id in interaction.tools:
        return  # delivered twice
    if len(interaction.tools) >= MAX_RUNNING_TOOLS:
        parts.spans.tool.finish(
            interaction, next(iter(interaction.tools)), event.timestamp_ns, incomplete=True
        )
        parts.meter.limit(sc.LIMIT_RUNNING_TOOLS)
    parts.spans.tool.open(interaction, agent, event, tool_call_id)
    arguments = read_obj(event.data, "arguments")
    if arguments is not None and arguments.get("detach") is True:
        interaction.tools[tool_call_id].detached = True
    if not agent.orphan:
        name = _tool_name(interaction, tool_call_id)
        arguments_value = event.data.get("arguments")
        tool_called(parts, interaction, name, arguments_value, event.timestamp_ns)


def on_tool_complete(parts: Parts, event: Event) -> None:
    """Ends the tool. A shell call that went on in the background (its result names the
    shell) keeps its task open until the shell reports: see `on_notification`."""
    interaction = parts.interaction
    tool_call_id = read_str(event.data, "toolCallId")
    if interaction is not None and tool_call_id:
        tool_call_id = orphan_key(interaction, event, tool_call_id)
    if interaction is None or not tool_call_id or tool_call_id not in interaction.tools:
        parts.unplaced(event)  # e.g. the synthetic completions after a --resume
        return
    tool = interaction.tools[tool_call_id]
    shell = tool.span.attributes.get(sc.GEN_AI_TOOL_NAME) in SHELL_TOOLS and not tool.detached
    # lines and files an edit tool changed (summed on the task's root, unless junk's)
    tool_changes(interaction, tool.span, event.data, to_root=not tool.agent.orphan)
    name = _tool_name(interaction, tool_call_id)
    parts.spans.tool.complete(interaction, tool_call_id, event)
    if not tool.agent.orphan:
        failed = event.data.get("success") is False
        tool_ended(parts, interaction, name, failed, event.timestamp_ns)
    if shell and event.data.get("success") is not False:
        match = BACKGROUND_RESULT.search(read_str(read_obj(event.data, "result"), "content") or "")
        if match and not tool.agent.orphan:
            parts.lifecycle.add_shell(interaction, match.group(1))


def _tool_name(interaction: Interaction, tool_call_id: str) -> str:
    """The running tool's name, as its span has it."""
    name = interaction.tools[tool_call_id].span.attributes.get(sc.GEN_AI_TOOL_NAME)
    return name if isinstance(name, str) else sc.UNKNOWN


def orphan_key(interaction: Interaction, event: Event, tool_call_id: str) -> str:
    """The key a tool call of an orphan sub-agent is kept under (`on_tool_start`)."""
    agent = interaction.agents_by_id.get(event.agent_id) if event.agent_id else None
    if agent is not None and agent.orphan and not read_str(event.data, "parentToolCallId"):
        return f"{agent.key}:{tool_call_id}"
    return tool_call_id


def on_notification(parts: Parts, event: Event) -> None:
    """system.notification: a background shell of the open task finished (a span event on its
    root); the CLI now resumes the task's loop (a read_bash call outside any turn, then a turn
    "0" under the task's interactionId), which ends the task in its turn. Other kinds (a
    background agent, an instruction file found) need nothing here."""
    kind = read_obj(event.data, "kind")
    shell_id = read_str(kind, "shellId")
    interaction = parts.interaction
    if read_str(kind, "type") not in SHELL_DONE or shell_id is None:
        return
    if interaction is None or shell_id not in interaction.shells:
        parts.unplaced(event)
        return
    interaction.shells.discard(shell_id)
    parts.spans.factory.add_event(
        interaction.root,
        SpanEventRecord(
            sc.EVENT_SHELL_COMPLETED,
            event.timestamp_ns,
            compact(
                {
                    sc.COPILOT_SHELL_ID: shell_id,
                    sc.COPILOT_TOOL_EXIT_CODE: read_int(kind, "exitCode"),
                }
            ),
        ),
    )


def on_permission_requested(parts: Parts, event: Event) -> None:
    request_id = read_str(event.data, "requestId")
    if request_id is not None and len(parts.permissions) < MAX_OPEN_PERMISSIONS:
        tool_call_id = read_str(read_obj(event.data, "permissionRequest"), "toolCallId") or (
            read_str(read_obj(event.data, "promptRequest"), "toolCallId")
        )
        parts.permissions[request_id] = (event.timestamp_ns, tool_call_id)


def on_permission_completed(parts: Parts, event: Event) -> None:
    """Time spent waiting for a permission answer (the user, a hook or a policy); the
    decision goes on the tool span it was for (`toolCallId`)."""
    request_id = read_str(event.data, "requestId")
    asked = parts.permissions.pop(request_id, None) if request_id is not None else None
    kind = read_str(read_obj(event.data, "result"), "kind")
    interaction = parts.interaction
    tool_call_id = read_str(event.data, "toolCallId") or (asked[1] if asked else None)
    if interaction is not None and tool_call_id:
        parts.spans.tool.permission(
            interaction, tool_call_id, kind, read_str(event.data, "decisionSource")
        )
    if asked is None:
        return
    asked_ns = asked[0]
    parts.meter.record(
        sc.METRIC_PERMISSION_WAIT,
        max(event.timestamp_ns - asked_ns, 0) / 1e9,
        {sc.COPILOT_PERMISSION_RESULT: kind or sc.UNKNOWN},
    )
