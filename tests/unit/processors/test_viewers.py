"""What LLM viewers (Arize Phoenix and other OpenInference readers) find on the spans: one kind
for every turn, and, with content capture on only, the user's message and the final answer as
the root's `input.value` / `output.value`, and a readable title (docs/viewers.md). The same in a
real Phoenix: tests/integration/test_phoenix.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_bridge import semconv as sc
from otel_bridge._records import SpanRecord
from otel_bridge._words import task_title
from otel_bridge.assembler import AssemblerConfig
from otel_bridge.decode._lines import JsonLinesDecoder
from otel_bridge.processors import Scrubber, ScrubberConfig
from otel_bridge.sources._discovery import read_client_name, read_session_name
from tests import paths, spantree
from tests.builder import Log

FIXTURES = paths.FIXTURES
NESTED = FIXTURES / "subagent_nested" / "events.jsonl"
GIT_LOG = FIXTURES / "git_repo" / "events.jsonl"  # has a workspace.yaml with a `name:`
#: Every key this change puts text from the log under.
TEXT_KEYS = (
    sc.INPUT_VALUE,
    sc.OUTPUT_VALUE,
    sc.INPUT_MIME_TYPE,
    sc.OUTPUT_MIME_TYPE,
    sc.COPILOT_TASK_TITLE,
    sc.COPILOT_SESSION_NAME,
)
SECRET = "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c"


def assemble(path: Path, config: AssemblerConfig) -> list[SpanRecord]:
    """Replay one log as `replay` does, with `config`."""
    return spantree.assemble(path, config=config)


def raw_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main_agent(event: dict[str, Any]) -> bool:
    """An event of the main agent: not a sub-agent's (by its source or its parent call)."""
    data = event.get("data", {})
    return not data.get("parentToolCallId") and not str(data.get("source", "")).startswith("agent-")


def prompt_and_answer(path: Path) -> tuple[str, str]:
    """The log's first user message and the main agent's last non-empty message."""
    events = [e for e in raw_events(path) if main_agent(e)]
    prompt = next(e["data"]["content"] for e in events if e["type"] == "user.message")
    answer = [
        e["data"]["content"]
        for e in events
        if e["type"] == "assistant.message" and e["data"].get("content")
    ][-1]
    return prompt, answer


def capturing(**kwargs: Any) -> AssemblerConfig:
    return AssemblerConfig(capture_content=True, client_name_of=read_client_name, **kwargs)


def test_with_content_the_root_shows_the_message_and_the_final_answer() -> None:
    spans = assemble(NESTED, capturing())
    prompt, answer = prompt_and_answer(NESTED)
    assert answer == "Nested delegation finished. Done."  # the fixture's, not an earlier turn's
    (root,) = [s for s in spans if s.parent_span_id is None]
    assert root.name == "invoke_agent copilot"  # the GenAI span name stays
    assert root.attributes[sc.INPUT_VALUE] == prompt
    assert root.attributes[sc.OUTPUT_VALUE] == answer
    assert root.attributes[sc.INPUT_MIME_TYPE] == root.attributes[sc.OUTPUT_MIME_TYPE]
    assert root.attributes[sc.INPUT_MIME_TYPE] == "text/plain"
    assert root.attributes[sc.COPILOT_TASK_TITLE] == task_title(prompt)
    assert prompt.startswith(str(root.attributes[sc.COPILOT_TASK_TITLE]))
    # each sub-agent's output is its own last answer, each turn's its own text
    sub_outputs = {
        s.attributes.get(sc.OUTPUT_VALUE) for s in spans if s.name == "invoke_agent general-purpose"
    }
    assert sub_outputs == {
        "Inner agent: printed deep.",
        "Outer agent: the inner agent printed deep.",
    }
    turn_outputs = [s.attributes.get(sc.OUTPUT_VALUE) for s in spans if s.name == "turn"]
    assert answer in turn_outputs
    # each agent is asked its own message (a sub-agent: its `task` call's prompt), and so is
    # each of its LLM calls
    by_id = {s.span_id: s for s in spans}
    agents = [s for s in spans if s.name.startswith("invoke_agent")]
    assert {s.attributes[sc.INPUT_VALUE] for s in agents} == {
        prompt,
        "SUB-OUTER: delegate `echo deep` to another agent.",
        "SUB-INNER: run `echo deep` and report.",
    }
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 6  # two turns of each agent
    for chat in chats:
        agent = by_id[by_id[chat.parent_span_id].parent_span_id]  # chat -> turn -> agent
        assert chat.attributes[sc.INPUT_VALUE] == agent.attributes[sc.INPUT_VALUE], chat.name


def test_with_content_each_chat_span_shows_its_calls_message() -> None:
    """A call's usage record comes before its message in the log: with content on, its chat
    span waits for the message and shows its text as its output (not the response id); the
    spans are the same ones, the same ids, as without content."""
    messages = {
        e["data"]["apiCallId"]: e["data"].get("content") or ""
        for e in raw_events(NESTED)
        if e["type"] == "assistant.message"
    }
    spans = assemble(NESTED, capturing())
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 6
    for chat in chats:
        text = messages[str(chat.attributes[sc.GEN_AI_RESPONSE_ID])]
        assert chat.attributes.get(sc.OUTPUT_VALUE) == (text or None), chat.span_id
    assert sum(sc.OUTPUT_VALUE in c.attributes for c in chats) == 4  # two calls asked tools only
    without = assemble(NESTED, AssemblerConfig(client_name_of=read_client_name))
    assert sorted(s.span_id for s in spans) == sorted(s.span_id for s in without)
    assert not any(sc.OUTPUT_VALUE in s.attributes for s in without)


def test_a_chat_span_whose_message_never_comes_goes_out_with_its_turn() -> None:
    log = Log(session="s-held")
    log.start()
    log.user(interaction="i")
    log.simple_turn("0", "u0", interaction="i")
    lines = [
        line
        for line in log.jsonl().decode().splitlines()
        if json.loads(line)["type"] != "assistant.message"
    ]
    events = JsonLinesDecoder("s").feed(("\n".join(lines) + "\n").encode())
    spans = spantree.assemble(events, "s", config=capturing())
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 1 and sc.OUTPUT_VALUE not in chats[0].attributes


@pytest.mark.parametrize("capture", [False, True], ids=["content-off", "content-on"])
def test_every_turn_is_a_chain_and_no_other_span_names_a_kind(capture: bool) -> None:
    """One kind for every turn, content or not (it is no text); the other spans are left to
    the GenAI names, from which Phoenix takes AGENT, LLM and TOOL."""
    config = capturing() if capture else AssemblerConfig(client_name_of=read_client_name)
    for path in sorted(FIXTURES.glob("*/events.jsonl")):
        for span in assemble(path, config):
            kind = span.attributes.get(sc.OPENINFERENCE_SPAN_KIND)
            if span.name == "turn":
                assert kind == "CHAIN", (path, span.name)
            else:
                assert kind is None, (path, span.name)


def test_without_content_no_text_goes_to_the_viewers() -> None:
    names: list[str] = []

    def reader(stream: str) -> str | None:
        names.append(stream)
        return read_session_name(stream)

    for path in sorted(FIXTURES.glob("*/events.jsonl")):
        config = AssemblerConfig(client_name_of=read_client_name, session_name_of=reader)
        for span in assemble(path, config):
            assert not set(TEXT_KEYS) & set(span.attributes), (path, span.name)
    assert names == []  # the session's name is not even read


def test_with_content_the_session_name_comes_from_workspace_yaml() -> None:
    spans = assemble(GIT_LOG, capturing(session_name_of=read_session_name))
    roots = sorted((s for s in spans if s.parent_span_id is None), key=lambda s: s.start_ns)
    prompts = [
        e["data"]["content"]
        for e in raw_events(GIT_LOG)
        if e["type"] == "user.message" and main_agent(e)
    ]
    assert len(prompts) == 2  # a session resumed: two tasks, one name
    assert [root.attributes[sc.INPUT_VALUE] for root in roots] == prompts
    for root in roots:
        assert root.attributes[sc.COPILOT_SESSION_NAME] == "GIT-PROMPT: start a feature branch."
    # no reader, no name; the rest stays
    (plain,) = [s for s in assemble(GIT_LOG, capturing()) if s.parent_span_id is None][:1]
    assert sc.COPILOT_SESSION_NAME not in plain.attributes
    assert sc.INPUT_VALUE in plain.attributes


def test_the_session_name_reader(tmp_path: Path) -> None:
    log = str(tmp_path / "events.jsonl")
    assert read_session_name(log) is None  # no workspace.yaml
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text("id: x\nclient_name: github/cli\nname: 'it''s: the task'\n")
    assert read_session_name(log) == "it's: the task"
    assert read_client_name(log) == "github/cli"
    workspace.write_text('name: "fix the build"\nuser_named: true\n')
    assert read_session_name(log) == "fix the build"
    workspace.write_text("name: >-\n  a long first\n  message\n")
    assert read_session_name(log) is None  # a block scalar is not read as ">-"
    workspace.write_text("id: x\nsummary_count: 0\n")
    assert read_session_name(log) is None


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Fix the build", "Fix the build"),
        ("  several\nlines\tof text  ", "several lines of text"),
        (" ".join(f"w{i}" for i in range(20)), " ".join(f"w{i}" for i in range(12))),
        ("x" * 30 + " " + "y" * 45 + " z tail", "x" * 30 + " " + "y" * 45 + " z"),
        ("x" * 60 + " " + "y" * 30, "x" * 60),
        (SECRET * 3 + " then", SECRET * 3),  # a long first word stays whole
        ("", ""),
    ],
)
def test_the_task_title_is_whole_first_words(text: str, title: str) -> None:
    assert task_title(text) == title


def test_the_scrubber_redacts_and_cuts_what_goes_to_the_viewers() -> None:
    """A secret in the message or the answer is redacted in the viewer's copies as in the
    GenAI ones, and a long text is cut to --content-max-chars, after redaction."""
    text = f"deploy with {SECRET} please " + "x" * 500
    scrubber = Scrubber(ScrubberConfig(content_max_chars=100))
    attributes: dict[str, Any] = {key: text for key in TEXT_KEYS if "mime" not in key}
    out = scrubber.attributes(attributes)
    for key, value in out.items():
        assert SECRET not in value and "Ab3dEf6hIj9kLm2n" not in value, key
        assert "[REDACTED:" in value, key
        assert value.endswith("...[truncated]") and len(value) < 130, key


def test_a_secret_in_the_first_words_is_not_cut_out_of_the_scrubbers_sight() -> None:
    spans = assemble_text(f"use {SECRET} now")
    (root,) = [s for s in spans if s.parent_span_id is None]
    scrubbed = Scrubber().attributes(root.attributes)
    for key in (sc.INPUT_VALUE, sc.COPILOT_TASK_TITLE):
        assert SECRET in str(root.attributes[key])  # captured...
        assert "Ab3dEf6hIj9kLm2n" not in str(scrubbed[key])  # ...and redacted on the way out


def assemble_text(prompt: str) -> list[SpanRecord]:
    """A one-turn session whose user message is `prompt` (the builder's log), content on."""
    log = Log()
    log.start()
    log.user(content=prompt)
    log.simple_turn("0", "u1")
    return spantree.assemble(log, "s", config=capturing())
