"""The one table from event type to handler. Adding an event type is one handler and one row.

A handler is a plain function `(parts, event) -> None`, grouped by concern in the modules
below. It reads `event.data` with the readers of `_fields`, finds the open interaction in
`parts.interaction` (or `parts.lifecycle.ensure(event)` when the event means work is going
on) and the event's agent with `parts.lifecycle.agent_for`, makes and ends spans through
`parts.spans` (one builder per kind), opens and closes interactions through
`parts.lifecycle`, and counts with `parts.meter`. A type without a row is read and ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from ...decode._events import Event
from .._parts import Parts
from . import _live as live
from . import _messages as messages
from . import _outcomes as outcomes
from . import _session_events as session_events
from . import _skills as skills
from . import _subagents as subagents
from . import _tools as tools

__all__ = ["AFTER_RESUME", "HANDLERS", "KEEP_DANGLING_TOOLS", "OBSERVERS", "Handler"]

Handler = Callable[[Parts, Event], None]

HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        # session segments and facts; context compaction (_session_events.py)
        "session.start": session_events.on_segment_start,
        "session.resume": session_events.on_resume,
        "session.shutdown": session_events.on_shutdown,
        "session.mode_changed": session_events.on_mode_changed,
        "session.model_change": session_events.on_model_change,
        "session.compaction_start": session_events.on_compaction_start,
        "session.compaction_complete": session_events.on_compaction_complete,
        "session.truncation": session_events.on_truncation,
        "session.context_changed": session_events.on_context_changed,  # attribution
        # messages and turns (_messages.py)
        "user.message": messages.on_user_message,
        "assistant.turn_start": messages.on_turn_start,
        "assistant.turn_end": messages.on_turn_end,
        "assistant.message": messages.on_assistant_message,
        "session.usage_record": messages.on_usage,
        "assistant.usage": messages.on_usage,  # live
        # tools (_tools.py)
        "tool.execution_start": tools.on_tool_start,
        "tool.execution_complete": tools.on_tool_complete,
        "permission.requested": tools.on_permission_requested,
        "permission.completed": tools.on_permission_completed,
        "system.notification": tools.on_notification,
        # sub-agents (_subagents.py)
        "subagent.started": subagents.on_subagent_started,
        "subagent.completed": subagents.on_subagent_completed,
        "subagent.failed": subagents.on_subagent_failed,
        "subagent.selected": subagents.on_agent_selected,  # custom agents (--agent)
        "subagent.deselected": subagents.on_agent_deselected,
        # skills (_skills.py)
        "skill.invoked": skills.on_skill_invoked,
        "skill.invoked_ref": skills.on_skill_invoked,
        "skill.context_delivered": skills.on_skill_context_delivered,
        "skill.context_delivered_ref": skills.on_skill_context_delivered,
        # outcomes and errors (_outcomes.py)
        "session.task_complete": outcomes.on_task_complete,
        "session.error": outcomes.on_error,
        "abort": outcomes.on_abort,
        "session.warning": outcomes.on_warning,
        # live only: the SDK stream, never on disk (_live.py)
        "session.idle": live.on_idle,
        "assistant.turn_retry": live.on_turn_retry,
        "model.call_failure": live.on_call_failure,
        "agent.interrupted": live.on_interrupted,
        "session.autopilot_stopped": live.on_autopilot_stopped,
        "user_input.requested": live.on_question,  # waiting for a person (_in_flight.py)
        "user_input.completed": live.on_answer,
        "elicitation.requested": live.on_question,
        "elicitation.completed": live.on_answer,
        "exit_plan_mode.requested": live.on_question,
        "exit_plan_mode.completed": live.on_answer,
    }
)

#: Events that only update what the open task's figures say (the running-now gauges), live
#: only: no span changes and, unlike a handler's, their coming decides nothing (dangling tools,
#: the end of a killed process's task), so that the spans stay what the log says.
OBSERVERS: Mapping[str, Handler] = MappingProxyType(
    {"session.usage_info": session_events.on_usage_info}
)

#: Tools still running at a main-agent turn_end wait for the next event the bridge handles: if
#: it is one of these, its handler ends them (as aborted); any other first ends them,
#: incomplete, at the turn_end (`Lifecycle.end_dangling`). Events without a handler (hooks,
#: system messages) can come between the CLI's turn_end and its abort and decide nothing.
KEEP_DANGLING_TOOLS = frozenset({"abort"})

#: After a SIGKILL, the interaction the killed CLI left open with tools running stays open past
#: `session.resume` while the resumed CLI writes these (its `interrupted` completions of those
#: tools, a `session.warning`, the settings it restored), and types without a handler; any
#: other event first ends it at the killed process's last event (`Lifecycle.end_killed`).
AFTER_RESUME = frozenset(
    {"tool.execution_complete", "session.warning", "session.model_change", "session.mode_changed"}
)
