"""`invoke_agent` spans: the interaction's root (the main agent) and sub-agents."""

from __future__ import annotations

import json
from collections.abc import Callable

from ... import semconv as sc
from ..._records import LinkRecord
from ...decode._events import Event
from .._content import ContentPolicy, as_messages, task_title
from .._context import task_attributes
from .._fields import read_str
from .._root_name import root_name
from .._state import MAIN, Agent, Error, Interaction, OpenSpan, SessionFacts
from ._factory import ID_INTERACTION, ID_SUBAGENT, ID_TOOL, SpanFactory

__all__ = ["UNNAMED_AGENT", "AgentSpans"]

#: The name of a sub-agent whose agentName is not known (yet).
UNNAMED_AGENT = "subagent"


class AgentSpans:
    """`invoke_agent` spans: the interaction's root (the main agent) and sub-agents."""

    __slots__ = (
        "_agent_id_keys",
        "_content",
        "_factory",
        "_facts",
        "_parent",
        "_root_name",
        "_session_name",
    )

    def __init__(
        self,
        factory: SpanFactory,
        content: ContentPolicy,
        facts: SessionFacts,
        parent: tuple[int, int] | None,
        session_name: Callable[[], str | None] | None = None,
        *,
        semconv: str = sc.SEMCONV_RELEASED,
        root_name: str | None = None,
    ) -> None:
        self._factory = factory
        #: `--root-name`: the root's name from its facts when it ends (_root_name.py)
        self._root_name = root_name
        self._content = content
        self._facts = facts
        self._parent = parent
        self._session_name = session_name
        #: copilot.agent.id, its previous name gen_ai.agent.id, or both (`--semconv`)
        self._agent_id_keys = sc.attribute_keys(sc.COPILOT_AGENT_ID, semconv)

    def root(self, event: Event, *, synthetic: bool) -> Interaction:
        """A new interaction opened by `event` (a user message, or work with no message)."""
        facts, parent, key = self._facts, self._parent, event.key
        trace_id = parent[0] if parent is not None else self._factory.trace_id(key)
        # the custom agent selected for this segment (`--agent`), else the default agent
        name = facts.agent_name or sc.MAIN_AGENT_NAME
        attributes = self._factory.genai(sc.OP_INVOKE_AGENT, name)
        attributes[sc.COPILOT_MODE] = facts.mode
        if facts.model:
            attributes[sc.GEN_AI_REQUEST_MODEL] = facts.model
        if facts.copilot_version:
            attributes[sc.COPILOT_VERSION] = facts.copilot_version
        interaction_id = read_str(event.data, "interactionId")
        if interaction_id:
            attributes[sc.COPILOT_INTERACTION_ID] = interaction_id
        if synthetic:
            attributes[sc.COPILOT_SYNTHETIC] = True
        links: tuple[LinkRecord, ...] = ()
        if facts.previous is not None:
            links = (
                LinkRecord(
                    facts.previous[0],
                    facts.previous[1],
                    {sc.COPILOT_LINK_TYPE: sc.LINK_PREVIOUS_INTERACTION},
                ),
            )
        span_id = self._factory.span_id(ID_INTERACTION, key, key)
        root = OpenSpan(
            trace_id,
            span_id,
            parent[1] if parent is not None else None,
            f"{sc.OP_INVOKE_AGENT} {name}",
            event.timestamp_ns,
            attributes=attributes,
            links=links,
            root_span_id=span_id,
        )
        return Interaction(
            trace_id,
            root,
            Agent(MAIN, root),
            last_ns=event.timestamp_ns,
            interaction_ids={interaction_id} if interaction_id else set(),
        )

    def reopened_root(self, previous: tuple[int, int], start_ns: int) -> Interaction:
        """The last interaction again, for work after it was exported: its spans go under its
        root, which is not exported a second time."""
        trace_id, root_id = previous
        root = OpenSpan(trace_id, root_id, None, "", start_ns, root_span_id=root_id)
        return Interaction(trace_id, root, Agent(MAIN, root), root_exported=True, last_ns=start_ns)

    def prompt(self, interaction: Interaction, text: str) -> None:
        """The user's message on the root: size, hash, text (content policy). With content
        capture on, also where LLM viewers look (docs/viewers.md): the root's `input.value`,
        and a readable title beside the fixed span name (its first words, and the session's
        name when the source can read it)."""
        attributes = interaction.root.attributes
        self._content.put(
            attributes, sc.COPILOT_PROMPT, text, sc.GEN_AI_INPUT_MESSAGES, as_messages("user")
        )
        if not self._content.capture:
            return
        self._content.show(attributes, sc.INPUT_VALUE, sc.INPUT_MIME_TYPE, text)
        title = task_title(text)
        if title:
            attributes[sc.COPILOT_TASK_TITLE] = title
        name = self._session_name() if self._session_name is not None else None
        if name:
            attributes[sc.COPILOT_SESSION_NAME] = name

    def aborted(self, interaction: Interaction, reason: str | None) -> None:
        """An abort's reason on the root (the root ends with the rest, as aborted)."""
        interaction.root.attributes[sc.COPILOT_ABORT_REASON] = reason or sc.UNKNOWN

    def finish_root(
        self,
        interaction: Interaction,
        end_ns: int,
        reason: str,
        *,
        incomplete: bool,
        error: Error | None,
    ) -> None:
        """End the interaction's root with the task's outcome and counts."""
        root = interaction.root
        if error is not None:
            root.fail(*error)
            interaction.outcome = (
                sc.OUTCOME_ABORTED if error[0] == sc.ERROR_ABORTED else sc.OUTCOME_ERROR
            )
        if incomplete:
            root.attributes[sc.COPILOT_INCOMPLETE] = True
        outcome = interaction.outcome or sc.OUTCOME_NO_SIGNAL
        root.attributes[sc.COPILOT_TASK_OUTCOME] = outcome
        root.attributes[sc.COPILOT_TASK_FAILED] = outcome in sc.TASK_FAILED_OUTCOMES
        root.attributes[sc.COPILOT_END_REASON] = reason
        root.attributes[sc.COPILOT_TURNS] = interaction.main.turns
        root.attributes[sc.COPILOT_USER_MESSAGES] = interaction.user_messages
        if interaction.continuations:
            root.attributes[sc.COPILOT_CONTINUATIONS] = interaction.continuations
        if interaction.steering:
            root.attributes[sc.COPILOT_STEERING_MESSAGES] = interaction.steering
        root.attributes.update(task_attributes(interaction.context))
        if self._root_name is not None:  # named now: the outcome is known
            facts = {**(self._facts.attribution or {}), **root.attributes}
            root.name = root_name(self._root_name, facts)
        self._factory.emit(root.finish(end_ns))

    def subagent(
        self,
        interaction: Interaction,
        tool_call_id: str,
        name: str | None,
        start_ns: int,
        *,
        orphan: bool = False,
    ) -> Agent:
        """A sub-agent spawned by the call `tool_call_id`, under that call's `execute_tool`
        span; an `orphan` (known by its agentId only) under the main agent's current turn."""
        if orphan:
            parent_id = interaction.main.current_span.span_id
        else:
            parent_id = self._factory.derived_id(ID_TOOL, tool_call_id)
        span_id = self._factory.span_id(ID_SUBAGENT, tool_call_id, f"{tool_call_id}@{start_ns}")
        attributes = self._factory.genai(sc.OP_INVOKE_AGENT)
        attributes[sc.GEN_AI_TOOL_CALL_ID] = tool_call_id
        span = OpenSpan(
            interaction.trace_id,
            span_id,
            parent_id,
            f"{sc.OP_INVOKE_AGENT} {name or UNNAMED_AGENT}",
            start_ns,
            attributes=attributes,
            root_span_id=interaction.root.span_id,
        )
        if name:
            span.attributes[sc.GEN_AI_AGENT_NAME] = name
        self._content.show(
            span.attributes,
            sc.INPUT_VALUE,
            sc.INPUT_MIME_TYPE,
            task_prompt(interaction, tool_call_id),
        )
        agent = Agent(tool_call_id, span, orphan=orphan)
        interaction.subagents[tool_call_id] = agent
        return agent

    def started(
        self,
        interaction: Interaction,
        tool_call_id: str,
        name: str,
        model: str | None,
        start_ns: int,
    ) -> Agent:
        """subagent.started: the sub-agent of `tool_call_id`, new or (if its own events came
        first) named now."""
        agent = interaction.subagents.get(tool_call_id)
        if agent is None:
            agent = self.subagent(interaction, tool_call_id, name, start_ns)
        else:
            agent.span.name = f"{sc.OP_INVOKE_AGENT} {name}"
            agent.span.attributes[sc.GEN_AI_AGENT_NAME] = name
            agent.span.start_ns = min(agent.span.start_ns, start_ns)
        if model:
            agent.span.attributes[sc.GEN_AI_REQUEST_MODEL] = model
        return agent

    def identify(self, interaction: Interaction, agent: Agent, agent_id: str) -> None:
        """Record a sub-agent's own id (`copilot.agent.id`: the CLI's agentId is transient, and
        gen_ai.agent.id now means a stable hosted agent's id) and find it by that id later."""
        agent.agent_id = agent_id
        for key in self._agent_id_keys:
            agent.span.attributes[key] = agent_id
        interaction.agents_by_id[agent_id] = agent

    def finish_subagent(
        self, agent: Agent, end_ns: int, *, error: Error | None = None, incomplete: bool = False
    ) -> None:
        """End a sub-agent: completed, failed with `error`, or incomplete."""
        agent.done = True
        self._factory.finish(agent.span, end_ns, error, incomplete)


def task_prompt(interaction: Interaction, tool_call_id: str) -> str:
    """What a sub-agent was asked: the `prompt` argument of the `task` call that spawned it,
    as its `execute_tool` span holds it (`gen_ai.tool.call.arguments`, there only with content
    capture on); "" when unknown (the call not started yet, other arguments)."""
    tool = interaction.tools.get(tool_call_id)
    arguments = tool.span.attributes.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS) if tool else None
    if not isinstance(arguments, str):
        return ""
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return ""
    prompt = decoded.get("prompt") if isinstance(decoded, dict) else None
    return prompt if isinstance(prompt, str) else ""
