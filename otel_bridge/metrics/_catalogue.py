"""The metric catalogue: every metric the bridge records, once, named from `semconv`.

The export adapter creates its instruments from it, `stats` aggregates by it, docs/metrics.md
defines each entry (a test checks that none is missing), and dashboards and alert rules query
the Prometheus names derived from it. One list, so that these cannot drift. Names are
`semconv.METRIC_*` only: no other module spells a metric's name
(tests/unit/repo/test_metric_names.py).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from .. import semconv as sc

__all__ = [
    "BUCKETS",
    "CATALOGUE",
    "OPTIONAL_LABELS",
    "REPOSITORY_LABELS",
    "Instrument",
    "MetricSpec",
]


class Instrument(enum.Enum):
    """The OpenTelemetry instrument kind of a metric."""

    COUNTER = "counter"
    HISTOGRAM = "histogram"
    GAUGE = "gauge"  # observed: read from the bridge's state when collected


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric: its OpenTelemetry name, kind, unit, meaning and attribute keys."""

    name: str
    instrument: Instrument
    unit: str
    description: str
    attributes: tuple[str, ...] = ()


# Histogram boundaries (explicit, documented in docs/metrics.md).
TURN_BUCKETS = (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144)
SECONDS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
COUNT_BUCKETS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)
#: Context utilization (a call's prompt tokens over its model's prompt limit): fine near full.
UTILIZATION_BUCKETS = (0.1, 0.25, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 1.0)

_GENAI = (sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_PROVIDER_NAME)

# --- attribution labels (docs/metrics.md, "Attribution labels") -------------------------------
#: Every metric with a model label also carries the session's repository: its owner and its
#: name (the VCS conventions split `owner/name`; the owner adds no series of its own). Absent
#: for a session outside a git checkout with a remote. A test checks that no model metric lacks
#: them; the assembler's meter adds them to whatever metric lists them (`SessionMeter`).
REPOSITORY_LABELS = (sc.VCS_OWNER_NAME, sc.VCS_REPOSITORY_NAME)
#: Labels of the inference (LLM call) metrics.
_INFERENCE = (*_GENAI, sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL, *REPOSITORY_LABELS)
#: Labels of the gauges of what runs now (docs/metrics.md, "Running now"): bounded values
#: only, never a session id.
_RUNNING = (sc.COPILOT_MODE, *REPOSITORY_LABELS, sc.GEN_AI_AGENT_NAME)
#: The further attribution labels `--metric-labels` may add to those same metrics, by the name
#: the option takes. Off by default: each multiplies the series (docs/metrics.md). Paths,
#: commits and session ids are never labels (tests/unit/assembler/test_attribution.py goes over
#: every label).
OPTIONAL_LABELS: Mapping[str, str] = {
    "branch": sc.VCS_REF_HEAD_NAME,
    "host": sc.COPILOT_REPOSITORY_HOST,
    "provider": sc.VCS_PROVIDER_NAME,
    "client": sc.COPILOT_CLIENT_NAME,
}

CATALOGUE: tuple[MetricSpec, ...] = (
    # --- mission metrics -------------------------------------------------------------------
    MetricSpec(
        sc.METRIC_TURNS_PER_MESSAGE,
        Instrument.HISTOGRAM,
        "{turn}",
        "Main-agent turns per top-level user message (a task); autopilot continuation "
        "turns count into the task they continue",
        (sc.COPILOT_MODE,),
    ),
    MetricSpec(
        sc.METRIC_TASKS,
        Instrument.COUNTER,
        "{task}",
        "Tasks (top-level user messages) by how they ended",
        (sc.COPILOT_TASK_OUTCOME, sc.COPILOT_MODE, *REPOSITORY_LABELS),
    ),
    MetricSpec(
        sc.METRIC_TURNS,
        Instrument.COUNTER,
        "{turn}",
        "Agent turns started (assistant.turn_start)",
        (sc.COPILOT_AGENT_TYPE,),
    ),
    MetricSpec(
        sc.METRIC_USER_MESSAGES,
        Instrument.COUNTER,
        "{message}",
        "User messages to the main agent, autopilot continuations apart",
        (sc.COPILOT_CONTINUATION, sc.COPILOT_DELIVERY),
    ),
    MetricSpec(
        sc.METRIC_TOOL_CALLS,
        Instrument.COUNTER,
        "{call}",
        "Tool executions by tool and outcome",
        (sc.GEN_AI_TOOL_NAME, sc.COPILOT_TOOL_OUTCOME, sc.COPILOT_AGENT_TYPE),
    ),
    MetricSpec(
        sc.METRIC_SESSION_ERRORS,
        Instrument.COUNTER,
        "{error}",
        "session.error events by error type",
        (sc.ERROR_TYPE, sc.COPILOT_AGENT_TYPE),
    ),
    MetricSpec(
        sc.METRIC_ABORTS,
        Instrument.COUNTER,
        "{abort}",
        "Interactions aborted (abort events)",
        (sc.COPILOT_ABORT_REASON,),
    ),
    MetricSpec(
        sc.METRIC_COMPACTIONS,
        Instrument.COUNTER,
        "{compaction}",
        "Context compactions finished",
        (sc.COPILOT_COMPACTION_OUTCOME,),
    ),
    MetricSpec(
        sc.METRIC_AUTOPILOT_CONTINUATIONS,
        Instrument.COUNTER,
        "{message}",
        "Autopilot continuation nudges (the model stopped without task_complete)",
    ),
    MetricSpec(
        sc.METRIC_AUTOPILOT_LIMIT_STOPS,
        Instrument.COUNTER,
        "{task}",
        "Autopilot tasks the CLI stopped at its continuation limit (--max-autopilot-continues)",
    ),
    MetricSpec(
        sc.METRIC_SKILLS_INVOKED,
        Instrument.COUNTER,
        "{invocation}",
        "Skills invoked (skill.invoked), by skill name",
        (sc.COPILOT_SKILL_NAME,),
    ),
    MetricSpec(
        sc.METRIC_PERMISSION_WAIT,
        Instrument.HISTOGRAM,
        "s",
        "Time from a permission request to its answer",
        (sc.COPILOT_PERMISSION_RESULT,),
    ),
    MetricSpec(
        sc.METRIC_SESSIONS_ACTIVE,
        Instrument.GAUGE,
        "{session}",
        "Sessions whose agent is working now (an interaction is open)",
    ),
    # --- running now (docs/metrics.md, "Running now"): gauges read from the open tasks -------
    MetricSpec(
        sc.METRIC_TASKS_OPEN,
        Instrument.GAUGE,
        "{task}",
        "Tasks open now (a user message whose agent loop has not ended)",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_TASKS_OPEN_OLDEST,
        Instrument.GAUGE,
        "s",
        "How long the oldest open task has run: from its first event to now",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_TASKS_OPEN_TURNS,
        Instrument.GAUGE,
        "{turn}",
        "Main-agent turns so far, summed over the open tasks",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_TASKS_OPEN_TOOL_CALLS,
        Instrument.GAUGE,
        "{call}",
        "Tool calls so far (sub-agents' included), summed over the open tasks",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_SUBAGENTS_RUNNING,
        Instrument.GAUGE,
        "{agent}",
        "Sub-agents of the open tasks that have not ended",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_SHELLS_RUNNING,
        Instrument.GAUGE,
        "{shell}",
        "Background shells the open tasks wait for",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_TASKS_WAITING_FOR_USER,
        Instrument.GAUGE,
        "{task}",
        "Open tasks waiting for a person: a permission request not answered, a question "
        "(ask_user), a plan waiting for approval (exit_plan_mode), by what they wait for",
        (sc.COPILOT_WAIT_KIND, *_RUNNING),
    ),
    MetricSpec(
        sc.METRIC_TASKS_WAITING_OLDEST,
        Instrument.GAUGE,
        "s",
        "How long the oldest open wait for a person has lasted, by what it waits for "
        "(0 when nothing waits)",
        (sc.COPILOT_WAIT_KIND, *_RUNNING),
    ),
    MetricSpec(
        sc.METRIC_TASKS_OPEN_SILENCE,
        Instrument.GAUGE,
        "s",
        "The longest time since the last event of an open task (a stalled CLI is silent)",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_TASKS_OPEN_REPEATS,
        Instrument.GAUGE,
        "{call}",
        "The most calls of one tool with the same arguments in one open task",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_TASKS_OPEN_TOOL_FAILURES,
        Instrument.GAUGE,
        "{call}",
        "The most failures in a row of one tool in one open task",
        _RUNNING,
    ),
    MetricSpec(
        sc.METRIC_TASKS_TROUBLED,
        Instrument.GAUGE,
        "{task}",
        "Open tasks that raised a trouble signal, by signal",
        (sc.COPILOT_TROUBLE_SIGNAL, *_RUNNING),
    ),
    MetricSpec(
        sc.METRIC_TASK_TROUBLE,
        Instrument.COUNTER,
        "{signal}",
        "Trouble signals raised: a task crossed a signal's threshold (once per task and signal)",
        (sc.COPILOT_TROUBLE_SIGNAL, sc.COPILOT_MODE, *REPOSITORY_LABELS),
    ),
    # --- context window (docs/metrics.md, "Context window") -----------------------------------
    MetricSpec(
        sc.METRIC_CONTEXT_UTILIZATION,
        Instrument.HISTOGRAM,
        "1",
        "How full the context window was at each LLM call: its prompt tokens (inputTokens, "
        "cache reads included) over its model's prompt limit (maxPromptTokens); calls "
        "without a limit not recorded",
        (sc.GEN_AI_REQUEST_MODEL, sc.COPILOT_MODE, *REPOSITORY_LABELS),
    ),
    MetricSpec(
        sc.METRIC_CONTEXT_TRUNCATIONS,
        Instrument.COUNTER,
        "{truncation}",
        "Context truncations (session.truncation): messages dropped to fit the window",
        (sc.COPILOT_MODE,),
    ),
    MetricSpec(
        sc.METRIC_TASKS_OPEN_CONTEXT,
        Instrument.GAUGE,
        "1",
        "The current context utilization of the fullest open task (its latest LLM call, "
        "compaction, truncation or live usage_info), by the model of its latest call",
        (sc.GEN_AI_REQUEST_MODEL, *_RUNNING),
    ),
    MetricSpec(
        sc.METRIC_TASKS_OPEN_CONTEXT_HIGH,
        Instrument.GAUGE,
        "{task}",
        "Open tasks whose current context utilization is above 80% of their window",
        (sc.GEN_AI_REQUEST_MODEL, *_RUNNING),
    ),
    # --- cost and code changes (docs/metrics.md, "Cost and code changes") ----------------------
    MetricSpec(
        sc.METRIC_PREMIUM_REQUESTS,
        Instrument.COUNTER,
        "{request}",
        "Premium requests per LLM call, from its usage record's cost (bring-your-own-key "
        "calls not counted: their 0 is not a price)",
        (
            sc.GEN_AI_REQUEST_MODEL,
            sc.GEN_AI_AGENT_NAME,
            sc.COPILOT_AGENT_TYPE,
            sc.COPILOT_MODE,
            *REPOSITORY_LABELS,
        ),
    ),
    MetricSpec(
        sc.METRIC_AI_CREDITS,
        Instrument.COUNTER,
        "{nanoAIU}",
        "AI credits in nano-AIU per LLM call, from its usage record (calls that reported an "
        "amount)",
        (
            sc.GEN_AI_REQUEST_MODEL,
            sc.GEN_AI_AGENT_NAME,
            sc.COPILOT_AGENT_TYPE,
            sc.COPILOT_MODE,
            *REPOSITORY_LABELS,
        ),
    ),
    MetricSpec(
        sc.METRIC_SESSION_PREMIUM_REQUESTS,
        Instrument.COUNTER,
        "{request}",
        "Premium requests from the CLI's session accounting (session.shutdown): what each "
        "snapshot adds to the previous one; user-initiated cost only, as the CLI counts it",
        (sc.GEN_AI_REQUEST_MODEL, *REPOSITORY_LABELS),
    ),
    MetricSpec(
        sc.METRIC_SESSION_AI_CREDITS,
        Instrument.COUNTER,
        "{nanoAIU}",
        "AI credits in nano-AIU from the CLI's session accounting (session.shutdown), each "
        "snapshot's addition, when the CLI had amounts",
        (sc.GEN_AI_REQUEST_MODEL, *REPOSITORY_LABELS),
    ),
    MetricSpec(
        sc.METRIC_CODE_LINES,
        Instrument.COUNTER,
        "{line}",
        "Lines of code added and removed, from the CLI's session accounting "
        "(session.shutdown codeChanges), each snapshot's addition",
        (sc.COPILOT_CHANGE, *REPOSITORY_LABELS),
    ),
    MetricSpec(
        sc.METRIC_CODE_FILES_MODIFIED,
        Instrument.COUNTER,
        "{file}",
        "Files newly modified in a session, from the CLI's session accounting "
        "(session.shutdown codeChanges), each snapshot's addition",
        REPOSITORY_LABELS,
    ),
    # --- GenAI semantic conventions ---------------------------------------------------------
    # (semantic-conventions-genai docs/gen-ai/client-inference.md, gen-ai-token-metrics.md;
    # the `--semconv` modes and the previous names: semconv.RENAMED, docs/metrics.md)
    MetricSpec(
        sc.METRIC_INFERENCE_DURATION,
        Instrument.HISTOGRAM,
        "s",
        "LLM call duration as the CLI measured it",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_INFERENCE_INPUT_TOKENS,
        Instrument.HISTOGRAM,
        "{token}",
        "Input tokens per LLM call, by model",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_INFERENCE_OUTPUT_TOKENS,
        Instrument.HISTOGRAM,
        "{token}",
        "Output tokens per LLM call, by model",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_USAGE_INPUT_TOKENS,
        Instrument.COUNTER,
        "{token}",
        "Input tokens spent, by model (cached ones included)",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_USAGE_OUTPUT_TOKENS,
        Instrument.COUNTER,
        "{token}",
        "Output tokens spent, by model (reasoning ones included)",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_USAGE_CACHE_READ_TOKENS,
        Instrument.COUNTER,
        "{token}",
        "Input tokens read from the provider's cache, by model",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_USAGE_CACHE_WRITE_TOKENS,
        Instrument.COUNTER,
        "{token}",
        "Input tokens written to the provider's cache, by model",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_USAGE_REASONING_TOKENS,
        Instrument.COUNTER,
        "{token}",
        "Output tokens spent on reasoning, by model",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_TOKEN_USAGE,
        Instrument.HISTOGRAM,
        "{token}",
        "Previous name (semantic-conventions 1.41.0; --semconv previous|both): tokens per LLM "
        "call, by token type (input, output) and model",
        (
            *_GENAI,
            sc.GEN_AI_TOKEN_TYPE,
            sc.GEN_AI_REQUEST_MODEL,
            sc.GEN_AI_RESPONSE_MODEL,
            *REPOSITORY_LABELS,
        ),
    ),
    MetricSpec(
        sc.METRIC_OPERATION_DURATION,
        Instrument.HISTOGRAM,
        "s",
        "Previous name (semantic-conventions 1.41.0; --semconv previous|both) of "
        "gen_ai.client.inference.duration",
        _INFERENCE,
    ),
    MetricSpec(
        sc.METRIC_INVOKE_AGENT_DURATION,
        Instrument.HISTOGRAM,
        "s",
        "Duration of an agent invocation: a task, or a sub-agent run",
        (*_GENAI, sc.GEN_AI_AGENT_NAME, sc.ERROR_TYPE),
    ),
    MetricSpec(
        sc.METRIC_INVOKE_AGENT_TOOL_CALLS,
        Instrument.HISTOGRAM,
        "{call}",
        "Tool calls per task, sub-agents' included",
        (*_GENAI, sc.GEN_AI_AGENT_NAME),
    ),
    MetricSpec(
        sc.METRIC_INVOKE_AGENT_INFERENCE_CALLS,
        Instrument.HISTOGRAM,
        "{call}",
        "LLM calls per task, sub-agents' included",
        (*_GENAI, sc.GEN_AI_AGENT_NAME),
    ),
    MetricSpec(
        sc.METRIC_EXECUTE_TOOL_DURATION,
        Instrument.HISTOGRAM,
        "s",
        "Tool execution duration",
        (*_GENAI, sc.GEN_AI_TOOL_NAME, sc.ERROR_TYPE),
    ),
    # --- the bridge's own health ------------------------------------------------------------
    MetricSpec(
        sc.METRIC_EVENTS_READ,
        Instrument.COUNTER,
        "{event}",
        "Events decoded from logs or the live stream",
    ),
    MetricSpec(
        sc.METRIC_EVENTS_UNKNOWN,
        Instrument.COUNTER,
        "{event}",
        "Events of a type the bridge's schema does not know (CLI schema drift)",
        (sc.COPILOT_VERSION, sc.COPILOT_EVENT_TYPE),
    ),
    MetricSpec(
        sc.METRIC_EVENTS_FAILED,
        Instrument.COUNTER,
        "{event}",
        "Events (and closing or checkpoint steps) whose handling raised; the session went on",
        (sc.OTEL_BRIDGE_STEP, sc.COPILOT_EVENT_TYPE),
    ),
    MetricSpec(
        sc.METRIC_VALUES_REPAIRED,
        Instrument.COUNTER,
        "{value}",
        "Values of spans made valid for the exporters: text, numbers, times",
        (sc.OTEL_BRIDGE_REASON,),
    ),
    MetricSpec(
        sc.METRIC_LIMITS_REACHED,
        Instrument.COUNTER,
        "{event}",
        "Times a bound on what an open task holds was reached (what was over it was left out)",
        (sc.OTEL_BRIDGE_LIMIT,),
    ),
    MetricSpec(
        sc.METRIC_SESSION_MISMATCHES,
        Instrument.COUNTER,
        "{session}",
        "Sessions whose session.start names another session id than their directory",
    ),
    MetricSpec(
        sc.METRIC_LINES_SKIPPED,
        Instrument.COUNTER,
        "{line}",
        "Log lines that gave no event",
        (sc.OTEL_BRIDGE_REASON,),
    ),
    MetricSpec(
        sc.METRIC_EVENT_LAG,
        Instrument.HISTOGRAM,
        "s",
        "From an event's timestamp to its processing, for events read live",
    ),
    MetricSpec(
        sc.METRIC_SPANS_EXPORTED,
        Instrument.COUNTER,
        "{span}",
        "Spans delivered to every trace destination",
    ),
    MetricSpec(
        sc.METRIC_SPANS_DROPPED,
        Instrument.COUNTER,
        "{span}",
        "Spans dropped: an exporter's queue was full, or the exporter refused the span alone",
    ),
    MetricSpec(
        sc.METRIC_SPANS_REJECTED,
        Instrument.COUNTER,
        "{span}",
        "Spans an exporter could not take even alone (dropped from it), by exporter",
        (sc.OTEL_BRIDGE_EXPORTER,),
    ),
    MetricSpec(
        sc.METRIC_EXPORT_FAILURES,
        Instrument.COUNTER,
        "{failure}",
        "Failed export attempts (retried), by exporter",
        (sc.OTEL_BRIDGE_EXPORTER,),
    ),
    MetricSpec(
        sc.METRIC_FILES_FOLLOWED, Instrument.GAUGE, "{file}", "Session logs `run` is following"
    ),
    MetricSpec(
        sc.METRIC_FILES_SKIPPED,
        Instrument.COUNTER,
        "{file}",
        "Session logs not read: a link, not a regular file, over --max-log-bytes, a second "
        "path of a file already read, an unprintable name, no permission",
        (sc.OTEL_BRIDGE_REASON,),
    ),
    MetricSpec(
        sc.METRIC_SESSIONS_RESIDENT,
        Instrument.GAUGE,
        "{session}",
        "Sessions `run` holds in memory (quiet ones with no task open are evicted)",
    ),
    MetricSpec(
        sc.METRIC_WATCH_PROBLEMS,
        Instrument.COUNTER,
        "{problem}",
        "File-system notifications unavailable (polling instead) or dropped by the kernel",
        (sc.OTEL_BRIDGE_REASON,),
    ),
    MetricSpec(
        sc.METRIC_LABELS_CAPPED,
        Instrument.COUNTER,
        "{observation}",
        "Observations with a label value recorded as other: that label of that metric had "
        "its fill of distinct values",
        (sc.OTEL_BRIDGE_METRIC, sc.OTEL_BRIDGE_LABEL),
    ),
    MetricSpec(
        sc.METRIC_CHECKPOINT_FAILURES,
        Instrument.COUNTER,
        "{failure}",
        "Checkpoint saves that failed (retried with back-off)",
    ),
)

BUCKETS: Mapping[str, tuple[float, ...]] = {
    sc.METRIC_TURNS_PER_MESSAGE: TURN_BUCKETS,
    sc.METRIC_PERMISSION_WAIT: SECONDS_BUCKETS,
    sc.METRIC_INFERENCE_DURATION: SECONDS_BUCKETS,
    sc.METRIC_INFERENCE_INPUT_TOKENS: TOKEN_BUCKETS,
    sc.METRIC_INFERENCE_OUTPUT_TOKENS: TOKEN_BUCKETS,
    sc.METRIC_TOKEN_USAGE: TOKEN_BUCKETS,
    sc.METRIC_OPERATION_DURATION: SECONDS_BUCKETS,
    sc.METRIC_INVOKE_AGENT_INFERENCE_CALLS: COUNT_BUCKETS,
    sc.METRIC_INVOKE_AGENT_DURATION: SECONDS_BUCKETS,
    sc.METRIC_INVOKE_AGENT_TOOL_CALLS: COUNT_BUCKETS,
    sc.METRIC_EXECUTE_TOOL_DURATION: SECONDS_BUCKETS,
    sc.METRIC_EVENT_LAG: SECONDS_BUCKETS,
    sc.METRIC_CONTEXT_UTILIZATION: UTILIZATION_BUCKETS,
}
