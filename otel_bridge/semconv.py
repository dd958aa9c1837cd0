"""Attribute names and values the bridge writes, in one place.

GenAI names follow the OpenTelemetry semantic conventions as of schema 1.44.0 (the revision that
opentelemetry-semantic-conventions 0.66b2 ships, under `_incubating`). They are copied here rather
than imported because the Python package marks them incubating and moves them between releases;
a rename upstream must be a deliberate change here, not a silent one in a dependency.
Copilot-specific facts live under `copilot.*`.
"""

from __future__ import annotations

from typing import Final

SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.44.0"

# --- GenAI semantic conventions -------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
ERROR_TYPE: Final = "error.type"

# gen_ai.operation.name values
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"

#: gen_ai.provider.name: the CLI's own telemetry says "github"; we match it so that both sources
#: group together in a backend.
PROVIDER_GITHUB: Final = "github"
#: gen_ai.agent.name of the main agent.
MAIN_AGENT_NAME: Final = "copilot"

# --- Copilot-specific ----------------------------------------------------------------------
COPILOT_VERSION: Final = "copilot.version"
COPILOT_INTERACTION_ID: Final = "copilot.interaction.id"
COPILOT_TURN_ID: Final = "copilot.turn.id"
COPILOT_TURN_INDEX: Final = "copilot.turn.index"
COPILOT_TURNS: Final = "copilot.turns"
COPILOT_MODE: Final = "copilot.mode"
COPILOT_INITIATOR: Final = "copilot.initiator"
COPILOT_TASK_OUTCOME: Final = "copilot.task.outcome"
COPILOT_TASK_SUMMARY_LENGTH: Final = "copilot.task.summary_length"
COPILOT_USER_MESSAGES: Final = "copilot.user_messages"
COPILOT_CONTINUATIONS: Final = "copilot.autopilot.continuations"
COPILOT_INCOMPLETE: Final = "copilot.incomplete"
COPILOT_SYNTHETIC: Final = "copilot.synthetic"
COPILOT_USAGE_COST: Final = "copilot.usage.cost"
COPILOT_USAGE_DURATION_MS: Final = "copilot.usage.duration_ms"
COPILOT_TOOL_EXIT_CODE: Final = "copilot.tool.exit_code"
COPILOT_TOOL_MCP_SERVER: Final = "copilot.tool.mcp_server"
COPILOT_ERROR_MESSAGE: Final = "copilot.error.message"
COPILOT_ERROR_STATUS_CODE: Final = "copilot.error.status_code"
COPILOT_ABORT_REASON: Final = "copilot.abort.reason"
COPILOT_END_REASON: Final = "copilot.end_reason"

# copilot.task.outcome values (docs/metrics.md, copilot.tasks)
OUTCOME_COMPLETED: Final = "completed"
OUTCOME_FAILED: Final = "failed"
OUTCOME_ERROR: Final = "error"
OUTCOME_ABORTED: Final = "aborted"
OUTCOME_NO_SIGNAL: Final = "no_signal"

# error.type values of our own (others come from the log: session.error errorType, tool codes)
ERROR_ABORTED: Final = "aborted"
ERROR_TOOL_FAILED: Final = "tool_error"
ERROR_SUBAGENT_FAILED: Final = "subagent_failed"
