"""The bridge's metrics: one catalogue, and the protocol through which they are observed.

Why a catalogue: the export adapter creates its instruments from it, `stats` aggregates by it,
docs/metrics.md defines each entry (a test checks that none is missing), and dashboards and
alert rules query the Prometheus names derived from it. One list, so that these cannot drift.

The assembler observes through `MetricsRecorder`; it never imports the SDK. Attributes are
bounded values only (modes, outcomes, tool and model names, error types): never a session id,
prompt or path. The session id travels beside the attributes, for `stats`, and the OpenTelemetry
adapter drops it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ._records import AttributeValue

__all__ = [
    "CATALOGUE",
    "OPTIONAL_LABELS",
    "REPOSITORY_LABELS",
    "Instrument",
    "MetricSpec",
    "MetricsRecorder",
    "NullRecorder",
    "prometheus_name",
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

_GENAI = ("gen_ai.operation.name", "gen_ai.provider.name")

# --- attribution labels (docs/metrics.md, "Attribution labels") -------------------------------
#: Every metric with a model label also carries the session's repository: its owner and its
#: name (the VCS conventions split `owner/name`; the owner adds no series of its own). Absent
#: for a session outside a git checkout with a remote. A test checks that no model metric lacks
#: them; the assembler's meter adds them to whatever metric lists them (`SessionMeter`).
REPOSITORY_LABELS = ("vcs.owner.name", "vcs.repository.name")
#: Labels of the inference (LLM call) metrics.
_INFERENCE = (*_GENAI, "gen_ai.request.model", "gen_ai.response.model", *REPOSITORY_LABELS)
#: The further attribution labels `--metric-labels` may add to those same metrics, by the name
#: the option takes. Off by default: each multiplies the series (docs/metrics.md). Paths,
#: commits and session ids are never labels (tests/test_attribution.py goes over every label).
OPTIONAL_LABELS: Mapping[str, str] = {
    "branch": "vcs.ref.head.name",
    "host": "copilot.repository.host",
    "provider": "vcs.provider.name",
    "client": "copilot.client.name",
}

CATALOGUE: tuple[MetricSpec, ...] = (
    # --- mission metrics -------------------------------------------------------------------
    MetricSpec(
        "copilot.turns_per_message",
        Instrument.HISTOGRAM,
        "{turn}",
        "Main-agent turns per top-level user message (a task); autopilot continuation "
        "turns count into the task they continue",
        ("copilot.mode",),
    ),
    MetricSpec(
        "copilot.tasks",
        Instrument.COUNTER,
        "{task}",
        "Tasks (top-level user messages) by how they ended",
        ("copilot.task.outcome", "copilot.mode", *REPOSITORY_LABELS),
    ),
    MetricSpec(
        "copilot.turns",
        Instrument.COUNTER,
        "{turn}",
        "Agent turns started (assistant.turn_start)",
        ("copilot.agent.type",),
    ),
    MetricSpec(
        "copilot.user_messages",
        Instrument.COUNTER,
        "{message}",
        "User messages to the main agent, autopilot continuations apart",
        ("copilot.continuation", "copilot.delivery"),
    ),
    MetricSpec(
        "copilot.tool.calls",
        Instrument.COUNTER,
        "{call}",
        "Tool executions by tool and outcome",
        ("gen_ai.tool.name", "copilot.tool.outcome", "copilot.agent.type"),
    ),
    MetricSpec(
        "copilot.session.errors",
        Instrument.COUNTER,
        "{error}",
        "session.error events by error type",
        ("error.type", "copilot.agent.type"),
    ),
    MetricSpec(
        "copilot.aborts",
        Instrument.COUNTER,
        "{abort}",
        "Interactions aborted (abort events)",
        ("copilot.abort.reason",),
    ),
    MetricSpec(
        "copilot.compactions",
        Instrument.COUNTER,
        "{compaction}",
        "Context compactions finished",
        ("copilot.compaction.outcome",),
    ),
    MetricSpec(
        "copilot.autopilot.continuations",
        Instrument.COUNTER,
        "{message}",
        "Autopilot continuation nudges (the model stopped without task_complete)",
    ),
    MetricSpec(
        "copilot.autopilot.limit_stops",
        Instrument.COUNTER,
        "{task}",
        "Autopilot tasks the CLI stopped at its continuation limit (--max-autopilot-continues)",
    ),
    MetricSpec(
        "copilot.skills.invoked",
        Instrument.COUNTER,
        "{invocation}",
        "Skills invoked (skill.invoked), by skill name",
        ("copilot.skill.name",),
    ),
    MetricSpec(
        "copilot.permission.wait.duration",
        Instrument.HISTOGRAM,
        "s",
        "Time from a permission request to its answer",
        ("copilot.permission.result",),
    ),
    MetricSpec(
        "copilot.sessions.active",
        Instrument.GAUGE,
        "{session}",
        "Sessions whose agent is working now (an interaction is open)",
    ),
    # --- cost and code changes (docs/metrics.md, "Cost and code changes") ----------------------
    MetricSpec(
        "copilot.premium_requests",
        Instrument.COUNTER,
        "{request}",
        "Premium requests per LLM call, from its usage record's cost (bring-your-own-key "
        "calls not counted: their 0 is not a price)",
        (
            "gen_ai.request.model",
            "gen_ai.agent.name",
            "copilot.agent.type",
            "copilot.mode",
            *REPOSITORY_LABELS,
        ),
    ),
    MetricSpec(
        "copilot.ai_credits",
        Instrument.COUNTER,
        "{nanoAIU}",
        "AI credits in nano-AIU per LLM call, from its usage record (calls that reported an "
        "amount)",
        (
            "gen_ai.request.model",
            "gen_ai.agent.name",
            "copilot.agent.type",
            "copilot.mode",
            *REPOSITORY_LABELS,
        ),
    ),
    MetricSpec(
        "copilot.session.premium_requests",
        Instrument.COUNTER,
        "{request}",
        "Premium requests from the CLI's session accounting (session.shutdown): what each "
        "snapshot adds to the previous one; user-initiated cost only, as the CLI counts it",
        ("gen_ai.request.model", *REPOSITORY_LABELS),
    ),
    MetricSpec(
        "copilot.session.ai_credits",
        Instrument.COUNTER,
        "{nanoAIU}",
        "AI credits in nano-AIU from the CLI's session accounting (session.shutdown), each "
        "snapshot's addition, when the CLI had amounts",
        ("gen_ai.request.model", *REPOSITORY_LABELS),
    ),
    MetricSpec(
        "copilot.code.lines",
        Instrument.COUNTER,
        "{line}",
        "Lines of code added and removed, from the CLI's session accounting "
        "(session.shutdown codeChanges), each snapshot's addition",
        ("copilot.change", *REPOSITORY_LABELS),
    ),
    MetricSpec(
        "copilot.code.files_modified",
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
        "gen_ai.client.inference.duration",
        Instrument.HISTOGRAM,
        "s",
        "LLM call duration as the CLI measured it",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.client.inference.operation.input_tokens",
        Instrument.HISTOGRAM,
        "{token}",
        "Input tokens per LLM call, by model",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.client.inference.operation.output_tokens",
        Instrument.HISTOGRAM,
        "{token}",
        "Output tokens per LLM call, by model",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.client.inference.usage.input_tokens",
        Instrument.COUNTER,
        "{token}",
        "Input tokens spent, by model (cached ones included)",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.client.inference.usage.output_tokens",
        Instrument.COUNTER,
        "{token}",
        "Output tokens spent, by model (reasoning ones included)",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.client.inference.usage.cache_read.input_tokens",
        Instrument.COUNTER,
        "{token}",
        "Input tokens read from the provider's cache, by model",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.client.inference.usage.cache_write.input_tokens",
        Instrument.COUNTER,
        "{token}",
        "Input tokens written to the provider's cache, by model",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.client.inference.usage.reasoning.output_tokens",
        Instrument.COUNTER,
        "{token}",
        "Output tokens spent on reasoning, by model",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.client.token.usage",
        Instrument.HISTOGRAM,
        "{token}",
        "Previous name (semantic-conventions 1.41.0; --semconv previous|both): tokens per LLM "
        "call, by token type (input, output) and model",
        (
            *_GENAI,
            "gen_ai.token.type",
            "gen_ai.request.model",
            "gen_ai.response.model",
            *REPOSITORY_LABELS,
        ),
    ),
    MetricSpec(
        "gen_ai.client.operation.duration",
        Instrument.HISTOGRAM,
        "s",
        "Previous name (semantic-conventions 1.41.0; --semconv previous|both) of "
        "gen_ai.client.inference.duration",
        _INFERENCE,
    ),
    MetricSpec(
        "gen_ai.invoke_agent.duration",
        Instrument.HISTOGRAM,
        "s",
        "Duration of an agent invocation: a task, or a sub-agent run",
        (*_GENAI, "gen_ai.agent.name", "error.type"),
    ),
    MetricSpec(
        "gen_ai.invoke_agent.tool_calls",
        Instrument.HISTOGRAM,
        "{call}",
        "Tool calls per task, sub-agents' included",
        (*_GENAI, "gen_ai.agent.name"),
    ),
    MetricSpec(
        "gen_ai.invoke_agent.inference_calls",
        Instrument.HISTOGRAM,
        "{call}",
        "LLM calls per task, sub-agents' included",
        (*_GENAI, "gen_ai.agent.name"),
    ),
    MetricSpec(
        "gen_ai.execute_tool.duration",
        Instrument.HISTOGRAM,
        "s",
        "Tool execution duration",
        (*_GENAI, "gen_ai.tool.name", "error.type"),
    ),
    # --- the bridge's own health ------------------------------------------------------------
    MetricSpec(
        "otel_bridge.events.read",
        Instrument.COUNTER,
        "{event}",
        "Events decoded from logs or the live stream",
    ),
    MetricSpec(
        "otel_bridge.events.unknown",
        Instrument.COUNTER,
        "{event}",
        "Events of a type the bridge's schema does not know (CLI schema drift)",
        ("copilot.version", "copilot.event.type"),
    ),
    MetricSpec(
        "otel_bridge.events.failed",
        Instrument.COUNTER,
        "{event}",
        "Events (and closing or checkpoint steps) whose handling raised; the session went on",
        ("otel_bridge.step", "copilot.event.type"),
    ),
    MetricSpec(
        "otel_bridge.values.repaired",
        Instrument.COUNTER,
        "{value}",
        "Values of spans made valid for the exporters: text, numbers, times",
        ("otel_bridge.reason",),
    ),
    MetricSpec(
        "otel_bridge.limits.reached",
        Instrument.COUNTER,
        "{event}",
        "Times a bound on what an open task holds was reached (what was over it was left out)",
        ("otel_bridge.limit",),
    ),
    MetricSpec(
        "otel_bridge.sessions.mismatched",
        Instrument.COUNTER,
        "{session}",
        "Sessions whose session.start names another session id than their directory",
    ),
    MetricSpec(
        "otel_bridge.lines.skipped",
        Instrument.COUNTER,
        "{line}",
        "Log lines that gave no event",
        ("otel_bridge.reason",),
    ),
    MetricSpec(
        "otel_bridge.event.lag",
        Instrument.HISTOGRAM,
        "s",
        "From an event's timestamp to its processing, for events read live",
    ),
    MetricSpec(
        "otel_bridge.spans.exported",
        Instrument.COUNTER,
        "{span}",
        "Spans delivered to every trace destination",
    ),
    MetricSpec(
        "otel_bridge.spans.dropped",
        Instrument.COUNTER,
        "{span}",
        "Spans dropped: an exporter's queue was full, or the exporter refused the span alone",
    ),
    MetricSpec(
        "otel_bridge.spans.rejected",
        Instrument.COUNTER,
        "{span}",
        "Spans an exporter could not take even alone (dropped from it), by exporter",
        ("otel_bridge.exporter",),
    ),
    MetricSpec(
        "otel_bridge.export.failures",
        Instrument.COUNTER,
        "{failure}",
        "Failed export attempts (retried), by exporter",
        ("otel_bridge.exporter",),
    ),
    MetricSpec(
        "otel_bridge.files.followed", Instrument.GAUGE, "{file}", "Session logs `run` is following"
    ),
    MetricSpec(
        "otel_bridge.files.skipped",
        Instrument.COUNTER,
        "{file}",
        "Session logs not read: a link, not a regular file, over --max-log-bytes, a second "
        "path of a file already read, an unprintable name, no permission",
        ("otel_bridge.reason",),
    ),
    MetricSpec(
        "otel_bridge.sessions.resident",
        Instrument.GAUGE,
        "{session}",
        "Sessions `run` holds in memory (quiet ones with no task open are evicted)",
    ),
    MetricSpec(
        "otel_bridge.watch.problems",
        Instrument.COUNTER,
        "{problem}",
        "File-system notifications unavailable (polling instead) or dropped by the kernel",
        ("otel_bridge.reason",),
    ),
    MetricSpec(
        "otel_bridge.labels.capped",
        Instrument.COUNTER,
        "{observation}",
        "Observations with a label value recorded as other: that label of that metric had "
        "its fill of distinct values",
        ("otel_bridge.metric", "otel_bridge.label"),
    ),
    MetricSpec(
        "otel_bridge.checkpoint.failures",
        Instrument.COUNTER,
        "{failure}",
        "Checkpoint saves that failed (retried with back-off)",
    ),
)

BUCKETS: Mapping[str, tuple[float, ...]] = {
    "copilot.turns_per_message": TURN_BUCKETS,
    "copilot.permission.wait.duration": SECONDS_BUCKETS,
    "gen_ai.client.inference.duration": SECONDS_BUCKETS,
    "gen_ai.client.inference.operation.input_tokens": TOKEN_BUCKETS,
    "gen_ai.client.inference.operation.output_tokens": TOKEN_BUCKETS,
    "gen_ai.client.token.usage": TOKEN_BUCKETS,
    "gen_ai.client.operation.duration": SECONDS_BUCKETS,
    "gen_ai.invoke_agent.inference_calls": COUNT_BUCKETS,
    "gen_ai.invoke_agent.duration": SECONDS_BUCKETS,
    "gen_ai.invoke_agent.tool_calls": COUNT_BUCKETS,
    "gen_ai.execute_tool.duration": SECONDS_BUCKETS,
    "otel_bridge.event.lag": SECONDS_BUCKETS,
}

_UNIT_SUFFIX = {"s": "seconds", "By": "bytes"}


def prometheus_name(spec: MetricSpec) -> str:
    """The name Prometheus shows, as the OpenTelemetry Prometheus exporter derives it: dots to
    underscores, a unit suffix for real units (annotations like {turn} are dropped), and
    `_total` on counters."""
    name = spec.name.replace(".", "_")
    suffix = _UNIT_SUFFIX.get(spec.unit)
    if suffix and not name.endswith(f"_{suffix}"):
        name += f"_{suffix}"
    if spec.instrument is Instrument.COUNTER:
        name += "_total"
    return name


class MetricsRecorder(Protocol):
    """Where observations go. Called on the assembler's thread; must not block."""

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        """Add `value` to the counter `name`."""

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        """Record one value in the histogram `name`."""


class NullRecorder:
    """Discards observations (the default: spans only)."""

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        return None

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        return None
