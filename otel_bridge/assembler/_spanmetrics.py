"""Metrics that follow from finished spans, computed from the `SpanRecord`s alone.

As the OpenTelemetry Collector's spanmetrics connector does: every span the factory emits passes
through `observe_span`, which reads its name-giving attributes, duration and status. So these
metrics cannot disagree with the spans, and no handler counts them:

    execute_tool   gen_ai.execute_tool.duration, copilot.tool.calls (by outcome)
    invoke_agent   gen_ai.invoke_agent.duration (tasks and sub-agents); for a task (the root,
                   which carries copilot.task.outcome): copilot.tasks, copilot.turns_per_message,
                   copilot.autopilot.limit_stops (end reason autopilot_limit)
    chat           gen_ai.client.inference.duration, gen_ai.client.inference.operation.
                   {input,output}_tokens and the gen_ai.client.inference.usage.* counters (a
                   usage record's call: the CLI's own duration and token counts, when the span
                   carries them); copilot.context.utilization (when it has one);
                   copilot.premium_requests and copilot.ai_credits (its cost,
                   unless bring-your-own-key). Released names only: the previous ones
                   (`--semconv`) are the metrics recorder's business (export/_metrics.py).

The labels not on a span are the agent of a tool or LLM call (its type, main or sub-agent, and
for a call its name) and the session's mode: the builders pass the agent, the meter knows the
mode. Metrics of what happens rather than of a finished span (a turn started, a
user message, an abort, an error, a permission wait, tool calls per task) are counted where it
happens.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import semconv as sc
from .._records import AttributeValue, SpanRecord, StatusCode
from ._fields import compact
from ._meter import SessionMeter

__all__ = ["observe_span", "tool_outcome"]


def observe_span(
    meter: SessionMeter,
    record: SpanRecord,
    agent_type: str | None = None,
    agent_name: str | None = None,
) -> None:
    """Observe the metrics that follow from one finished span."""
    operation = record.attributes.get(sc.GEN_AI_OPERATION_NAME)
    if operation == sc.OP_EXECUTE_TOOL:
        _tool(meter, record, agent_type)
    elif operation == sc.OP_INVOKE_AGENT:
        if sc.COPILOT_TASK_OUTCOME in record.attributes:
            _task(meter, record)
        _agent(meter, record)
    elif operation == sc.OP_CHAT:
        _chat(meter, record)
        _cost(meter, record, agent_type, agent_name)


def _seconds(record: SpanRecord) -> float:
    return (record.end_ns - record.start_ns) / 1e9


def tool_outcome(attributes: Mapping[str, AttributeValue], status: StatusCode) -> str:
    """`copilot.tool.outcome` of a tool span that ended with these attributes and status. The
    tool builder puts it on the span (`ToolSpans.finish`), and the metric takes it from there."""
    if attributes.get(sc.ERROR_TYPE) == sc.ERROR_ABORTED:
        return sc.TOOL_OUTCOME_ABORTED
    if status is StatusCode.ERROR:
        return sc.TOOL_OUTCOME_ERROR
    if attributes.get(sc.COPILOT_INCOMPLETE) is True:
        return sc.TOOL_OUTCOME_INCOMPLETE
    return sc.TOOL_OUTCOME_SUCCESS


def _tool(meter: SessionMeter, record: SpanRecord, agent_type: str | None) -> None:
    attributes = record.attributes
    name = attributes.get(sc.GEN_AI_TOOL_NAME, sc.UNKNOWN)
    meter.add(
        sc.METRIC_TOOL_CALLS,
        compact(
            {
                sc.GEN_AI_TOOL_NAME: name,
                sc.COPILOT_TOOL_OUTCOME: attributes.get(sc.COPILOT_TOOL_OUTCOME)
                or tool_outcome(attributes, record.status),
                sc.COPILOT_AGENT_TYPE: agent_type,
            }
        ),
    )
    meter.record(
        sc.METRIC_EXECUTE_TOOL_DURATION,
        _seconds(record),
        compact(
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
                sc.GEN_AI_TOOL_NAME: name,
                sc.ERROR_TYPE: attributes.get(sc.ERROR_TYPE),
            }
        ),
    )


def _task(meter: SessionMeter, record: SpanRecord) -> None:
    attributes = record.attributes
    mode = str(attributes.get(sc.COPILOT_MODE, sc.UNKNOWN))
    turns = attributes.get(sc.COPILOT_TURNS)
    if isinstance(turns, int):
        meter.record(sc.METRIC_TURNS_PER_MESSAGE, turns, {sc.COPILOT_MODE: mode})
    meter.add(
        sc.METRIC_TASKS,
        {sc.COPILOT_TASK_OUTCOME: attributes[sc.COPILOT_TASK_OUTCOME], sc.COPILOT_MODE: mode},
    )
    if attributes.get(sc.COPILOT_END_REASON) == sc.END_AUTOPILOT_LIMIT:
        meter.add(sc.METRIC_AUTOPILOT_LIMIT_STOPS)


def _agent(meter: SessionMeter, record: SpanRecord) -> None:
    meter.record(
        sc.METRIC_INVOKE_AGENT_DURATION,
        _seconds(record),
        compact(
            {
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
                sc.GEN_AI_AGENT_NAME: record.attributes.get(sc.GEN_AI_AGENT_NAME),
                sc.ERROR_TYPE: record.attributes.get(sc.ERROR_TYPE),
            }
        ),
    )


def _chat(meter: SessionMeter, record: SpanRecord) -> None:
    attributes = record.attributes
    model_attributes: Mapping[str, AttributeValue] = compact(
        {
            sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
            sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
            sc.GEN_AI_REQUEST_MODEL: attributes.get(sc.GEN_AI_REQUEST_MODEL),
            sc.GEN_AI_RESPONSE_MODEL: attributes.get(sc.GEN_AI_RESPONSE_MODEL),
        }
    )
    duration_ms = attributes.get(sc.COPILOT_USAGE_DURATION_MS)
    if isinstance(duration_ms, int | float):
        meter.record(sc.METRIC_INFERENCE_DURATION, duration_ms / 1000.0, model_attributes)
    for histogram, key in (
        (sc.METRIC_INFERENCE_INPUT_TOKENS, sc.GEN_AI_USAGE_INPUT_TOKENS),
        (sc.METRIC_INFERENCE_OUTPUT_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS),
    ):
        tokens = attributes.get(key)
        if isinstance(tokens, int):
            meter.record(histogram, tokens, model_attributes)
    for counter, keys in _USAGE_COUNTERS:
        tokens = next((attributes[k] for k in keys if k in attributes), None)
        if isinstance(tokens, int) and tokens >= 0:
            meter.add_value(counter, tokens, model_attributes)
    utilization = attributes.get(sc.COPILOT_CONTEXT_UTILIZATION)
    if isinstance(utilization, float):  # none without a limit: no series, never a 0
        meter.record(
            sc.METRIC_CONTEXT_UTILIZATION,
            utilization,
            {
                sc.GEN_AI_REQUEST_MODEL: attributes.get(sc.GEN_AI_REQUEST_MODEL, sc.UNKNOWN),
                sc.COPILOT_MODE: meter.mode,
            },
        )


def _cost(
    meter: SessionMeter, record: SpanRecord, agent_type: str | None, agent_name: str | None
) -> None:
    """An LLM call's cost (`_accounting.call_attributes` put it on the span), by model, agent
    and mode; none for a bring-your-own-key call (its 0 is not a price)."""
    attributes = record.attributes
    cost = attributes.get(sc.COPILOT_USAGE_COST)
    credits = attributes.get(sc.COPILOT_USAGE_AI_CREDITS)
    if attributes.get(sc.COPILOT_USAGE_BYOK) is True or (cost is None and credits is None):
        return
    labels: dict[str, AttributeValue] = {
        sc.GEN_AI_REQUEST_MODEL: attributes.get(sc.GEN_AI_REQUEST_MODEL, sc.UNKNOWN),
        sc.GEN_AI_AGENT_NAME: agent_name or sc.UNKNOWN,
        sc.COPILOT_AGENT_TYPE: agent_type or sc.UNKNOWN,
        sc.COPILOT_MODE: meter.mode,
    }
    if isinstance(cost, int | float):
        meter.add_value(sc.METRIC_PREMIUM_REQUESTS, cost, labels)
    if isinstance(credits, int | float):
        meter.add_value(sc.METRIC_AI_CREDITS, credits, labels)


#: Each usage counter and the span attribute it adds (under its released name, or its previous
#: one when `--semconv previous` put only that on the span).
_USAGE_COUNTERS = (
    (sc.METRIC_USAGE_INPUT_TOKENS, (sc.GEN_AI_USAGE_INPUT_TOKENS,)),
    (sc.METRIC_USAGE_OUTPUT_TOKENS, (sc.GEN_AI_USAGE_OUTPUT_TOKENS,)),
    (sc.METRIC_USAGE_CACHE_READ_TOKENS, (sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,)),
    (
        sc.METRIC_USAGE_CACHE_WRITE_TOKENS,
        (sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS, sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS),
    ),
    (sc.METRIC_USAGE_REASONING_TOKENS, (sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,)),
)
