"""A long autopilot task of the real Copilot CLI, followed by `otel-bridge run` while it runs:
its finished turns (with their LLM calls and tools) are in the traces file before the task ends,
the root comes last, when it ends (docs/spans.md, "Progress of a long task"), and a SIGKILL of
the bridge in the middle, then a restart from its checkpoints, repeats no span.

The fake model holds its third answer (`hold`): the task stays open, two turns done and a third
waiting for the model, for as long as the test looks, without racing a delay. The same moment is
asked of /metrics: one autopilot task open, its two tool calls so far.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import processes
from tests.e2e.copilot import BASE_ARGS, Workspace, copilot_env
from tests.e2e.fake_llm import FakeLLM
from tests.prometheus import Scrape, scrape_metrics
from tests.traces_file import checkpoint_names_sent, span_kinds, spans_in_file

#: Seconds to wait for anything (a busy 2-core machine, a CLI starting): generous on purpose.
DEADLINE = 120.0


def _bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command, "description": "Run " + command}}


#: Two turns that each run a command, a third whose model call is held (the task still open),
#: then `task_complete`, which ends an autopilot task.
SCRIPT = {
    "responses": [
        {"name": "first", "when": {"assistant_count": 0}, "tool_calls": [_bash("echo one")]},
        {"name": "second", "when": {"assistant_count": 1}, "tool_calls": [_bash("echo two")]},
        {
            "name": "complete",
            "when": {"assistant_count": 2},
            "hold": True,
            "tool_calls": [{"name": "task_complete", "arguments": {"summary": "Both ran."}}],
        },
        {"name": "after-complete", "repeat": True, "text": "Done."},
    ]
}


class Run:
    """`otel-bridge run` following `state`, with checkpoints and a traces file under `work`, and
    /metrics on a port it picks; started again (appending to its log) after a kill."""

    def __init__(self, state: Path, work: Path) -> None:
        self.state, self.work = state, work
        work.mkdir(parents=True, exist_ok=True)
        self.traces = work / "traces.jsonl"
        self.log = work / "bridge.err"
        self.process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        return processes.start_bridge(
            [
                *("run", "--session-state", str(self.state), "--state-dir", str(self.work)),
                *("--traces-file", str(self.traces), "--prometheus-port", "0"),
                *("--poll-interval", "0.1", "--rescan-interval", "0.3", "--idle-timeout", "600"),
            ],
            log=self.log,
            append=True,
        )

    def restart(self) -> None:
        self.process = self._start()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        processes.terminate(self.process, 20)

    def until(self, what: str, check: Callable[[], Any]) -> Any:
        """Wait until `check()` gives something true; that. Fails, saying `what`, after
        DEADLINE or when run exits."""
        deadline = time.monotonic() + DEADLINE
        while True:
            if self.process.poll() is not None:
                pytest.fail(f"run exited: {self.log.read_text(errors='replace')[-3000:]}")
            found = check()
            if found:
                return found
            if time.monotonic() >= deadline:
                pytest.fail(f"never: {what}\n{self.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)

    def metrics_port(self) -> int:
        text = self.until("run serves /metrics", lambda: self.log.read_text(errors="replace"))
        marker = "serving http://127.0.0.1:"
        for line in reversed(text.splitlines()):  # the latest start's
            if marker in line:
                return int(line.split(marker)[1].split("/")[0])
        pytest.fail(f"run never said where it serves /metrics:\n{text[-3000:]}")


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeLLM]:
    with FakeLLM(SCRIPT, log_path=tmp_path / "requests.jsonl") as server:
        yield server


def open_autopilot_task(port: int) -> Scrape | None:
    """The scrape of run's /metrics when it shows one autopilot task open with two tool calls
    so far; else None."""
    scrape = scrape_metrics(f"127.0.0.1:{port}")
    if scrape.value("copilot_tasks_open", copilot_mode="autopilot") != 1:
        return None
    return scrape if scrape.value("copilot_tasks_open_tool_calls") == 2 else None


def tools(kinds: dict[str, int]) -> int:
    return sum(n for kind, n in kinds.items() if kind.startswith("tool "))


def test_a_long_autopilot_task_shows_its_finished_turns_before_it_ends_each_once(
    tmp_path: Path, copilot_binary: Path, fake: FakeLLM
) -> None:
    workspace = Workspace.create(tmp_path / "run")
    bridge = Run(workspace.session_state, tmp_path / "bridge")
    cli: subprocess.Popen[bytes] | None = None
    try:
        with (tmp_path / "cli.out").open("wb") as out, (tmp_path / "cli.err").open("wb") as err:
            cli = subprocess.Popen(
                [str(copilot_binary), "-p", "Run two commands.", "--autopilot", *BASE_ARGS],
                cwd=workspace.project,
                env=copilot_env(workspace, fake.url),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # its own group: killed with its shells on failure
            )
        fake.wait_held("complete", timeout=DEADLINE)  # two turns done, the third asks the model

        # the two finished turns, their LLM calls and tools are exported while the task runs;
        # not the third turn, whose LLM call is still going, nor the root
        bridge.until(
            "the second turn exported", lambda: span_kinds(spans_in_file(bridge.traces))["turn 2"]
        )
        while_open = span_kinds(spans_in_file(bridge.traces))
        assert while_open["turn 1"] == 1 and while_open["turn 2"] == 1, while_open
        assert while_open["chat"] == 2 and tools(while_open) == 2, while_open
        assert "turn 3" not in while_open and "root" not in while_open, while_open
        port = bridge.metrics_port()
        scrape = bridge.until(
            "one autopilot task open with its two tool calls", lambda: open_autopilot_task(port)
        )
        assert scrape.value("copilot_tasks_open") == 1

        # killed once its checkpoint names what it sent; the task ends while it is down
        sent = spans_in_file(bridge.traces)
        bridge.until(
            f"a checkpoint naming the {len(sent)} spans sent",
            lambda: checkpoint_names_sent(bridge.work, workspace.session_log(), sent),
        )
        bridge.kill()
        fake.release("complete")
        assert cli.wait(timeout=DEADLINE) == 0, (tmp_path / "cli.err").read_text()[-2000:]

        bridge.restart()
        bridge.until("the root exported", lambda: span_kinds(spans_in_file(bridge.traces))["root"])
    finally:
        if cli is not None:
            processes.terminate(cli, group=True)
        bridge.stop()

    written = spans_in_file(bridge.traces)
    ids = [span["spanId"] for span in written]
    assert len(ids) == len(set(ids)), "a span written twice"
    kinds = span_kinds(written)
    assert kinds["root"] == 1 and kinds["turn 3"] == 1 and kinds["chat"] == 3, kinds
    assert tools(kinds) == 3, kinds  # echo one, echo two, task_complete
    assert not written[-1].get("parentSpanId")  # the root came last
    assert {span["traceId"] for span in written} == {written[0]["traceId"]}
