"""Steering, queued messages and background shells on real SDK sessions (github-copilot-sdk
driving the npm-installed CLI against the fake model): the live spans and a replay of the same
session's log must agree on which task every span belongs to, and on where each task ends.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.e2e.conftest import SHELL_DONE_READS_OUTPUT
from tests.e2e.test_sdk_live import Driver, check_usage, compare_with_tail, drive

ROOT = "invoke_agent copilot"


def same_roots(live: Any, tailed: Any) -> None:
    """The live and the tailed roots: same ids, same start and end, same message counts."""
    live_roots = {s.span_id: s for s in live.roots() if s.name == ROOT}
    tailed_roots = {s.span_id: s for s in tailed.roots() if s.name == ROOT}
    assert set(live_roots) == set(tailed_roots)
    for span_id, root in tailed_roots.items():
        mirror = live_roots[span_id]
        assert (mirror.start_ns, mirror.end_ns) == (root.start_ns, root.end_ns)
        assert mirror.attrs["copilot.user_messages"] == root.attrs["copilot.user_messages"]
    for tree in (live, tailed):  # every span within its task's time range
        for span in tree.spans:
            root = tree.root_of(span)
            assert root.start_ns <= span.start_ns <= span.end_ns <= root.end_ns, span.name


def test_live_steering_and_queued_messages(tmp_path: Path, copilot_binary: Path) -> None:
    script = {
        "responses": [
            {
                "name": "slow-bash",
                "when": {"last_contains": "STEER-SLOW"},
                "tool_calls": [
                    {
                        "name": "bash",
                        "arguments": {"command": "sleep 4; echo woke", "description": "sleep"},
                    }
                ],
            },
            {"name": "queued", "when": {"last_contains": "QUEUED-LATER"}, "text": "Queued."},
            {"name": "other", "repeat": True, "text": "ok"},
        ]
    }

    async def body(driver: Driver) -> None:
        session = await driver.open()
        await session.send("STEER-SLOW: run a slow command.")
        await driver.wait_for(
            lambda: bool(driver.run.of_type("tool.execution_start")), "the slow tool to start"
        )
        await asyncio.sleep(1.5)
        await session.send("STEER-NOW: also say you were steered.", mode="immediate")
        await session.send("QUEUED-LATER: answer afterwards.", mode="enqueue")
        await driver.wait_for(
            lambda: (
                any(
                    e["data"].get("delivery") == "queued"
                    for e in driver.run.of_type("user.message")
                )
                and driver.idles() > 0
                and driver.run.events[-1]["type"] == "session.idle"
            ),
            "the queued message to be answered",
        )

    run = drive(tmp_path, copilot_binary, script, body)
    messages = run.of_type("user.message")
    assert [m["data"].get("delivery") for m in messages] == ["idle", "steering", "queued"]
    live, tailed = compare_with_tail(run, tmp_path)
    same_roots(live, tailed)
    first, second = live.roots()
    assert first.attrs["copilot.interaction.id"] == messages[1]["data"]["interactionId"]
    assert first.attrs["copilot.steering_messages"] == 1
    assert second.attrs["copilot.interaction.id"] == messages[2]["data"]["interactionId"]
    check_usage(run, live)


def test_live_background_shell(tmp_path: Path, copilot_binary: Path) -> None:
    script = {
        "responses": [
            {
                "name": "start-job",
                "when": {"first_user_contains": "BG-SHELL", "assistant_count": 0},
                "tool_calls": [
                    {
                        "name": "bash",
                        "arguments": {
                            "command": "sleep 2; echo bg-done",
                            "description": "background job",
                            "mode": "async",
                            "shellId": "job",
                        },
                    }
                ],
            },
            {"name": "other", "repeat": True, "text": "ok"},
        ]
    }

    async def body(driver: Driver) -> None:
        session = await driver.open()
        await driver.send(session, "BG-SHELL: start a background job.")

    run = drive(tmp_path, copilot_binary, script, body)
    assert run.of_type("system.notification")
    logged = [json.loads(line) for line in run.workspace.session_log().read_text().splitlines()]
    reads = [
        e
        for e in logged
        if e["type"] == "tool.execution_start" and e["data"]["toolName"] == "read_bash"
    ]
    assert len(reads) == (1 if SHELL_DONE_READS_OUTPUT else 0)  # 1.0.81: the notification only
    live, tailed = compare_with_tail(run, tmp_path)
    same_roots(live, tailed)
    (root,) = live.roots()
    if SHELL_DONE_READS_OUTPUT:
        (read,) = live.named("execute_tool read_bash")
        assert read.parent_span_id == root.span_id
        assert root.end_ns >= read.end_ns
    else:  # the turn the notification started is still the task's
        assert not live.named("execute_tool read_bash")
        turns = [e for e in logged if e["type"] == "assistant.turn_start"]
        assert len(live.children(root, "turn")) == len(turns) == 3
    check_usage(run, live)
