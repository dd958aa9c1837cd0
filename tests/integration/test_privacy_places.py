"""Issue 32, item 1: with --capture-content, no secret of any shape of the corpus
(tests/secrets_corpus.py, `SHAPES`) comes out of any place content lands.

The places are those the assembler fills from the log with content capture on
(otel_bridge/assembler: `ContentPolicy.put`, `.show`, `.opt_in`, unknown events' data): the
prompt (`gen_ai.input.messages`, `input.value`, `copilot.task.title`), the answer
(`gen_ai.output.messages`, `output.value`), tool arguments and results
(`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), error and warning messages (status
messages, `copilot.error.message`, `copilot.warning.message`, on spans and their events), and an
unknown event's data (`copilot.event.data`, with --keep-unknown-events). In process, a property
over shapes and places (assembler then scrubber); then one `otel-bridge replay` of every shape
in every place, whose traces file, console exporter output and log are searched whole.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_bridge import AssemblerConfig, SpanRecord
from otel_bridge.processors import Scrubber
from tests import paths, spantree
from tests.builder import Log
from tests.processes import bridge_env
from tests.secrets_corpus import SHAPES, Shape


def _prompt(log: Log, text: str) -> None:
    log.user(content=text)


def _answer(log: Log, text: str) -> None:
    log.add("assistant.message", messageId="m-answer", content=text, turnId="0", toolRequests=[])


def _tool_arguments(log: Log, text: str) -> None:
    log.add(
        "tool.execution_start", toolCallId="c-args", toolName="bash", arguments={"command": text}
    )
    log.tool_done("c-args")


def _tool_result(log: Log, text: str) -> None:
    log.tool_start("c-result", "bash")
    log.tool_done("c-result", result={"content": text})


def _tool_error(log: Log, text: str) -> None:
    log.tool_start("c-error", "bash")
    log.tool_done("c-error", success=False, error={"message": text, "code": "failure"})


def _session_error(log: Log, text: str) -> None:
    log.add("session.error", message=text, errorType="query", stack=text)


def _warning(log: Log, text: str) -> None:
    log.add("session.warning", message=text, warningType="notice")


def _model_failure(log: Log, text: str) -> None:
    log.add("model.call_failure", errorMessage=text, errorCode="500", model="gpt-4.1")


def _unknown_event(log: Log, text: str) -> None:
    log.add("acme.custom_note", note=text, nested={"lines": [text]})


PLACES: dict[str, Callable[[Log, str], None]] = {
    "prompt": _prompt,
    "answer": _answer,
    "tool_arguments": _tool_arguments,
    "tool_result": _tool_result,
    "tool_error": _tool_error,
    "session_error": _session_error,
    "warning": _warning,
    "model_failure": _model_failure,
    "unknown_event": _unknown_event,
}
CONFIG = AssemblerConfig(capture_content=True, keep_unknown_events=True)


def _log(tasks: list[list[tuple[str, str]]]) -> Log:
    """One session, a task for each list of (place, text): each answer in a turn of its own
    (the assembler joins a turn's messages as they come, so one answer's end would be glued
    to the next one's start), each session error in a task of its own (one ends its task: what
    came after it would have no task to land on)."""
    log = Log()
    log.start()
    for number, planted in enumerate(tasks):
        task = f"i{number}"
        prompts = [text for place, text in planted if place == "prompt"]
        log.user(content="\n".join(prompts) or "fix the build", interaction=task)
        log.turn("0", task)
        log.usage(f"{task}-u0")
        for place, text in planted:
            if place not in ("prompt", "answer", "session_error"):
                PLACES[place](log, text)
        log.turn_end("0")
        answers = [text for place, text in planted if place == "answer"]
        for index, text in enumerate(answers, start=1):  # an answer without tools ends it
            log.turn(str(index), task)
            log.usage(f"{task}-u{index}")
            _answer(log, text)
            log.turn_end(str(index))
        errors = [text for place, text in planted if place == "session_error"]
        for index, text in enumerate(errors):
            log.user(content="try again", interaction=f"{task}-error-{index}")
            _session_error(log, text)
    return log


def _exported(records: list[SpanRecord]) -> str:
    """Every string the records carry, as sinks would write them."""
    return "\n".join(repr(record) for record in records)


@settings(max_examples=200, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    place=st.sampled_from(sorted(PLACES)),
    seed=st.integers(0, 2**32 - 1),
    around=st.sampled_from(["{}", "run this:\n{}\nthanks", "I ran `{}` and it failed"]),
)
def test_no_shape_leaves_any_place_content_lands(
    shape: Shape, place: str, seed: int, around: str
) -> None:
    text, core = shape.draw(random.Random(seed))
    if "`" in around and "\n" in text:
        around = "{}"  # a block in backquotes is a line
    records = Scrubber().records(
        spantree.assemble(_log([[(place, around.format(text))]]), config=CONFIG)
    )
    out = _exported(records)
    assert "[REDACTED:" in out  # the content landed, and was redacted
    assert core not in out, next(line for line in out.splitlines() if core in line)


def test_every_shape_in_every_place_leaves_no_trace_in_the_traces_file_console_or_log(
    tmp_path: Path,
) -> None:
    rng = random.Random(32)
    tasks = [[(place, *shape.draw(rng)) for place in PLACES] for shape in SHAPES]
    planted = [item for task in tasks for item in task]
    log = _log([[(place, text) for place, text, _ in task] for task in tasks])
    session = tmp_path / "session-state" / "d3ebfa08-de8a-4b43-93da-591db8061cb6"
    session.mkdir(parents=True)
    (session / "events.jsonl").write_bytes(log.jsonl())
    traces = tmp_path / "traces.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_bridge",
            "--log-level",
            "DEBUG",
            "replay",
            str(session.parent),
            "--no-progress",
            "--capture-content",
            "--keep-unknown-events",
            "--traces-file",
            str(traces),
        ],
        env=bridge_env(
            {
                "PYTHONPATH": str(paths.REPO),
                "OTEL_TRACES_EXPORTER": "console",
                "OTEL_METRICS_EXPORTER": "none",
            }
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = {"traces-file": traces.read_text(), "console": done.stdout, "log": done.stderr}
    assert "[REDACTED:" in outputs["traces-file"] and "[REDACTED:" in outputs["console"]
    # the content is there: every place's attribute is in the file
    for key in (
        "gen_ai.input.messages",
        "input.value",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "copilot.error.message",
        "copilot.warning.message",
        "copilot.event.data",
    ):
        assert key in outputs["traces-file"], key
    leaks = [
        f"{sink}: {place} {text[:60]!r}"
        for place, text, core in planted
        for sink, data in outputs.items()
        if core in data or json.dumps(core)[1:-1] in data
    ]
    assert not leaks, f"{len(leaks)} leaks:\n" + "\n".join(leaks[:40])


def test_a_title_cut_before_the_context_of_its_secret_is_taken_from_the_redacted_prompt() -> None:
    """The task's title (its prompt's first words, taken by the assembler before redaction) can
    end on a secret whose context comes after the cut (`echo X` without the `| sudo -S` that
    gives it away): the title, and a root span named after it, are made again from the prompt
    redacted whole."""
    password = "Xk9fPq2LmZ7tWb4R"
    prompt = f"one two three four five six seven eight nine ten echo {password} | sudo -S true"
    log = Log()
    log.start()
    log.user(content=prompt)
    log.simple_turn("0", "u1")
    config = AssemblerConfig(capture_content=True, root_name="task {title}")
    raw = spantree.assemble(log, config=config)
    (root,) = [record for record in raw if record.name.startswith("task ")]
    assert root.attributes["copilot.task.title"].endswith(password)  # what the cut leaves
    (scrubbed,) = [r for r in Scrubber().records(raw) if r.span_id == root.span_id]
    assert password not in _exported([scrubbed])
    assert scrubbed.attributes["copilot.task.title"].endswith("echo [REDACTED:secret]")
    assert scrubbed.name == "task " + scrubbed.attributes["copilot.task.title"]
