"""`execute_tool <tool>` spans: the running tools of the open interaction."""

from __future__ import annotations

from ... import semconv as sc
from ..._records import AttributeValue
from ...decode._events import Event
from .._content import ContentPolicy, as_json
from .._fields import compact, read_int, read_obj, read_str
from .._spanmetrics import tool_outcome
from .._state import Agent, Error, Interaction, OpenSpan, Tool
from ._factory import ID_TOOL, SpanFactory

__all__ = ["ToolSpans"]

#: Decisions for tools not started yet that an interaction keeps (a broken log cannot grow it).
MAX_EARLY_DECISIONS = 1_000


class ToolSpans:
    """`execute_tool <tool>` spans of the open interaction's running tools."""

    __slots__ = ("_content", "_factory")

    def __init__(self, factory: SpanFactory, content: ContentPolicy) -> None:
        self._factory = factory
        self._content = content

    def open(self, interaction: Interaction, agent: Agent, event: Event, tool_call_id: str) -> None:
        """tool.execution_start: under the turn that requested the call, else the agent's
        current turn, else the agent."""
        parent_id = interaction.requested_by.pop(tool_call_id, None)
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
                    sc.COPILOT_TURN_ID: read_str(event.data, "turnId"),
                }
            )
        )
        attributes.update(mcp_attributes(event))
        attributes.update(interaction.decisions.pop(tool_call_id, {}))
        span = OpenSpan(
            interaction.trace_id,
            self._factory.span_id(ID_TOOL, tool_call_id, event.key),
            parent_id,
            f"{sc.OP_EXECUTE_TOOL} {name}",
            event.timestamp_ns,
            attributes=attributes,
            root_span_id=interaction.root.span_id,
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
            code = read_str(error, "code") or sc.ERROR_TOOL_FAILED
            span.fail(code, self._content.opt_in(read_str(error, "message")))
            category = read_str(
                read_obj(read_obj(event.data, "toolTelemetry"), "properties"), "failure_category"
            )
            if category:
                span.attributes[sc.COPILOT_TOOL_FAILURE_CATEGORY] = category
            if code == sc.ERROR_DENIED:  # refused by a rule, or by a decision seen before
                span.attributes.setdefault(sc.COPILOT_PERMISSION_DECISION, sc.PERMISSION_DENIED)
        end_ns = event.timestamp_ns
        if interaction.killed_ns is not None:
            # The resumed CLI's report of a tool the crash cut off: it ended, at the latest,
            # when the killed process wrote its last event (docs/architecture.md).
            end_ns = min(end_ns, interaction.killed_ns)
        self.finish(interaction, tool_call_id, end_ns)

    def permission(
        self,
        interaction: Interaction,
        tool_call_id: str,
        result: str | None,
        source: str | None,
    ) -> None:
        """permission.completed: the decision goes on the tool's span (a denied tool then
        completes with `error.code: denied`); kept until the tool starts if it has not yet."""
        decision = compact(
            {
                sc.COPILOT_PERMISSION_DECISION: permission_decision(result),
                sc.COPILOT_PERMISSION_RESULT: result,
                sc.COPILOT_PERMISSION_DECISION_SOURCE: source,
            }
        )
        tool = interaction.tools.get(tool_call_id)
        if tool is not None:
            tool.span.attributes.update(decision)
        elif len(interaction.decisions) < MAX_EARLY_DECISIONS:
            interaction.decisions[tool_call_id] = decision

    def finish_all_of(
        self, interaction: Interaction, agent: Agent, end_ns: int, error: Error | None = None
    ) -> None:
        """Close the tools of `agent` that never reported completion: incomplete, or failed
        with `error`."""
        for tool_call_id, tool in list(interaction.tools.items()):
            if tool.agent is agent:
                self.finish(
                    interaction, tool_call_id, end_ns, error=error, incomplete=error is None
                )

    def finish(
        self,
        interaction: Interaction,
        tool_call_id: str,
        end_ns: int,
        *,
        error: Error | None = None,
        incomplete: bool = False,
    ) -> None:
        """End a running tool: completed, failed with `error`, or incomplete; its outcome
        (`copilot.tool.outcome`, as its copilot.tool.calls counts it) on it."""
        tool = interaction.tools.pop(tool_call_id)
        span = tool.span
        if error is not None:
            span.fail(*error)
        elif incomplete:
            span.attributes[sc.COPILOT_INCOMPLETE] = True
        span.attributes[sc.COPILOT_TOOL_OUTCOME] = tool_outcome(span.attributes, span.status)
        self._factory.finish(span, end_ns, agent_type=tool.agent.type)


def permission_decision(result: str | None) -> str | None:
    """approved, denied or cancelled, from the CLI's result kind (`approved-for-session`,
    `denied-by-rules`, `denied-no-approval-rule-and-could-not-request-from-user`...)."""
    if result is None:
        return None
    for decision in (sc.PERMISSION_APPROVED, sc.PERMISSION_DENIED, sc.PERMISSION_CANCELLED):
        if result == decision or result.startswith(decision + "-"):
            return decision
    return result


#: `mcpTransport` of the CLI -> `network.transport` of the MCP conventions.
MCP_TRANSPORTS = {
    "stdio": sc.NETWORK_TRANSPORT_PIPE,
    "local": sc.NETWORK_TRANSPORT_PIPE,
    "http": sc.NETWORK_TRANSPORT_TCP,
    "sse": sc.NETWORK_TRANSPORT_TCP,
    "streamable-http": sc.NETWORK_TRANSPORT_TCP,
}


def mcp_attributes(event: Event) -> dict[str, AttributeValue]:
    """The MCP attributes of a tool.execution_start that names an MCP server (semconv.py says
    which conventions): none for the CLI's own tools."""
    server = read_str(event.data, "mcpServerName")
    if not server:
        return {}
    transport = read_str(event.data, "mcpTransport")
    return compact(
        {
            sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_EXTENSION,
            sc.MCP_METHOD_NAME: sc.MCP_METHOD_TOOLS_CALL,
            sc.NETWORK_TRANSPORT: MCP_TRANSPORTS.get(transport.lower()) if transport else None,
            sc.COPILOT_TOOL_MCP_SERVER: server,
            sc.COPILOT_TOOL_MCP_TOOL: read_str(event.data, "mcpToolName"),
            sc.COPILOT_TOOL_MCP_TRANSPORT: transport,
        }
    )
