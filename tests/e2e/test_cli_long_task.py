"""A long autopilot task of the real Copilot CLI, followed by `otel-bridge run` while it runs:
its finished turns (with their LLM calls and tools) are in the traces file before the task ends,
the root comes last, when it ends (docs/spans.md, "Progress of a long task"), and a SIGKILL of
the bridge in the middle, then a restart from its checkpoints, repeats no span.

The fake model holds its third answer (`hold`): the task stays open, two turns done and a third
waiting for the model, for as long as the test looks, without racing a delay. The same moment is
asked of /metrics: one autopilot task open, its two tool calls so far.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import processes
from tests.e2e.bridge import DEADLINE, Bridge
from tests.e2e.copilot import Workspace, bash_call, start_copilot
from tests.e2e.fake_llm import FakeLLM
from tests.traces_file import checkpoint_names_sent, span_kinds, spans_in_file

#: Two turns that each run a command, a third whose model call is held (the task still open),
#: then `task_complete`, which ends an autopilot task.
SCRIPT = {
    "responses": [
        {
            "name": "first",
            "when": {"assistant_count": 0},
            "tool_calls": [bash_call("echo one", "Say one")],
        },
        {
            "name": "second",
            "when": {"assistant_count": 1},
            "tool_calls": [bash_call("echo two", "Say two")],
        },
        {
            "name": "complete",
            "when": {"assistant_count": 2},
            "hold": True,
            "tool_calls": [{"name": "task_complete", "arguments": {"summary": "Both ran."}}],
        },
        {"name": "after-complete", "repeat": True, "text": "Done."},
    ]
}


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeLLM]:
    with FakeLLM(SCRIPT, log_path=tmp_path / "requests.jsonl") as server:
        yield server


def tools(kinds: dict[str, int]) -> int:
    return sum(n for kind, n in kinds.items() if kind.startswith("tool "))


def test_a_long_autopilot_task_shows_its_finished_turns_before_it_ends_each_once(
    tmp_path: Path, copilot_binary: Path, fake: FakeLLM
) -> None:
    workspace = Workspace.create(tmp_path / "run")
    bridge = Bridge(workspace.session_state, tmp_path / "bridge", checkpoints=True)
    cli: subprocess.Popen[bytes] | None = None

    def written() -> Counter[str]:
        return span_kinds(spans_in_file(bridge.traces))

    try:
        cli = start_copilot(copilot_binary, workspace, fake, "Run two commands.", ["--autopilot"])
        fake.wait_held("complete", timeout=DEADLINE)  # two turns done, the third asks the model

        # the two finished turns, their LLM calls and tools are exported while the task runs;
        # not the third turn, whose LLM call is still going, nor the root
        bridge.wait("the second turn exported", lambda: written()["turn 2"])
        while_open = written()
        assert while_open["turn 1"] == 1 and while_open["turn 2"] == 1, while_open
        assert while_open["chat"] == 2 and tools(while_open) == 2, while_open
        assert "turn 3" not in while_open and "root" not in while_open, while_open
        scrape = bridge.expect(
            "one autopilot task open with its two tool calls",
            {'copilot_tasks_open{copilot_mode="autopilot"}': 1, "copilot_tasks_open_tool_calls": 2},
        )
        assert scrape.value("copilot_tasks_open") == 1

        # killed once its checkpoint names what it sent; the task ends while it is down
        sent = spans_in_file(bridge.traces)
        bridge.wait(
            f"a checkpoint naming the {len(sent)} spans sent",
            lambda: checkpoint_names_sent(bridge.out, workspace.session_log(), sent),
        )
        bridge.kill()
        fake.release("complete")
        assert cli.wait(timeout=DEADLINE) == 0, (workspace.root / "stderr.txt").read_text()[-2000:]

        bridge.restart()
        bridge.wait("the root exported", lambda: written()["root"])
    finally:
        if cli is not None:
            processes.terminate(cli, group=True)
        bridge.stop()

    spans = spans_in_file(bridge.traces)
    ids = [span["spanId"] for span in spans]
    assert len(ids) == len(set(ids)), "a span written twice"
    kinds = span_kinds(spans)
    assert kinds["root"] == 1 and kinds["turn 3"] == 1 and kinds["chat"] == 3, kinds
    assert tools(kinds) == 3, kinds  # echo one, echo two, task_complete
    assert not spans[-1].get("parentSpanId")  # the root came last
    assert {span["traceId"] for span in spans} == {spans[0]["traceId"]}
