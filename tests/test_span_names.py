"""Span names a backend can hold, and values it can search for.

A backend makes an operation of every distinct span name (Jaeger's operation list, the
Collector's spanmetrics connector, Tempo's span-name metrics), and keeps it. So a name says what
kind of step a span is, never which one: an index, an id or free text goes in an attribute. The
GenAI names keep their convention, `{operation} {name}`, with a bounded name (the agent, the
model, the tool). And a failed task or tool call has one attribute value to search for
(copilot.task.failed, copilot.tool.outcome), since Jaeger's search matches values exactly. The
real-Jaeger side of this is in tests/test_jaeger.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_bridge import Assembler, JsonLinesDecoder, StatusCode
from otel_bridge import semconv as sc
from otel_bridge._records import SpanRecord
from otel_bridge.sources._parallel import RecordingRecorder
from tests.builder import Log
from tests.spantree import assemble, assemble_file, outline

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOGS = sorted(FIXTURES.glob("*/events.jsonl"))


def expected_name(span: SpanRecord) -> str:
    """The name a span must have, from its kind and its bounded name attributes alone."""
    attributes = span.attributes
    operation = attributes.get(sc.GEN_AI_OPERATION_NAME)
    if operation == sc.OP_INVOKE_AGENT:
        return f"invoke_agent {attributes.get(sc.GEN_AI_AGENT_NAME, 'subagent')}"
    if operation == sc.OP_EXECUTE_TOOL:
        return f"execute_tool {attributes[sc.GEN_AI_TOOL_NAME]}"
    if operation == sc.OP_CHAT:
        model = attributes.get(sc.GEN_AI_REQUEST_MODEL) or attributes.get(sc.GEN_AI_RESPONSE_MODEL)
        return f"chat {model or 'unknown'}"
    assert sc.COPILOT_TURN_INDEX in attributes, span.name
    return "turn"


def test_a_41_turn_task_adds_no_name_per_turn() -> None:
    log = Log()
    log.start()
    log.user()
    for n in range(41):
        log.simple_turn(str(n), f"u{n}", [(f"c{n}", "bash")])
    spans = assemble(log.events())
    assert {s.name for s in spans} == {
        "invoke_agent copilot",
        "turn",
        "chat gpt-4.1",
        "execute_tool bash",
    }
    turns = sorted((s for s in spans if s.name == "turn"), key=lambda s: s.start_ns)
    # the index is still there, as an attribute, in order
    assert [s.attributes[sc.COPILOT_TURN_INDEX] for s in turns] == list(range(1, 42))
    assert [s.attributes[sc.COPILOT_TURN_ID] for s in turns] == [str(n) for n in range(41)]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name)
def test_every_span_of_a_real_log_is_named_by_its_kind_and_bounded_names(path: Path) -> None:
    for span in assemble_file(path):
        assert span.name == expected_name(span), (span.name, span.attributes)


def test_the_outline_shows_a_turn_index_from_its_attribute() -> None:
    """tests/spantree.outline writes `turn #n` (n: copilot.turn.index), so that the hand-drawn
    trees of the other tests still say which turn is which; the span's name is `turn`."""
    log = Log()
    log.start()
    log.user()
    log.simple_turn("0", "u0", [("c0", "view")])
    log.simple_turn("1", "u1")
    spans = assemble(log.events())
    assert outline(spans) == [
        "invoke_agent copilot",
        "  turn #1",
        "    chat gpt-4.1",
        "    execute_tool view",
        "  turn #2",
        "    chat gpt-4.1",
    ]
    assert sorted(s.name for s in spans) == [
        "chat gpt-4.1",
        "chat gpt-4.1",
        "execute_tool view",
        "invoke_agent copilot",
        "turn",
        "turn",
    ]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name)
def test_a_task_says_whether_it_failed_and_a_tool_call_its_outcome(path: Path) -> None:
    recorder = RecordingRecorder()
    decoder = JsonLinesDecoder(str(path))
    assembler = Assembler(metrics=recorder)
    spans = assembler.feed(str(path), decoder.feed(path.read_bytes()) + decoder.finish())
    spans += assembler.end_stream(str(path))
    for span in spans:
        attributes = span.attributes
        if sc.COPILOT_TASK_OUTCOME in attributes:  # a task's root
            failed = attributes[sc.COPILOT_TASK_OUTCOME] in {"failed", "error", "aborted"}
            assert attributes[sc.COPILOT_TASK_FAILED] is failed
        else:
            assert sc.COPILOT_TASK_FAILED not in attributes
        if attributes.get(sc.GEN_AI_OPERATION_NAME) != sc.OP_EXECUTE_TOOL:
            assert sc.COPILOT_TOOL_OUTCOME not in attributes
            continue
        outcome = attributes[sc.COPILOT_TOOL_OUTCOME]
        assert (outcome in {"error", "aborted"}) == (span.status is StatusCode.ERROR), span.name
        assert (outcome == "aborted") == (attributes.get(sc.ERROR_TYPE) == "aborted")
        assert (outcome == "incomplete") == (attributes.get(sc.COPILOT_INCOMPLETE) is True)
    # the span says what its metric counts
    counted = sorted(
        attributes[sc.COPILOT_TOOL_OUTCOME]
        for _, name, _, attributes, _ in recorder.calls
        if name == sc.METRIC_TOOL_CALLS
    )
    on_spans = sorted(
        s.attributes[sc.COPILOT_TOOL_OUTCOME]
        for s in spans
        if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL
    )
    assert counted == on_spans
