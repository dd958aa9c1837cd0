"""`execute_tool <tool>` spans: the running tools of the open interaction."""

from __future__ import annotations

from ... import semconv as sc
from ..._events import Event
from .._content import ContentPolicy, as_json
from .._fields import compact, read_int, read_obj, read_str
from .._state import Agent, Error, Interaction, OpenSpan, Tool
from ._factory import ID_TOOL, SpanFactory

__all__ = ["ToolSpans"]


class ToolSpans:
    """`execute_tool <tool>` spans of the open interaction's running tools."""

    def __init__(self, factory: SpanFactory, content: ContentPolicy) -> None:
        self._factory = factory
        self._content = content

    def open(self, interaction: Interaction, agent: Agent, event: Event, tool_call_id: str) -> None:
        """tool.execution_start: under the turn that requested the call, else the agent's
        current turn, else the agent."""
        parent_id = interaction.requested_by.get(tool_call_id)
        if parent_id is None:
            parent_id = agent.current_span.span_id
        name = read_str(event.data, "toolName") or sc.UNKNOWN
        attributes = self._factory.genai(sc.OP_EXECUTE_TOOL)
        attributes.update(
            compact(
                {
                    sc.GEN_AI_TOOL_NAME: name,
                    sc.GEN_AI_TOOL_CALL_ID: tool_call_id,
                    sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
                    sc.COPILOT_TOOL_MCP_SERVER: read_str(event.data, "mcpServerName"),
                    sc.COPILOT_TURN_ID: read_str(event.data, "turnId"),
                }
            )
        )
        span = OpenSpan(
            interaction.trace_id,
            self._factory.span_id(ID_TOOL, tool_call_id, event.key),
            parent_id,
            f"{sc.OP_EXECUTE_TOOL} {name}",
            event.timestamp_ns,
            attributes=attributes,
        )
        arguments = event.data.get("arguments")
        if arguments is not None:
            self._content.put(
                span.attributes,
                sc.COPILOT_TOOL_ARGUMENTS,
                as_json(arguments),
                sc.GEN_AI_TOOL_CALL_ARGUMENTS,
            )
        interaction.tools[tool_call_id] = Tool(span, agent)
        interaction.tool_calls += 1

    def complete(self, interaction: Interaction, tool_call_id: str, event: Event) -> None:
        """tool.execution_complete: its exit code, result, failure; then end it. A non-zero
        exit is still a successful call."""
        span = interaction.tools[tool_call_id].span
        exit_code = read_int(read_obj(event.data, "shellExecution"), "exitCode")
        if exit_code is not None:
            span.attributes[sc.COPILOT_TOOL_EXIT_CODE] = exit_code
        text = read_str(read_obj(event.data, "result"), "content")
        if text is not None:
            self._content.put(
                span.attributes, sc.COPILOT_TOOL_RESULT, text, sc.GEN_AI_TOOL_CALL_RESULT
            )
        if event.data.get("success") is False:
            error = read_obj(event.data, "error")
            span.fail(
                read_str(error, "code") or sc.ERROR_TOOL_FAILED,
                self._content.opt_in(read_str(error, "message")),
            )
        self.finish(interaction, tool_call_id, event.timestamp_ns)

    def finish(
        self,
        interaction: Interaction,
        tool_call_id: str,
        end_ns: int,
        *,
        error: Error | None = None,
        incomplete: bool = False,
    ) -> None:
        """End a running tool: completed, failed with `error`, or incomplete."""
        tool = interaction.tools.pop(tool_call_id)
        self._factory.finish(tool.span, end_ns, error, incomplete, agent_type=tool.agent.type)
