"""The live source on real SDK sessions: github-copilot-sdk drives the npm-installed CLI (the SDK
1.0.27 pins CLI 1.0.104, which npm does not have; 1.0.102 speaks the same protocol, version 3),
`LiveBridge` subscribes to the session, spans go to an in-memory exporter. Then the same
session's events.jsonl is replayed with `otel-bridge replay` (the tailed view): both views must
give the same span ids for the interactions, turns, LLM calls and tool calls.

The provider is given per session; COPILOT_OFFLINE must then not be set (the CLI refuses to
start with both).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_bridge.sources import LiveBridge
from tests import outlines
from tests.e2e.conftest import SHELL_EXIT_CODES, Span, Tree, label, replay
from tests.e2e.copilot import API_KEY, MODEL, Workspace, copilot_env
from tests.e2e.fake_llm import FakeLLM

try:
    from copilot import CopilotClient, PermissionHandler, RuntimeConnection
except ImportError:  # not skipped: the live source is part of what is tested
    pytest.fail(
        "the SDK tests need the Python SDK: pip install github-copilot-sdk==1.0.27", pytrace=False
    )

TIMEOUT = 60.0
SLOW = {
    "name": "slow-bash",
    "when": {"last_contains": "SDK-SLOW"},
    "text": "Running a slow command.",
    "tool_calls": [
        {
            "name": "bash",
            "arguments": {"command": "sleep 30; echo woke", "description": "sleep long"},
        }
    ],
}


def tool_then_answer(marker: str, command: str) -> list[dict[str, Any]]:
    """A prompt containing `marker` gets a bash call; its output gets an answer."""
    word = command.split()[-1]
    return [
        {
            "name": f"{marker}-tool",
            "when": {"last_contains": marker},
            "tool_calls": [
                {"name": "bash", "arguments": {"command": command, "description": "echo"}}
            ],
        },
        {
            "name": f"{marker}-answer",
            "when": {"last_role": "tool", "last_contains": word},
            "text": f"Done: {word}.",
        },
    ]


@dataclass
class LiveRun:
    """An SDK session (or a session and its resumption) watched by a LiveBridge."""

    workspace: Workspace
    fake: FakeLLM
    session_id: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)  # as the SDK delivered them
    spans: list[ReadableSpan] = field(default_factory=list)  # what the LiveBridge exported

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]


class Driver:
    """The SDK client, its sessions, and waiting on their events."""

    def __init__(self, binary: Path, run: LiveRun, bridge: LiveBridge) -> None:
        self.run = run
        self.bridge = bridge
        env = {
            k: v
            for k, v in copilot_env(run.workspace, run.fake.url).items()
            if k
            not in (
                "COPILOT_OFFLINE",
                "COPILOT_PROVIDER_BASE_URL",
                "COPILOT_PROVIDER_API_KEY",
                "COPILOT_MODEL",
            )
        }
        self.client = CopilotClient(
            connection=RuntimeConnection.for_stdio(path=str(binary)),
            base_directory=str(run.workspace.home),
            working_directory=str(run.workspace.project),
            env=env,
        )
        self.provider = {"type": "openai", "base_url": run.fake.url, "api_key": API_KEY}
        self.sessions: list[Any] = []

    def _record(self, event: Any) -> None:
        self.run.events.append(event.to_dict())

    async def open(self, resume: str | None = None) -> Any:
        options = {
            "on_permission_request": PermissionHandler.approve_all,
            "model": MODEL,
            "provider": self.provider,
            "working_directory": str(self.run.workspace.project),
        }
        if resume is None:
            session = await self.client.create_session(**options)
        else:
            session = await self.client.resume_session(resume, **options)
        session.on(self._record)
        self.bridge.attach(session)
        self.sessions.append(session)
        self.run.session_id = session.session_id
        return session

    async def wait_for(self, done: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                kinds = [e["type"] for e in self.run.events][-30:]
                raise AssertionError(f"timed out waiting for {what}; last events: {kinds}")
            await asyncio.sleep(0.05)

    def idles(self) -> int:
        return len(self.run.of_type("session.idle"))

    async def send(self, session: Any, prompt: str) -> None:
        """Send and wait for the agent loop to finish (`session.idle`)."""
        before = self.idles()
        await session.send(prompt)
        await self.wait_for(lambda: self.idles() > before, f"session.idle after {prompt!r}")

    async def close(self) -> None:
        for session in self.sessions:
            with contextlib.suppress(Exception):  # already gone
                await session.disconnect()
        self.sessions.clear()


def drive(
    tmp_path: Path, binary: Path, script: dict[str, Any], body: Callable[[Driver], Any]
) -> LiveRun:
    """Run `body(driver)` against a fresh workspace and fake model; close everything."""
    workspace = Workspace.create(tmp_path / "live")
    exporter = InMemorySpanExporter()
    with FakeLLM(script) as fake:
        run = LiveRun(workspace, fake)
        bridge = LiveBridge(span_exporters=[exporter], metrics=None, environ={})
        driver = Driver(binary, run, bridge)

        async def main() -> None:
            await driver.client.start()
            # SDK 1.0.27 closes the CLI's stdin on stop but leaves its stdout and stderr pipes
            # to the garbage collector (a ResourceWarning, an error under this suite's filters)
            process = getattr(driver.client, "_cli_process", None)
            try:
                await asyncio.wait_for(body(driver), timeout=3 * TIMEOUT)
            finally:
                await driver.close()
                try:
                    await asyncio.wait_for(driver.client.stop(), timeout=20)
                except Exception:
                    await driver.client.force_stop()
                for pipe in (getattr(process, "stdout", None), getattr(process, "stderr", None)):
                    if pipe is not None and not pipe.closed:
                        pipe.close()

        try:
            asyncio.run(main())
            bridge.flush()
        finally:
            bridge.close()
        run.spans = list(exporter.get_finished_spans())
    return run


def as_spans(readable: list[ReadableSpan]) -> list[Span]:
    """Live spans in the shape the OTLP readers give, ids in hex."""
    out = []
    for span in readable:
        status = span.status.status_code.name
        out.append(
            Span(
                name=span.name,
                trace_id=f"{span.context.trace_id:032x}",
                span_id=f"{span.context.span_id:016x}",
                parent_span_id=f"{span.parent.span_id:016x}" if span.parent else None,
                kind=span.kind.name,
                start_ns=span.start_time,
                end_ns=span.end_time,
                status=status,
                status_message=span.status.description or "",
                attributes=dict(span.attributes or {}),
                events=[(e.name, dict(e.attributes or {})) for e in span.events],
                links=[
                    (
                        f"{link.context.trace_id:032x}",
                        f"{link.context.span_id:016x}",
                        dict(link.attributes or {}),
                    )
                    for link in span.links
                ],
            )
        )
    return out


def categories(tree: Tree) -> dict[str, set[str]]:
    return {
        "interaction roots": {s.span_id for s in tree.roots() if s.name == "invoke_agent copilot"},
        "turns": {s.span_id for s in tree.named("turn")},
        "chats": {s.span_id for s in tree.named("chat")},
        "tools": {s.span_id for s in tree.named("execute_tool")},
    }


def compare_with_tail(run: LiveRun, tmp_path: Path) -> tuple[Tree, Tree]:
    """The live spans against a replay of the same session's log: same ids, same parents."""
    live = Tree(as_spans(run.spans))
    logs = run.workspace.event_logs()
    assert len(logs) == 1 and logs[0].parent.name == run.session_id
    tailed = replay(logs[0], tmp_path / "tail").tree
    assert len(live.by_id) == len(live.spans), "the live bridge exported a span twice"
    live.check_well_formed()
    tailed.check_well_formed()
    live_ids, tailed_ids = categories(live), categories(tailed)
    for category, ids in tailed_ids.items():
        assert ids, f"no {category} at all"
        assert live_ids[category] == ids, category
    for span in tailed.spans:
        mirror = live.by_id.get(span.span_id)
        if mirror is not None and not span.name.startswith("invoke_agent copilot"):
            assert (mirror.trace_id, mirror.parent_span_id, mirror.name) == (
                span.trace_id,
                span.parent_span_id,
                span.name,
            )
    return live, tailed


def check_usage(run: LiveRun, live: Tree) -> None:
    """Live chat spans carry the tokens of the live assistant.usage events (and those are the
    tokens the fake model reported)."""
    usage = {e["data"]["apiCallId"]: e["data"] for e in run.of_type("assistant.usage")}
    answered = {r.response_id: r.usage for r in run.fake.requests if r.response_id}
    chats = live.named("chat")
    assert len(chats) == len(usage) == len(answered)
    for chat in chats:
        data = usage[chat.attrs["gen_ai.response.id"]]
        assert chat.attrs["gen_ai.usage.input_tokens"] == data["inputTokens"]
        assert chat.attrs["gen_ai.usage.output_tokens"] == data["outputTokens"]
        assert data["inputTokens"] == answered[chat.attrs["gen_ai.response.id"]]["prompt_tokens"]


def test_live_one_tool_call(tmp_path: Path, copilot_binary: Path) -> None:
    async def body(driver: Driver) -> None:
        session = await driver.open()
        await driver.send(session, "ONE: echo one-tool.")

    script = {"responses": tool_then_answer("ONE", "echo one-tool")}
    run = drive(tmp_path, copilot_binary, script, body)
    live, _ = compare_with_tail(run, tmp_path)
    assert live.outline() == outlines.outline("one_tool_then_answer")
    (root,) = live.roots()
    assert root.attrs["gen_ai.conversation.id"] == run.session_id
    assert root.status == "UNSET"
    (tool,) = live.named("execute_tool")
    (start,) = run.of_type("tool.execution_start")
    assert tool.attrs["gen_ai.tool.call.id"] == start["data"]["toolCallId"]
    if SHELL_EXIT_CODES:  # CLI 1.0.81 writes no shellExecution
        assert tool.attrs["copilot.tool.exit_code"] == 0
    check_usage(run, live)


def test_live_several_messages(tmp_path: Path, copilot_binary: Path) -> None:
    script = {
        "responses": [
            *tool_then_answer("FIRST", "echo first-msg"),
            *tool_then_answer("SECOND", "echo second-msg"),
            {
                "name": "third",
                "when": {"last_contains": "THIRD"},
                "text": "Third answered without tools.",
            },
        ]
    }

    async def body(driver: Driver) -> None:
        session = await driver.open()
        for prompt in ("FIRST: echo.", "SECOND: echo.", "THIRD: just answer."):
            await driver.send(session, prompt)

    run = drive(tmp_path, copilot_binary, script, body)
    live, _ = compare_with_tail(run, tmp_path)
    roots = live.roots()
    assert len(roots) == 3 and len({r.trace_id for r in roots}) == 3
    assert [len(live.children(r, "turn")) for r in roots] == [2, 2, 1]
    assert not roots[0].links
    for previous, root in itertools.pairwise(roots):
        ((trace_id, span_id, _),) = root.links
        assert (trace_id, span_id) == (previous.trace_id, previous.span_id)
    messages = [e for e in run.of_type("user.message") if "agentId" not in e]
    assert [r.attrs["copilot.interaction.id"] for r in roots] == [
        m["data"]["interactionId"] for m in messages
    ]
    check_usage(run, live)


def test_live_abort_during_a_slow_tool(tmp_path: Path, copilot_binary: Path) -> None:
    """`session.abort()` 1 s into `sleep 30`, then another message in the same session."""
    script = {
        "responses": [
            SLOW,
            {
                "name": "after-abort",
                "when": {"last_contains": "AFTER"},
                "text": "Answered after the abort.",
            },
        ]
    }

    async def body(driver: Driver) -> None:
        session = await driver.open()
        before = driver.idles()
        await session.send("SDK-SLOW: run a slow command.")
        await driver.wait_for(
            lambda: bool(driver.run.of_type("tool.execution_start")), "the slow tool to start"
        )
        await asyncio.sleep(1.0)
        await session.abort()
        await driver.wait_for(lambda: driver.idles() > before, "session.idle after the abort")
        await driver.send(session, "AFTER: say something.")

    run = drive(tmp_path, copilot_binary, script, body)
    (abort,) = run.of_type("abort")
    assert not [
        e
        for e in run.of_type("tool.execution_complete")
        if e["data"].get("toolCallId")
        == run.of_type("tool.execution_start")[0]["data"]["toolCallId"]
        and e["data"].get("success")
    ]
    live, _ = compare_with_tail(run, tmp_path)
    aborted, after = live.roots()
    assert aborted.status == "ERROR"
    assert aborted.attrs["error.type"] == "aborted"
    assert aborted.attrs["copilot.task.outcome"] == "aborted"
    assert aborted.attrs["copilot.abort.reason"] == abort["data"]["reason"]
    (tool,) = live.named("execute_tool bash")
    assert live.root_of(tool) is aborted
    assert (tool.status, tool.attrs.get("error.type")) == ("ERROR", "aborted")
    assert (tool.end_ns - tool.start_ns) / 1e9 < 20
    assert after.status == "UNSET"
    assert [label(s) for s in live.children(after)] == ["turn #1"]
    check_usage(run, live)


def test_live_resumed_session(tmp_path: Path, copilot_binary: Path) -> None:
    """A session, disconnected, then resumed with `client.resume_session` and asked again: one
    log with two segments; the bridge continues the same session (and would drop events the SDK
    redelivers on resume)."""
    script = {
        "responses": [
            *tool_then_answer("BEFORE", "echo before-resume"),
            *tool_then_answer("RESUMED", "echo after-resume"),
        ]
    }

    async def body(driver: Driver) -> None:
        session = await driver.open()
        first_id = session.session_id
        await driver.send(session, "BEFORE: echo.")
        await driver.close()
        resumed = await driver.open(resume=first_id)
        assert resumed.session_id == first_id
        await driver.send(resumed, "RESUMED: echo.")

    run = drive(tmp_path, copilot_binary, script, body)
    kinds = [e["type"] for e in _log_events(run)]
    assert kinds.count("session.start") == kinds.count("session.resume") == 1
    live, _ = compare_with_tail(run, tmp_path)
    first, second = live.roots()
    assert {first.attrs["gen_ai.conversation.id"], second.attrs["gen_ai.conversation.id"]} == {
        run.session_id
    }
    ((trace_id, span_id, _),) = second.links
    assert (trace_id, span_id) == (first.trace_id, first.span_id)
    for root in (first, second):
        assert [label(s) for s in live.children(root)] == ["turn #1", "turn #2"]
    check_usage(run, live)


def _log_events(run: LiveRun) -> list[dict[str, Any]]:
    (log,) = run.workspace.event_logs()
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
