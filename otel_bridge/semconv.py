"""Attribute names and values the bridge writes, in one place.

GenAI names follow open-telemetry/semantic-conventions-genai, where the GenAI conventions moved
after semantic-conventions 1.41.0 (1.42.0 deprecated the gen_ai.* names there), as read at
commit 32c328e85013588c6fe32ebc30934ab5b1752b6a: that repository has made no release yet
(CHANGELOG.md has only "Unreleased"; its README names the schema
https://opentelemetry.io/schemas/gen-ai/1.42.0). They are the names GitHub Copilot CLI
1.0.102's own telemetry emits. Other names (VCS, resource, error) follow semantic-conventions
1.44.0 (the revision that opentelemetry-semantic-conventions 0.66b2 ships, under
`_incubating`), whose schema URL the bridge's meter and tracer carry. Names are copied here
rather than imported because the Python package marks them incubating and moves them between
releases; a rename upstream must be a deliberate change here, not a silent one in a dependency.
The names the GenAI move renamed are in `RENAMED`; `--semconv previous|both` still emits the
old ones (docs/metrics.md, "Convention version").
Copilot-specific facts live under `copilot.*`. The assembler writes no attribute, span event or
metric name that is not defined here.
"""

from __future__ import annotations

from typing import Final, NewType

#: A metric's name: only the METRIC_* names of this module are one (mypy holds the assembler's
#: meter and the catalogue to them).
MetricName = NewType("MetricName", str)

SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.44.0"

# --- GenAI semantic conventions -------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
#: Previous name of a sub-agent's id (`copilot.agent.id` now): the genai repository's #242
#: made gen_ai.agent.id "a stable hosted-agent identifier. Don't use transient instance IDs",
#: and the CLI's agentId is one such transient id.
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"
#: Previous name of gen_ai.usage.cache_write.input_tokens (genai repository #440).
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
#: A label of the previous gen_ai.client.token.usage only (removed by genai repository #374).
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
ERROR_TYPE: Final = "error.type"

# gen_ai.operation.name values
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"

#: The name of every turn span. A span name is what a backend makes an operation of (Jaeger's
#: operation list, the Collector's spanmetrics connector): it says what kind of step a span is,
#: never which one, or a long task would add a name per turn. The turn's place in the task is
#: its copilot.turn.index; the other names are the GenAI `{operation} {name}` with a bounded
#: name (agent, model, tool).
SPAN_TURN: Final = "turn"

#: gen_ai.provider.name: the CLI's own telemetry says "github"; we match it so that both sources
#: group together in a backend.
PROVIDER_GITHUB: Final = "github"
#: gen_ai.agent.name of the main agent.
MAIN_AGENT_NAME: Final = "copilot"
#: gen_ai.tool.type of every tool the CLI runs.
TOOL_TYPE_FUNCTION: Final = "function"
# gen_ai.token.type values
TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"

# --- Copilot-specific ----------------------------------------------------------------------
COPILOT_VERSION: Final = "copilot.version"
#: A sub-agent's id as the CLI gives it (`agentId`: transient, one per run).
COPILOT_AGENT_ID: Final = "copilot.agent.id"
COPILOT_INTERACTION_ID: Final = "copilot.interaction.id"
COPILOT_TURN_ID: Final = "copilot.turn.id"
COPILOT_TURN_INDEX: Final = "copilot.turn.index"
COPILOT_TURNS: Final = "copilot.turns"
COPILOT_MODE: Final = "copilot.mode"
COPILOT_INITIATOR: Final = "copilot.initiator"
COPILOT_TASK_OUTCOME: Final = "copilot.task.outcome"
#: On a task's root, beside its outcome: true when the task failed (TASK_FAILED_OUTCOMES), else
#: false. One value to search for: Jaeger's search matches a tag's value exactly (no "or", no
#: "not"), and its `error=true` finds nothing in some versions (docs/viewers.md).
COPILOT_TASK_FAILED: Final = "copilot.task.failed"
COPILOT_TASK_SUMMARY_LENGTH: Final = "copilot.task.summary_length"
COPILOT_USER_MESSAGES: Final = "copilot.user_messages"
COPILOT_CONTINUATIONS: Final = "copilot.autopilot.continuations"
COPILOT_STEERING_MESSAGES: Final = "copilot.steering_messages"
COPILOT_SHELL_ID: Final = "copilot.shell.id"
COPILOT_INCOMPLETE: Final = "copilot.incomplete"
COPILOT_SYNTHETIC: Final = "copilot.synthetic"
COPILOT_USAGE_COST: Final = "copilot.usage.cost"
COPILOT_USAGE_DURATION_MS: Final = "copilot.usage.duration_ms"
# --- cost and code changes (assembler/_accounting.py, docs/metrics.md "Cost and code changes").
# The GenAI conventions define tokens and durations but no cost (semantic-conventions-genai,
# docs/gen-ai/gen-ai-metrics.md and gen-ai-token-metrics.md), and premium requests and AI
# credits are GitHub's own units: so copilot.*.
#: A chat span's AI credits in nano-AIU (`copilotUsage.totalNanoAiu`), when the call reported
#: an amount; and the CLI's `aiCreditsStatus` (complete, partial, unavailable).
COPILOT_USAGE_AI_CREDITS: Final = "copilot.usage.ai_credits"
COPILOT_USAGE_AI_CREDITS_STATUS: Final = "copilot.usage.ai_credits.status"
#: A bring-your-own-key call (`isByok`): its cost of 0 is not a price, so it carries none.
COPILOT_USAGE_BYOK: Final = "copilot.usage.byok"
#: What a session segment added to the CLI's accounting (session.shutdown: the difference from
#: the previous snapshot), on the task the shutdown ends, if one is still open.
COPILOT_SESSION_PREMIUM_REQUESTS: Final = "copilot.session.premium_requests"
COPILOT_SESSION_AI_CREDITS: Final = "copilot.session.ai_credits"
COPILOT_SESSION_AI_CREDITS_STATUS: Final = "copilot.session.ai_credits.status"
COPILOT_SESSION_LINES_ADDED: Final = "copilot.session.lines_added"
COPILOT_SESSION_LINES_REMOVED: Final = "copilot.session.lines_removed"
COPILOT_SESSION_FILES_MODIFIED: Final = "copilot.session.files_modified"
#: Lines an edit tool added and removed and the files it wrote (paths, rewritten by --paths),
#: on its span; the lines its task's edit tools changed, on the task's root.
COPILOT_CODE_LINES_ADDED: Final = "copilot.code.lines_added"
COPILOT_CODE_LINES_REMOVED: Final = "copilot.code.lines_removed"
COPILOT_CODE_FILES: Final = "copilot.code.files"
COPILOT_TASK_LINES_ADDED: Final = "copilot.task.lines_added"
COPILOT_TASK_LINES_REMOVED: Final = "copilot.task.lines_removed"
#: copilot.code.lines label: added or removed.
COPILOT_CHANGE: Final = "copilot.change"
CHANGE_ADDED: Final = "added"
CHANGE_REMOVED: Final = "removed"
#: On a chat span made from assistant.message (a CLI that writes no usage records, < 1.0.102):
#: its tokens are unknown, so it has no gen_ai.usage.* (absent, not zero).
COPILOT_USAGE_UNKNOWN: Final = "copilot.usage.unknown"
# --- context-window pressure (assembler/_context.py; docs/spans.md "Context window") ---------
#: On a chat span (a usage record): the prompt tokens of that call, its model's prompt limit
#: (`maxPromptTokens`) and their ratio. The tokens are `inputTokens`, which already holds the
#: cache-read tokens (the CLI writes the provider's prompt tokens, cached ones included).
COPILOT_CONTEXT_TOKENS: Final = "copilot.context.tokens"
COPILOT_CONTEXT_LIMIT: Final = "copilot.context.limit"
COPILOT_CONTEXT_UTILIZATION: Final = "copilot.context.utilization"
#: On a task's root: the highest utilization of its calls (with that call's tokens and limit),
#: the compactions and truncations inside it and the tokens they removed (absent when none).
COPILOT_TASK_CONTEXT_MAX_UTILIZATION: Final = "copilot.task.context.max_utilization"
COPILOT_TASK_CONTEXT_TOKENS: Final = "copilot.task.context.tokens"
COPILOT_TASK_CONTEXT_LIMIT: Final = "copilot.task.context.limit"
COPILOT_TASK_COMPACTIONS: Final = "copilot.task.compactions"
COPILOT_TASK_TRUNCATIONS: Final = "copilot.task.truncations"
COPILOT_TASK_CONTEXT_TOKENS_REMOVED: Final = "copilot.task.context.tokens_removed"
COPILOT_TOOL_EXIT_CODE: Final = "copilot.tool.exit_code"
COPILOT_TOOL_MCP_SERVER: Final = "copilot.tool.mcp_server"
COPILOT_ERROR_MESSAGE: Final = "copilot.error.message"
COPILOT_ERROR_STATUS_CODE: Final = "copilot.error.status_code"
COPILOT_ABORT_REASON: Final = "copilot.abort.reason"
COPILOT_END_REASON: Final = "copilot.end_reason"
COPILOT_RETRY_REASON: Final = "copilot.retry.reason"
COPILOT_RETRY_ATTEMPT: Final = "copilot.retry.attempt"
COPILOT_LINK_TYPE: Final = "copilot.link.type"  # on links
#: Names taken from the log: span events `copilot.<type without "session.">` and their
#: attributes `copilot.<field in snake case>` (compaction and truncation events).
COPILOT_NAMESPACE: Final = "copilot."

# Texts from the log: `<prefix>.length` always, `<prefix>.sha256` with a hash salt; the text
# itself goes under a GenAI name, and only with content capture on (docs/privacy.md).
COPILOT_PROMPT: Final = "copilot.prompt"
COPILOT_RESPONSE: Final = "copilot.response"
COPILOT_TOOL_ARGUMENTS: Final = "copilot.tool.arguments"
COPILOT_TOOL_RESULT: Final = "copilot.tool.result"
LENGTH_SUFFIX: Final = ".length"
SHA256_SUFFIX: Final = ".sha256"

# Metric attributes of our own (docs/metrics.md)
COPILOT_AGENT_TYPE: Final = "copilot.agent.type"
#: also on every execute_tool span: the label of its copilot.tool.calls, and one value to search
#: a backend for (copilot.tool.outcome=error)
COPILOT_TOOL_OUTCOME: Final = "copilot.tool.outcome"
COPILOT_CONTINUATION: Final = "copilot.continuation"
COPILOT_DELIVERY: Final = "copilot.delivery"
COPILOT_COMPACTION_OUTCOME: Final = "copilot.compaction.outcome"
COPILOT_PERMISSION_RESULT: Final = "copilot.permission.result"
COPILOT_EVENT_TYPE: Final = "copilot.event.type"
#: On the span event of an event of an unknown type (--keep-unknown-events): its id, and its
#: data as JSON (`.length` always; the text only with content capture on).
COPILOT_EVENT_ID: Final = "copilot.event.id"
COPILOT_EVENT_DATA: Final = "copilot.event.data"

# Span event names
EVENT_AUTOPILOT_CONTINUATION: Final = "copilot.autopilot.continuation"
EVENT_TASK_COMPLETE: Final = "copilot.task_complete"
EVENT_SESSION_ERROR: Final = "copilot.session.error"
EVENT_TURN_RETRY: Final = "copilot.turn_retry"
EVENT_STEERING: Final = "copilot.steering"
EVENT_SHELL_COMPLETED: Final = "copilot.shell_completed"

#: copilot.link.type of the link from an interaction's root to the previous one's.
LINK_PREVIOUS_INTERACTION: Final = "previous_interaction"
# copilot.agent.type values
AGENT_TYPE_MAIN: Final = "main"
AGENT_TYPE_SUBAGENT: Final = "subagent"
# copilot.tool.outcome values
TOOL_OUTCOME_SUCCESS: Final = "success"
TOOL_OUTCOME_ERROR: Final = "error"
TOOL_OUTCOME_ABORTED: Final = "aborted"
TOOL_OUTCOME_INCOMPLETE: Final = "incomplete"
# copilot.compaction.outcome values
COMPACTION_SUCCESS: Final = "success"
COMPACTION_FAILURE: Final = "failure"
#: The value of a label the log left empty (a tool, an abort reason, a permission result).
UNKNOWN: Final = "unknown"

# copilot.task.outcome values (docs/metrics.md, copilot.tasks)
OUTCOME_COMPLETED: Final = "completed"
OUTCOME_FAILED: Final = "failed"
OUTCOME_ERROR: Final = "error"
OUTCOME_ABORTED: Final = "aborted"
OUTCOME_NO_SIGNAL: Final = "no_signal"
#: The outcomes of a task that failed: copilot.task.failed=true.
TASK_FAILED_OUTCOMES: Final = frozenset({OUTCOME_FAILED, OUTCOME_ERROR, OUTCOME_ABORTED})

# copilot.end_reason values (docs/architecture.md, "When an interaction ends")
END_LOOP: Final = "loop_end"
END_TASK_COMPLETE: Final = "task_complete"
END_SESSION_ERROR: Final = "session_error"
END_ABORT: Final = "abort"
END_NEXT_MESSAGE: Final = "next_message"
END_SHUTDOWN: Final = "shutdown"
END_SEGMENT: Final = "segment_end"
END_OF_INPUT: Final = "end_of_input"
END_IDLE: Final = "idle"

# copilot.delivery values: how a user.message reached the agent (`data.delivery`)
DELIVERY_IDLE: Final = "idle"
DELIVERY_STEERING: Final = "steering"
DELIVERY_QUEUED: Final = "queued"

# copilot.mode values
MODE_INTERACTIVE: Final = "interactive"
MODE_PLAN: Final = "plan"
MODE_AUTOPILOT: Final = "autopilot"

# error.type values of our own (others come from the log: session.error errorType, tool codes)
ERROR_ABORTED: Final = "aborted"
ERROR_TOOL_FAILED: Final = "tool_error"
ERROR_SUBAGENT_FAILED: Final = "subagent_failed"
ERROR_SESSION: Final = "error"  # a session.error without errorType
ERROR_MODEL_CALL_FAILED: Final = "model_call_failure"  # a model.call_failure without a code

# --- metric names (METRIC_*, here and below): every metric the bridge records is named in this
# module, as a `MetricName`, and defined once in the catalogue (`metrics/_catalogue.py`,
# docs/metrics.md); no other module spells one (tests/unit/repo/test_metric_names.py) --------
METRIC_TURNS_PER_MESSAGE: Final = MetricName("copilot.turns_per_message")
METRIC_TASKS: Final = MetricName("copilot.tasks")
METRIC_TURNS: Final = MetricName("copilot.turns")
METRIC_USER_MESSAGES: Final = MetricName("copilot.user_messages")
METRIC_TOOL_CALLS: Final = MetricName("copilot.tool.calls")
METRIC_SESSION_ERRORS: Final = MetricName("copilot.session.errors")
METRIC_ABORTS: Final = MetricName("copilot.aborts")
METRIC_COMPACTIONS: Final = MetricName("copilot.compactions")
METRIC_AUTOPILOT_CONTINUATIONS: Final = MetricName("copilot.autopilot.continuations")
METRIC_PERMISSION_WAIT: Final = MetricName("copilot.permission.wait.duration")
METRIC_SESSIONS_ACTIVE: Final = MetricName("copilot.sessions.active")
# GenAI inference metrics (semantic-conventions-genai docs/gen-ai/client-inference.md and
# gen-ai-token-metrics.md): a histogram of each call's duration and of its input and output
# tokens, and counters of the tokens spent, cached and reasoned.
METRIC_INFERENCE_DURATION: Final = MetricName("gen_ai.client.inference.duration")
METRIC_INFERENCE_INPUT_TOKENS: Final = MetricName("gen_ai.client.inference.operation.input_tokens")
METRIC_INFERENCE_OUTPUT_TOKENS: Final = MetricName(
    "gen_ai.client.inference.operation.output_tokens"
)
METRIC_USAGE_INPUT_TOKENS: Final = MetricName("gen_ai.client.inference.usage.input_tokens")
METRIC_USAGE_OUTPUT_TOKENS: Final = MetricName("gen_ai.client.inference.usage.output_tokens")
METRIC_USAGE_CACHE_READ_TOKENS: Final = MetricName(
    "gen_ai.client.inference.usage.cache_read.input_tokens"
)
METRIC_USAGE_CACHE_WRITE_TOKENS: Final = MetricName(
    "gen_ai.client.inference.usage.cache_write.input_tokens"
)
METRIC_USAGE_REASONING_TOKENS: Final = MetricName(
    "gen_ai.client.inference.usage.reasoning.output_tokens"
)
# Previous names (semantic-conventions 1.41.0), emitted with --semconv previous|both only.
METRIC_TOKEN_USAGE: Final = MetricName("gen_ai.client.token.usage")
METRIC_OPERATION_DURATION: Final = MetricName("gen_ai.client.operation.duration")
METRIC_INVOKE_AGENT_DURATION: Final = MetricName("gen_ai.invoke_agent.duration")
METRIC_INVOKE_AGENT_TOOL_CALLS: Final = MetricName("gen_ai.invoke_agent.tool_calls")
METRIC_INVOKE_AGENT_INFERENCE_CALLS: Final = MetricName("gen_ai.invoke_agent.inference_calls")
METRIC_EXECUTE_TOOL_DURATION: Final = MetricName("gen_ai.execute_tool.duration")
METRIC_EVENTS_UNKNOWN: Final = MetricName("otel_bridge.events.unknown")
METRIC_EVENTS_FAILED: Final = MetricName("otel_bridge.events.failed")
#: On otel_bridge.events.failed: what the assembler was doing when it failed (the STEP_* values).
OTEL_BRIDGE_STEP: Final = "otel_bridge.step"
STEP_FEED: Final = "feed"  # handling one event (then copilot.event.type says which type)
STEP_END_OF_INPUT: Final = "end_of_input"  # closing what is open (end of a log, a quiet log)
STEP_EXPIRE: Final = "expire"  # ending a task whose background wait is over
STEP_SNAPSHOT: Final = "snapshot"  # saving the session's state for a checkpoint
STEP_RESTORE: Final = "restore"  # taking a checkpoint's state back
STEP_METRIC: Final = "metric"  # recording a metric the catalogue lacks (a bug; dropped)
# Bad input the assembler bounded or made valid (docs/architecture.md, "Bad input").
METRIC_VALUES_REPAIRED: Final = MetricName("otel_bridge.values.repaired")
#: On otel_bridge.values.repaired: what was wrong (the REPAIR_* values).
OTEL_BRIDGE_REASON: Final = "otel_bridge.reason"
REPAIR_TEXT: Final = "text"  # lone surrogates, made U+FFFD
REPAIR_NUMBER: Final = "number"  # beyond 64 bits or not finite, left out
REPAIR_TIME: Final = "time"  # outside 1970..2262 or an end before its start, clamped
#: a usage record's tokens, cost or credits beyond what one LLM call can use, or negative: left
#: out (`assembler._accounting.drop_implausible`)
REPAIR_IMPLAUSIBLE: Final = "implausible"
METRIC_LIMITS_REACHED: Final = MetricName("otel_bridge.limits.reached")
#: On otel_bridge.limits.reached: which bound of what an open task holds (the LIMIT_* values).
OTEL_BRIDGE_LIMIT: Final = "otel_bridge.limit"
LIMIT_SPAN_EVENTS: Final = "span_events"  # span events on one span
LIMIT_EVENT_FIELDS: Final = "event_fields"  # fields of a compaction event copied
LIMIT_RUNNING_TOOLS: Final = "running_tools"  # tools running at once in a task
LIMIT_TOOL_REQUESTS: Final = "tool_requests"  # tool calls requested, not started yet
LIMIT_SUBAGENTS: Final = "subagents"  # finished sub-agents a task remembers
LIMIT_ORPHAN_AGENTS: Final = "orphan_agents"  # sub-agents no subagent.started announced
LIMIT_TURN_MESSAGES: Final = "turn_messages"  # messages one turn keeps for its LLM calls
LIMIT_ANSWER: Final = "answer_text"  # text of a turn's answer kept
LIMIT_HELD_CHATS: Final = "held_chats"  # LLM call spans waiting for their message
LIMIT_TASK_IDS: Final = "task_ids"  # interactionIds and shells a task keeps
METRIC_SESSION_MISMATCHES: Final = MetricName("otel_bridge.sessions.mismatched")
# the bridge's own health, recorded outside the assembler (sources, export, run)
METRIC_EVENTS_READ: Final = MetricName("otel_bridge.events.read")
METRIC_LINES_SKIPPED: Final = MetricName("otel_bridge.lines.skipped")
METRIC_EVENT_LAG: Final = MetricName("otel_bridge.event.lag")
METRIC_SPANS_EXPORTED: Final = MetricName("otel_bridge.spans.exported")
METRIC_SPANS_DROPPED: Final = MetricName("otel_bridge.spans.dropped")
METRIC_SPANS_REJECTED: Final = MetricName("otel_bridge.spans.rejected")
METRIC_EXPORT_FAILURES: Final = MetricName("otel_bridge.export.failures")
METRIC_FILES_FOLLOWED: Final = MetricName("otel_bridge.files.followed")
METRIC_FILES_SKIPPED: Final = MetricName("otel_bridge.files.skipped")
METRIC_SESSIONS_RESIDENT: Final = MetricName("otel_bridge.sessions.resident")
METRIC_WATCH_PROBLEMS: Final = MetricName("otel_bridge.watch.problems")
METRIC_LABELS_CAPPED: Final = MetricName("otel_bridge.labels.capped")
METRIC_CHECKPOINT_FAILURES: Final = MetricName("otel_bridge.checkpoint.failures")
#: Labels of the bridge's own metrics: which exporter; which metric and label had its fill.
OTEL_BRIDGE_EXPORTER: Final = "otel_bridge.exporter"
OTEL_BRIDGE_METRIC: Final = "otel_bridge.metric"
OTEL_BRIDGE_LABEL: Final = "otel_bridge.label"

# --- tools: interrupted by a crash, refused by a permission, served by MCP ------------------
#: error.type values the CLI writes on `tool.execution_complete` (`error.code`) that the bridge
#: recognises: a tool the resumed CLI reports as cut off by the crash of the previous process,
#: and a tool refused by a rule or a permission decision.
ERROR_INTERRUPTED: Final = "interrupted"
ERROR_DENIED: Final = "denied"
#: The permission decision for a tool call, on its span: `approved`, `denied` or `cancelled`
#: (from the `permission.completed` result kind, or a `denied` completion without one), the
#: CLI's result kind (`copilot.permission.result`, above) and who decided
#: (`human_response`, `unattended_fallback`, `host_policy`...).
COPILOT_PERMISSION_DECISION: Final = "copilot.permission.decision"
COPILOT_PERMISSION_DECISION_SOURCE: Final = "copilot.permission.decision_source"
PERMISSION_APPROVED: Final = "approved"
PERMISSION_DENIED: Final = "denied"
PERMISSION_CANCELLED: Final = "cancelled"
#: `toolTelemetry.properties.failure_category` of a failed tool (`disconnected`: an MCP server
#: that went away mid-call).
COPILOT_TOOL_FAILURE_CATEGORY: Final = "copilot.tool.failure_category"
#: `session.warning` as a span event on the interaction (`interrupted_tools` after a resume).
EVENT_SESSION_WARNING: Final = "copilot.session.warning"
COPILOT_WARNING_TYPE: Final = "copilot.warning.type"
COPILOT_WARNING_MESSAGE: Final = "copilot.warning.message"  # content capture only
# MCP tools. Names follow the OpenTelemetry semantic conventions for the Model Context
# Protocol in semantic-conventions-genai (docs/gen-ai/mcp.md, not yet released; formerly
# docs/gen-ai/mcp.md of open-telemetry/semantic-conventions 1.39/1.40, status Development):
# an MCP `tools/call` carries `mcp.method.name` and `network.transport` (`pipe` for stdio,
# `tcp` for HTTP). The CLI's `execute_tool` span is the call, so they go on it; the server's
# name and its own name for the tool (the CLI calls it `<server>-<tool>`) have no convention
# and stay under copilot.*. gen_ai.tool.type is `extension` (GenAI: a tool the agent runs to
# call an external system) instead of `function`.
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_METHOD_TOOLS_CALL: Final = "tools/call"
NETWORK_TRANSPORT: Final = "network.transport"
NETWORK_TRANSPORT_PIPE: Final = "pipe"
NETWORK_TRANSPORT_TCP: Final = "tcp"
TOOL_TYPE_EXTENSION: Final = "extension"
COPILOT_TOOL_MCP_TOOL: Final = "copilot.tool.mcp_tool"
COPILOT_TOOL_MCP_TRANSPORT: Final = "copilot.tool.mcp_transport"  # as the CLI says: stdio, http
# --- custom agents, skills and the autopilot limit (docs/events.md) ----------------------------
COPILOT_SKILL_NAME: Final = "copilot.skill.name"
COPILOT_SKILL_SOURCE: Final = "copilot.skill.source"
COPILOT_SKILL_TRIGGER: Final = "copilot.skill.trigger"
COPILOT_SKILL_CONTENT_LENGTH: Final = "copilot.skill.content.length"
COPILOT_AUTOPILOT_STOP_REASON: Final = "copilot.autopilot.stop_reason"
EVENT_SKILL_INVOKED: Final = "copilot.skill.invoked"
EVENT_SKILL_CONTEXT_DELIVERED: Final = "copilot.skill.context_delivered"
#: copilot.end_reason of an autopilot task the CLI stopped nudging on
#: (`--max-autopilot-continues`): no task_complete, no further continuation.
END_AUTOPILOT_LIMIT: Final = "autopilot_limit"
#: session.autopilot_stopped reason (live only) when the continuation limit was reached.
AUTOPILOT_CAP_REACHED: Final = "cap_reached"
METRIC_SKILLS_INVOKED: Final = MetricName("copilot.skills.invoked")
METRIC_AUTOPILOT_LIMIT_STOPS: Final = MetricName("copilot.autopilot.limit_stops")

# --- attribution: the repository, branch and client of a session; who and where the bridge
# runs (docs/attribution.md) -------------------------------------------------------------------
# From `session.start` / `session.resume` / `session.context_changed` `data.context` (the CLI's
# `WorkingDirectoryContext`), on every span of the session. Names from the OpenTelemetry VCS
# registry (https://opentelemetry.io/docs/specs/semconv/registry/attributes/vcs/, status
# Development, in schema 1.44.0): `vcs.repository.name` is the repository's name alone, without
# its owner ("It SHOULD NOT include any additional identifier like ... organization in
# GitHub"), which goes in `vcs.owner.name`; `vcs.repository.url.full` is the canonical HTTPS URL
# without `.git`; `vcs.ref.head.name` / `.revision` / `.type` describe "where you are right
# now" (the branch and its commit), `vcs.ref.base.revision` the branch's base commit;
# `vcs.provider.name` is one of github, gitlab, gitea, bitbucket (the CLI's `hostType`: github,
# or ado for Azure DevOps, written as it comes).
VCS_REPOSITORY_NAME: Final = "vcs.repository.name"
VCS_OWNER_NAME: Final = "vcs.owner.name"
VCS_REPOSITORY_URL_FULL: Final = "vcs.repository.url.full"
VCS_PROVIDER_NAME: Final = "vcs.provider.name"
VCS_REF_HEAD_NAME: Final = "vcs.ref.head.name"
VCS_REF_HEAD_REVISION: Final = "vcs.ref.head.revision"
VCS_REF_HEAD_TYPE: Final = "vcs.ref.head.type"
VCS_REF_BASE_REVISION: Final = "vcs.ref.base.revision"
VCS_REF_TYPE_BRANCH: Final = "branch"
# No convention for these: the repository's host as the remote names it (github.com, a GHE
# host, dev.azure.com), the repository as the CLI writes it (`owner/name`), the session's
# working directory and git root (paths: `--paths` applies to them as a whole, docs/privacy.md),
# and the client that ran the session (`client_name` of workspace.yaml: github/cli, sdk).
COPILOT_REPOSITORY: Final = "copilot.repository"
COPILOT_REPOSITORY_HOST: Final = "copilot.repository.host"
COPILOT_CWD: Final = "copilot.cwd"
COPILOT_GIT_ROOT: Final = "copilot.git.root"
COPILOT_CLIENT_NAME: Final = "copilot.client.name"
#: client_name of a live SDK session (`LiveBridge`): what the CLI writes in its workspace.yaml.
CLIENT_SDK: Final = "sdk"
# Resource attributes (https://opentelemetry.io/docs/specs/semconv/resource/): `host.name`
# (host), `os.type` (os: windows, linux, darwin, freebsd...), `os.version`, `service.version`
# and `service.instance.id` (service: a UUID; "free to use an inherent unique ID as the source
# of this value if stability is desirable. In that case, the ID SHOULD be used as source of a
# UUID Version 5 and SHOULD use the following UUID as the namespace"), and `enduser.id`
# (https://opentelemetry.io/docs/specs/semconv/registry/attributes/enduser/: PII, so only on
# request, `--user`).
HOST_NAME: Final = "host.name"
OS_TYPE: Final = "os.type"
OS_VERSION: Final = "os.version"
SERVICE_NAME: Final = "service.name"
SERVICE_VERSION: Final = "service.version"
SERVICE_INSTANCE_ID: Final = "service.instance.id"
SERVICE_INSTANCE_NAMESPACE: Final = "4d63009a-8d0f-11ee-aad7-4c796ed8e320"
ENDUSER_ID: Final = "enduser.id"
# --- cost and code changes (docs/metrics.md, "Cost and code changes") -------------------------
METRIC_PREMIUM_REQUESTS: Final = MetricName("copilot.premium_requests")
METRIC_AI_CREDITS: Final = MetricName("copilot.ai_credits")
METRIC_SESSION_PREMIUM_REQUESTS: Final = MetricName("copilot.session.premium_requests")
METRIC_SESSION_AI_CREDITS: Final = MetricName("copilot.session.ai_credits")
METRIC_CODE_LINES: Final = MetricName("copilot.code.lines")
METRIC_CODE_FILES_MODIFIED: Final = MetricName("copilot.code.files_modified")
# --- LLM viewers: OpenInference (docs/viewers.md) ---------------------------------------------
# Arize Phoenix and other OpenInference viewers read these, not the GenAI names, for a span's
# kind and its input and output columns (spec/semantic_conventions.md of Arize-ai/openinference:
# "openinference.span.kind ... is required for all OpenInference spans"; `input.value`,
# `output.value` and their `*.mime_type`, "If unspecified, the type is plain text"). Phoenix
# 20.x derives them from the GenAI names when a span has none (phoenix/trace/gen_ai/
# conversion.py: kind from gen_ai.operation.name, and an LLM span's output.value from
# gen_ai.response.id and .model), and never overrides one the span carries. The texts go out
# only with content capture on, as every text from the log (assembler/_content.py).
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OPENINFERENCE_CHAIN: Final = "CHAIN"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
MIME_TEXT: Final = "text/plain"
# A readable name for a task, beside the span name the GenAI conventions fix (`invoke_agent
# copilot`): the first words of the user's message, and the session's name (`name:` of
# workspace.yaml, which the CLI sets to the first message unless the user renamed it). Both
# are text from the log: only with content capture on.
COPILOT_TASK_TITLE: Final = "copilot.task.title"
COPILOT_SESSION_NAME: Final = "copilot.session.name"
#: Words and characters of the user's message kept in `copilot.task.title`.
TASK_TITLE_WORDS: Final = 12
TASK_TITLE_MAX_CHARS: Final = 80

# --- convention versions: the names the GenAI move renamed (docs/metrics.md, "Convention
# version"; semantic-conventions-genai docs/gen-ai/non-normative/migration.md) ----------------
#: `--semconv`: the released names only (default), the previous ones only (dashboards built on
#: semantic-conventions 1.41.0), or both.
SEMCONV_RELEASED: Final = "released"
SEMCONV_PREVIOUS: Final = "previous"
SEMCONV_BOTH: Final = "both"
SEMCONV_MODES: Final = (SEMCONV_RELEASED, SEMCONV_PREVIOUS, SEMCONV_BOTH)
#: (previous name, released name, what changed): every name the bridge emitted under
#: semantic-conventions 1.41.0 that it now emits under another. docs/metrics.md's table is
#: checked against it (tests/unit/export/test_semconv_versions.py).
RENAMED: Final[tuple[tuple[str, str, str], ...]] = (
    (
        METRIC_TOKEN_USAGE + " (gen_ai.token.type=input)",
        METRIC_INFERENCE_INPUT_TOKENS,
        "histogram, same values; genai #374",
    ),
    (
        METRIC_TOKEN_USAGE + " (gen_ai.token.type=output)",
        METRIC_INFERENCE_OUTPUT_TOKENS,
        "histogram, same values; genai #374",
    ),
    (
        METRIC_OPERATION_DURATION + " (gen_ai.operation.name=chat)",
        METRIC_INFERENCE_DURATION,
        "histogram, same values and labels; genai #521",
    ),
    (
        GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
        "chat span attribute; genai #440",
    ),
    (
        GEN_AI_AGENT_ID,
        COPILOT_AGENT_ID,
        "sub-agent invoke_agent span attribute; genai #242",
    ),
)


def attribute_keys(released: str, mode: str) -> tuple[str, ...]:
    """The keys a span attribute named `released` goes under in `mode`: itself, its previous
    name (from `RENAMED`), or both. A name that was not renamed goes under itself."""
    previous = next((old for old, new, _ in RENAMED if new == released), None)
    if previous is None or mode == SEMCONV_RELEASED:
        return (released,)
    if mode == SEMCONV_PREVIOUS:
        return (previous,)
    return (released, previous)


# --- running now (docs/metrics.md, "Running now") ------------------------------------------
#: Gauges of the tasks open now, read from the assembler's open state when metrics are
#: collected (`assembler.InFlight`).
METRIC_TASKS_OPEN: Final = MetricName("copilot.tasks.open")
METRIC_TASKS_OPEN_OLDEST: Final = MetricName("copilot.tasks.open.oldest")
METRIC_TASKS_OPEN_TURNS: Final = MetricName("copilot.tasks.open.turns")
METRIC_TASKS_OPEN_TOOL_CALLS: Final = MetricName("copilot.tasks.open.tool_calls")
METRIC_SUBAGENTS_RUNNING: Final = MetricName("copilot.subagents.running")
METRIC_SHELLS_RUNNING: Final = MetricName("copilot.shells.running")
METRIC_TASKS_WAITING_FOR_USER: Final = MetricName("copilot.tasks.waiting_for_user")
METRIC_TASKS_WAITING_OLDEST: Final = MetricName("copilot.tasks.waiting_for_user.oldest")
METRIC_TASKS_OPEN_SILENCE: Final = MetricName("copilot.tasks.open.silence")
METRIC_TASKS_OPEN_REPEATS: Final = MetricName("copilot.tasks.open.repeated_calls")
METRIC_TASKS_OPEN_TOOL_FAILURES: Final = MetricName("copilot.tasks.open.tool_failures")
METRIC_TASKS_TROUBLED: Final = MetricName("copilot.tasks.troubled")
#: A counter: a task crossed the threshold of a trouble signal (once per task and signal).
METRIC_TASK_TROUBLE: Final = MetricName("copilot.task.trouble")
#: Context-window pressure (docs/metrics.md, "Context window"): each LLM call's utilization,
#: truncations, and of the open tasks the current utilization (the highest) and how many are
#: above `CONTEXT_HIGH` of their window.
METRIC_CONTEXT_UTILIZATION: Final = MetricName("copilot.context.utilization")
METRIC_CONTEXT_TRUNCATIONS: Final = MetricName("copilot.context.truncations")
METRIC_TASKS_OPEN_CONTEXT: Final = MetricName("copilot.tasks.open.context.utilization")
METRIC_TASKS_OPEN_CONTEXT_HIGH: Final = MetricName("copilot.tasks.open.context.high")
CONTEXT_HIGH: Final = 0.8
#: What a task waits for a person for (`copilot.wait.kind`).
COPILOT_WAIT_KIND: Final = "copilot.wait.kind"
WAIT_PERMISSION: Final = "permission"  # a permission request not answered yet
WAIT_QUESTION: Final = "question"  # ask_user, or a live user_input / elicitation request
WAIT_PLAN_APPROVAL: Final = "plan_approval"  # exit_plan_mode: a plan waiting for approval
WAIT_KINDS: Final = (WAIT_PERMISSION, WAIT_QUESTION, WAIT_PLAN_APPROVAL)
#: Tools whose call waits for a person's answer, and what for.
WAITING_TOOLS: Final = {"ask_user": WAIT_QUESTION, "exit_plan_mode": WAIT_PLAN_APPROVAL}
#: Signals of a task in trouble while it runs (`copilot.trouble.signal`), each once per task.
COPILOT_TROUBLE_SIGNAL: Final = "copilot.trouble.signal"
TROUBLE_REPEATED_CALL: Final = "repeated_call"  # one tool called with the same arguments again
TROUBLE_TOOL_FAILURES: Final = "tool_failures"  # one tool failing again and again
TROUBLE_TURNS: Final = "many_turns"  # the task's turns past the threshold
TROUBLE_STALLED: Final = "stalled"  # no event for long while the task is open
TROUBLE_LONG: Final = "long_running"  # open past its mode's usual length
TROUBLE_COMPACTIONS: Final = "repeated_compactions"  # its context compacted again and again
TROUBLE_SIGNALS: Final = (
    TROUBLE_REPEATED_CALL,
    TROUBLE_TOOL_FAILURES,
    TROUBLE_TURNS,
    TROUBLE_STALLED,
    TROUBLE_LONG,
    TROUBLE_COMPACTIONS,
)
#: The span event on a task's root when a signal was raised, with its figure and threshold.
EVENT_TROUBLE: Final = "copilot.trouble"
COPILOT_TROUBLE_VALUE: Final = "copilot.trouble.value"
COPILOT_TROUBLE_THRESHOLD: Final = "copilot.trouble.threshold"
