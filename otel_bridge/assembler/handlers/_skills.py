"""Skills: a skill the model (or the user) invoked, and the skill context the CLI gave the model.

Both are points in time on the turn that invoked the skill (the `skill` tool's turn), or on the
agent's span between turns. The skill's text (`content`) and its file path are not copied: the
text may be long and private, and paths follow the path policy of the span attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import semconv as sc
from ..._records import AttributeValue, SpanEventRecord
from ...decode._events import Event
from .._fields import compact, read_int, read_str

if TYPE_CHECKING:
    from .._parts import Parts

#: The `source` of skill.context_delivered(_ref) is `skill-<invocation name>`.
SKILL_SOURCE_PREFIX = "skill-"


def on_skill_invoked(parts: Parts, event: Event) -> None:
    """skill.invoked / skill.invoked_ref (the same invocation, its text deduplicated): counted
    by skill name, and a `copilot.skill.invoked` event on the invoking agent's turn."""
    name = read_str(event.data, "name") or sc.UNKNOWN
    parts.meter.add(sc.METRIC_SKILLS_INVOKED, {sc.COPILOT_SKILL_NAME: name})
    content = event.data.get("content")  # skill.invoked_ref has only its length
    length = len(content) if isinstance(content, str) else read_int(event.data, "contentLength")
    attributes = compact(
        {
            sc.COPILOT_SKILL_NAME: name,
            sc.COPILOT_SKILL_SOURCE: read_str(event.data, "source"),
            sc.COPILOT_SKILL_TRIGGER: read_str(event.data, "trigger"),
            sc.COPILOT_SKILL_CONTENT_LENGTH: length,
        }
    )
    _put(parts, event, sc.EVENT_SKILL_INVOKED, attributes)


def on_skill_context_delivered(parts: Parts, event: Event) -> None:
    """skill.context_delivered / skill.context_delivered_ref: the skill's text went to the
    model; a `copilot.skill.context_delivered` event naming the skill."""
    source = read_str(event.data, "source")
    name = source.removeprefix(SKILL_SOURCE_PREFIX) if source else None
    _put(parts, event, sc.EVENT_SKILL_CONTEXT_DELIVERED, compact({sc.COPILOT_SKILL_NAME: name}))


def _put(parts: Parts, event: Event, name: str, attributes: dict[str, AttributeValue]) -> None:
    interaction = parts.interaction
    if interaction is None:
        parts.unplaced(event)
        return
    agent = parts.lifecycle.agent_for(event, interaction)
    if agent is None:
        parts.unplaced(event)
        return
    parts.spans.factory.add_event(
        agent.current_span, SpanEventRecord(name, event.timestamp_ns, attributes)
    )
