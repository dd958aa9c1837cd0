"""Span names a backend can hold, and values it can search for.

A backend makes an operation of every distinct span name (Jaeger's operation list, the
Collector's spanmetrics connector, Tempo's span-name metrics), and keeps it. So a name says what
kind of step a span is, never which one: an index, an id or free text goes in an attribute. The
GenAI names keep their convention, `{operation} {name}`, with a bounded name (the agent, the
model, the tool). And a failed task or tool call has one attribute value to search for
(copilot.task.failed, copilot.tool.outcome), since Jaeger's search matches values exactly. The
real-Jaeger side of this is in tests/integration/test_jaeger.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from otel_bridge import Assembler, AssemblerConfig, JsonLinesDecoder, StatusCode
from otel_bridge import semconv as sc
from otel_bridge._records import SpanRecord
from otel_bridge.assembler._root_name import root_name
from otel_bridge.feed._parallel import RecordingRecorder
from tests import paths, spantree
from tests.builder import Log
from tests.spantree import assemble, assemble_file, outline

FIXTURES = paths.FIXTURES
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
    log = Log.asked()
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
    log = Log.asked()
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


# --- --root-name: a trace list that tells tasks apart (docs/viewers.md) -------------------------


def roots_named(template: str | None, *, capture: bool = False) -> list[SpanRecord]:
    log = Log()
    log.start(context={"cwd": "/src/app", "repository": "octo/app", "branch": "fix-1"})
    log.user("Fix the flaky test in the parser")
    log.simple_turn("0", "u0")
    log.user("Then abort this one", interaction="i2")
    log.turn("0", "i2")
    log.add("abort", reason="user initiated")
    config = AssemblerConfig(root_name=template, capture_content=capture)
    spans = spantree.assemble(log, "s", config=config)
    return sorted((s for s in spans if s.parent_span_id is None), key=lambda s: s.start_ns)


def test_by_default_every_root_keeps_the_genai_name() -> None:
    assert [s.name for s in roots_named(None)] == ["invoke_agent copilot"] * 2


def test_root_name_names_each_task_from_its_facts() -> None:
    roots = roots_named("invoke_agent {agent} · {repository} · {mode} · {outcome} · {branch}")
    assert [s.name for s in roots] == [
        "invoke_agent copilot · octo/app · interactive · no_signal · fix-1",
        "invoke_agent copilot · octo/app · interactive · aborted · fix-1",
    ]
    # a field with no value, and the title, which is content: only with content capture on
    assert [s.name for s in roots_named("{title} ({client})")] == ["- (-)"] * 2
    assert [s.name for s in roots_named("{title}", capture=True)] == [
        "Fix the flaky test in the parser",
        "Then abort this one",
    ]


def test_root_name_keeps_a_name_short_and_on_one_line() -> None:
    facts = {sc.COPILOT_REPOSITORY: "a\nb  " + "x" * 500, sc.COPILOT_MODE: "plan"}
    name = root_name("{mode}: {repository}", facts)
    assert name.startswith("plan: a b xxx") and len(name) == 200


@pytest.mark.parametrize(
    "template", ["{repo}", "{mode!r}", "{mode:>9}", "{}", "{0}", "{mode", "mode}", " "]
)
def test_a_root_name_template_with_an_unknown_field_is_refused(template: str) -> None:
    with pytest.raises(ValueError, match=r"not a field|brace|empty|Single"):
        AssemblerConfig(root_name=template)


def test_replay_refuses_a_bad_root_name_saying_which_fields_there_are() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "otel_bridge", "replay", "--root-name", "{repo}", str(LOGS[0])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--root-name: '{repo}': {repo} is not a field (one of {agent}, {mode}" in done.stderr
