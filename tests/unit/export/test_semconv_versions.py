"""`--semconv released|previous|both`: the GenAI names of semantic-conventions-genai, those of
semantic-conventions 1.41.0, or both (semconv.RENAMED; docs/metrics.md, "Convention version")."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_bridge import AssemblerConfig, SpanRecord
from otel_bridge import semconv as sc
from otel_bridge.cli._parser import build_parser
from otel_bridge.export import OtelMetricsRecorder
from tests import paths, spantree

FIXTURES = paths.FIXTURES
DOCS = paths.REPO / "docs" / "metrics.md"
#: a log with a sub-agent (its agentId) and usage records (tokens, durations)
LOG = FIXTURES / "subagent" / "events.jsonl"


def assemble(mode: str, recorder: OtelMetricsRecorder | None = None) -> list[SpanRecord]:
    config = AssemblerConfig(semconv=mode)
    return spantree.assemble(LOG, "s", "subagent", config=config, metrics=recorder)


def points(mode: str) -> dict[str, list[tuple[dict, float]]]:
    """Each metric the recorder exported in `mode`: (labels, sum or value) per point."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    assemble(mode, OtelMetricsRecorder(provider, semconv_mode=mode))
    found: dict[str, list[tuple[dict, float]]] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                for point in metric.data.data_points:
                    value = getattr(point, "sum", getattr(point, "value", 0))
                    if getattr(point, "count", 1):
                        found.setdefault(metric.name, []).append(
                            (dict(point.attributes or {}), value)
                        )
    provider.shutdown()
    return found


def total(found: dict[str, list[tuple[dict, float]]], name: str, **labels: str) -> float:
    return sum(
        value
        for attributes, value in found.get(name, [])
        if all(attributes.get(k.replace("__", ".")) == v for k, v in labels.items())
    )


def test_docs_table_lists_every_renamed_name() -> None:
    """docs/metrics.md's table of renamed names is semconv.RENAMED, row for row."""
    text = DOCS.read_text()
    table = text.split("| previous (semantic-conventions 1.41.0) |")[1].split("\n\n")[0]
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    assert len(rows) == len(sc.RENAMED)
    for row, (previous, released, _) in zip(rows, sc.RENAMED, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[0].replace("`", "") == previous
        assert cells[1] == f"`{released}`"


def test_released_metrics_by_default_and_no_previous_name() -> None:
    found = points(sc.SEMCONV_RELEASED)
    for name in (
        sc.METRIC_INFERENCE_DURATION,
        sc.METRIC_INFERENCE_INPUT_TOKENS,
        sc.METRIC_INFERENCE_OUTPUT_TOKENS,
        sc.METRIC_USAGE_INPUT_TOKENS,
        sc.METRIC_USAGE_OUTPUT_TOKENS,
        sc.METRIC_INVOKE_AGENT_INFERENCE_CALLS,
    ):
        assert name in found, name
    assert sc.METRIC_TOKEN_USAGE not in found
    assert sc.METRIC_OPERATION_DURATION not in found
    # the counters add what the histograms recorded
    assert total(found, sc.METRIC_USAGE_INPUT_TOKENS) == total(
        found, sc.METRIC_INFERENCE_INPUT_TOKENS
    )
    assert total(found, sc.METRIC_INFERENCE_INPUT_TOKENS) > 0


def test_previous_names_carry_the_released_values() -> None:
    released, previous = points(sc.SEMCONV_RELEASED), points(sc.SEMCONV_PREVIOUS)
    assert not {name for name in previous if name.startswith("gen_ai.client.inference.")}
    assert sc.METRIC_INVOKE_AGENT_INFERENCE_CALLS not in previous
    for token_type, name in (
        (sc.TOKEN_TYPE_INPUT, sc.METRIC_INFERENCE_INPUT_TOKENS),
        (sc.TOKEN_TYPE_OUTPUT, sc.METRIC_INFERENCE_OUTPUT_TOKENS),
    ):
        assert total(previous, sc.METRIC_TOKEN_USAGE, gen_ai__token__type=token_type) == total(
            released, name
        )
    assert total(previous, sc.METRIC_OPERATION_DURATION) == pytest.approx(
        total(released, sc.METRIC_INFERENCE_DURATION)
    )
    # unchanged names are there in every mode
    assert sc.METRIC_INVOKE_AGENT_DURATION in previous
    assert sc.METRIC_INVOKE_AGENT_TOOL_CALLS in previous


def test_both_emits_both_names() -> None:
    found = points(sc.SEMCONV_BOTH)
    assert {
        sc.METRIC_TOKEN_USAGE,
        sc.METRIC_OPERATION_DURATION,
        sc.METRIC_INFERENCE_DURATION,
        sc.METRIC_INFERENCE_INPUT_TOKENS,
        sc.METRIC_USAGE_INPUT_TOKENS,
        sc.METRIC_INVOKE_AGENT_INFERENCE_CALLS,
    } <= set(found)
    assert total(found, sc.METRIC_TOKEN_USAGE) == total(
        found, sc.METRIC_INFERENCE_INPUT_TOKENS
    ) + total(found, sc.METRIC_INFERENCE_OUTPUT_TOKENS)


@pytest.mark.parametrize(
    ("mode", "keys"),
    [
        (sc.SEMCONV_RELEASED, {sc.COPILOT_AGENT_ID}),
        (sc.SEMCONV_PREVIOUS, {sc.GEN_AI_AGENT_ID}),
        (sc.SEMCONV_BOTH, {sc.COPILOT_AGENT_ID, sc.GEN_AI_AGENT_ID}),
    ],
)
def test_sub_agent_id_goes_under_the_mode_s_keys(mode: str, keys: set[str]) -> None:
    spans = assemble(mode)
    subagents = [
        s
        for s in spans
        if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_INVOKE_AGENT and s.parent_span_id
    ]
    assert subagents
    for span in subagents:
        present = {sc.COPILOT_AGENT_ID, sc.GEN_AI_AGENT_ID} & set(span.attributes)
        assert present == keys
        assert len({span.attributes[key] for key in present}) == 1


@pytest.mark.parametrize(
    ("mode", "keys"),
    [
        (sc.SEMCONV_RELEASED, {sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS}),
        (sc.SEMCONV_PREVIOUS, {sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS}),
        (
            sc.SEMCONV_BOTH,
            {sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS, sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS},
        ),
    ],
)
def test_cache_write_tokens_go_under_the_mode_s_keys(mode: str, keys: set[str]) -> None:
    chats = [s for s in assemble(mode) if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT]
    with_usage = [s for s in chats if sc.GEN_AI_USAGE_INPUT_TOKENS in s.attributes]
    assert with_usage
    for span in with_usage:
        names = {
            sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
            sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        }
        assert names & set(span.attributes) == keys


def test_run_and_replay_take_the_option_released_by_default() -> None:
    parser = build_parser()
    assert parser.parse_args(["replay", "x"]).semconv == sc.SEMCONV_RELEASED
    assert parser.parse_args(["run", "--semconv", "both"]).semconv == sc.SEMCONV_BOTH
    with pytest.raises(SystemExit):
        parser.parse_args(["replay", "--semconv", "1.41.0", "x"])


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="semconv"):
        AssemblerConfig(semconv="newest")
