"""The running-now gauges of `otel-bridge run` (docs/metrics.md, "Running now") while a real
Copilot CLI session runs: a permission prompt, an `ask_user` question and a plan left for
approval (`exit_plan_mode`, in plan mode) left open in the interactive CLI (in tmux), and a model
that calls the same tool again and again (`copilot -p`).
The bridge follows the session's COPILOT_HOME and serves /metrics; the test scrapes it again and
again and waits for each figure, then answers the prompt (tmux keys) or lets the model go on,
and waits for the figures to go back.

The fake model holds its answer (`hold`) where the test looks, so what the test waits for stays
true until it lets go: no figure has to be caught in a window of time. What the CLI writes for
each case is asserted on its events.jsonl too:

- a shell command waiting for approval: `permission.requested`, then on the answer
  `permission.completed` (`result.kind` approved, `decisionSource` human_response from 1.0.92);
- `ask_user`: only the tool call (`tool.execution_start`, and on the answer
  `human_response.recorded` (from 1.0.92) then `tool.execution_complete`); no
  `user_input.requested` nor `elicitation.requested` in the log. `copilot -p` does not offer
  the model `ask_user` at all;
- a plan: Shift+Tab writes `session.mode_changed` (to plan); the `exit_plan_mode` call starts,
  and on the answer completes (with `human_response.recorded` before it from 1.0.92); no
  `exit_plan_mode.requested` in the log (it is live only).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import paths, processes
from tests.e2e.bridge import DEADLINE, Bridge, value
from tests.e2e.conftest import cli_at_least
from tests.e2e.copilot import Tui, Workspace, bash_call, start_copilot
from tests.e2e.fake_llm import FakeLLM
from tests.prometheus import (  # noqa: F401  (prometheus_factory: a fixture, used by name)
    Prometheus,
    Scrape,
    prometheus_factory,
    scrape_metrics,
)

#: Calls of one tool with the same arguments that make a task `repeated_call` (the flag).
REPEATS = 3


OPEN = "copilot_tasks_open"
PERMISSION = 'copilot_tasks_waiting_for_user{copilot_wait_kind="permission"}'
QUESTION_WAIT = 'copilot_tasks_waiting_for_user{copilot_wait_kind="question"}'
REPEATED = 'copilot_tasks_troubled{copilot_trouble_signal="repeated_call"}'
PERMISSION_OLDEST = 'copilot_tasks_waiting_for_user_oldest_seconds{copilot_wait_kind="permission"}'
QUESTION_OLDEST = 'copilot_tasks_waiting_for_user_oldest_seconds{copilot_wait_kind="question"}'
PLAN_WAIT = 'copilot_tasks_waiting_for_user{copilot_wait_kind="plan_approval"}'
WAIT_OLDEST = "copilot_tasks_waiting_for_user_oldest_seconds"
PLAN_OLDEST = 'copilot_tasks_waiting_for_user_oldest_seconds{copilot_wait_kind="plan_approval"}'


def events(workspace: Workspace) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for line in workspace.session_log().read_text().splitlines()
        if line.strip()
    ]


def kinds(workspace: Workspace) -> list[str]:
    return [event["type"] for event in events(workspace)]


def until_logged(workspace: Workspace, kind: str) -> list[dict[str, Any]]:
    """Wait until the session's log has an event of `kind`; those events."""
    deadline = time.monotonic() + DEADLINE
    while True:
        logs = workspace.event_logs()
        if logs:
            found = [e for e in events(workspace) if e["type"] == kind]
            if found:
                return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"the CLI never wrote {kind}: {logs and kinds(workspace)}")
        time.sleep(0.2)


def rising(bridge: Bridge, selector: str) -> None:
    """The gauge `selector` (one that the clock drives) is above 0 and grows."""
    first = bridge.until(f"{selector} above 0", lambda s: value(s, selector) > 0)
    then = value(first, selector)
    bridge.until(f"{selector} grows past {then}", lambda s: value(s, selector) > then)


# --- fixtures ------------------------------------------------------------------------------------


@dataclass
class Setup:
    workspace: Workspace
    bridge: Bridge
    fake: FakeLLM
    binary: Path


@pytest.fixture
def setup_for(tmp_path: Path, copilot_binary: Path) -> Iterator[Callable[[dict[str, Any]], Setup]]:
    """A workspace, the bridge following its COPILOT_HOME and the fake model with `script`;
    all stopped at teardown, whatever happened."""
    started: list[Setup] = []

    def make(script: dict[str, Any]) -> Setup:
        workspace = Workspace.create(tmp_path / "run")
        fake = FakeLLM(script, log_path=tmp_path / "requests.jsonl").start()
        try:
            bridge = Bridge(
                workspace.session_state,
                tmp_path / "bridge",
                *("--trouble-repeated-calls", str(REPEATS)),
            )
        except BaseException:
            fake.stop()
            raise
        setup = Setup(workspace, bridge, fake, copilot_binary)
        started.append(setup)
        return setup

    try:
        yield make
    finally:
        for setup in started:
            setup.fake.stop()
            setup.bridge.stop()


def answer_then(name: str, text: str) -> dict[str, Any]:
    """The model's answer after the tool, held until the test lets it go."""
    return {"name": name, "when": {"assistant_count": 1}, "text": text, "hold": True}


def answered(
    setup: Setup, tui: Tui, started: dict[str, Any], held: str, shown: str, wait: str
) -> None:
    """A tool call that waited for a person (`started`, its `tool.execution_start`) has been
    answered: the CLI records the answer (`human_response.recorded`, from 1.0.92) and completes
    the call; while the model's next answer (the rule `held`) is held, the task is still open
    and the gauge `wait` and its oldest wait are 0; once it is let go and `shown`, no task."""
    workspace, bridge = setup.workspace, setup.bridge
    oldest = wait.replace("copilot_tasks_waiting_for_user{", WAIT_OLDEST + "{")
    setup.fake.wait_held(held)
    if cli_at_least("1.0.92"):  # 1.0.81 writes only the tool's completion
        (response,) = until_logged(workspace, "human_response.recorded")
        assert response["data"]["toolCallId"] == started["data"]["toolCallId"]
    (completed,) = until_logged(workspace, "tool.execution_complete")
    assert completed["data"]["toolCallId"] == started["data"]["toolCallId"]
    assert completed["data"]["success"] is True
    bridge.expect("the task still open, no longer waiting", {OPEN: 1, wait: 0, oldest: 0})

    setup.fake.release(held)
    tui.wait_for_screen(shown)
    bridge.expect("no task open once the model answered", {OPEN: 0, wait: 0, oldest: 0})


# --- a permission prompt -------------------------------------------------------------------------

PERMISSION_SCRIPT = {
    "responses": [
        {
            "name": "ask-shell",
            "when": {"assistant_count": 0},
            "text": "Writing it.",
            "tool_calls": [bash_call("echo perm-check > out.txt", "Write a file")],
        },
        answer_then("after-shell", "Done."),
    ]
}


def test_a_permission_prompt_left_open_is_a_task_waiting_for_a_person(
    setup_for: Callable[[dict[str, Any]], Setup],
) -> None:
    setup = setup_for(PERMISSION_SCRIPT)
    bridge, workspace = setup.bridge, setup.workspace
    with Tui(setup.binary, workspace, setup.fake).start("PERM-PROMPT: write a file.") as tui:
        tui.wait_for_screen("Do you want to run this command?")
        # the TUI wrote the request, and no answer yet
        (requested,) = until_logged(workspace, "permission.requested")
        assert requested["data"]["permissionRequest"]["kind"] == "shell"
        assert "permission.completed" not in kinds(workspace)
        bridge.expect(
            "one task open, waiting for a permission",
            {OPEN: 1, PERMISSION: 1, QUESTION_WAIT: 0},
        )
        rising(bridge, PERMISSION_OLDEST)
        assert not (workspace.project / "out.txt").exists()

        tui.keys("Enter")  # 1. Yes (the first choice)
        setup.fake.wait_held("after-shell")  # the command ran; the model is asked again
        (completed,) = until_logged(workspace, "permission.completed")
        assert completed["data"]["requestId"] == requested["data"]["requestId"]
        assert completed["data"]["result"]["kind"] == "approved"
        if cli_at_least("1.0.92"):  # 1.0.81 does not say who decided
            assert completed["data"]["decisionSource"] == "human_response"
        assert (workspace.project / "out.txt").read_text().strip() == "perm-check"
        bridge.expect(
            "the task still open, no longer waiting",
            {OPEN: 1, PERMISSION: 0, PERMISSION_OLDEST: 0},
        )

        setup.fake.release("after-shell")
        tui.wait_for_screen("Done.")
        bridge.expect(
            "no task open once the model answered",
            {OPEN: 0, PERMISSION: 0, PERMISSION_OLDEST: 0},
        )


# --- an ask_user question ------------------------------------------------------------------------

QUESTION = "Which colour should the button be?"
QUESTION_SCRIPT = {
    "responses": [
        {
            "name": "ask",
            "when": {"assistant_count": 0},
            "text": "I need to know.",
            "tool_calls": [
                {
                    "name": "ask_user",
                    "arguments": {
                        "message": QUESTION,
                        "requestedSchema": {
                            "properties": {
                                "colour": {
                                    "type": "string",
                                    "title": "Colour",
                                    "enum": ["red", "blue"],
                                }
                            },
                            "required": ["colour"],
                        },
                    },
                }
            ],
        },
        answer_then("after-question", "Blue it is."),
    ]
}


def test_an_ask_user_question_left_open_is_a_task_waiting_for_a_person(
    setup_for: Callable[[dict[str, Any]], Setup],
) -> None:
    setup = setup_for(QUESTION_SCRIPT)
    bridge, workspace = setup.bridge, setup.workspace
    # the interactive CLI offers the model ask_user (`copilot -p` does not: see the loop test)
    with Tui(setup.binary, workspace, setup.fake).start("ASK-PROMPT: ask me.") as tui:
        tui.wait_for_screen(QUESTION)
        (started,) = until_logged(workspace, "tool.execution_start")
        assert started["data"]["toolName"] == "ask_user"
        written = set(kinds(workspace))
        assert not written & {"user_input.requested", "elicitation.requested"}, written
        assert "tool.execution_complete" not in written
        bridge.expect(
            "one task open, waiting for an answer to a question",
            {OPEN: 1, QUESTION_WAIT: 1, PERMISSION: 0},
        )
        rising(bridge, QUESTION_OLDEST)

        tui.keys("Down")  # blue
        tui.keys("Enter")
        answered(setup, tui, started, "after-question", "Blue it is.", QUESTION_WAIT)


# --- a plan left for approval --------------------------------------------------------------------

PLAN = "1. Write hello.txt\n2. Say so"
PLAN_SCRIPT = {
    "responses": [
        {
            # in plan mode (the CLI offers exit_plan_mode then only), the plan for approval
            "name": "plan",
            "when": {"has_tool": "exit_plan_mode", "last_contains": "PLAN-APPROVAL"},
            "text": "Here is my plan.",
            "tool_calls": [{"name": "exit_plan_mode", "arguments": {"summary": PLAN}}],
        },
        {
            # after the answer: "Hello back." and the plan are in the conversation (the CLI may
            # add a notice of the mode change after the tool's result: not `last_role` tool)
            "name": "after-plan",
            "when": {"any_contains": "PLAN-APPROVAL", "assistant_count": 2},
            "text": "Plan noted.",
            "hold": True,
        },
        {"name": "hello", "repeat": True, "text": "Hello back."},
    ]
}


def test_a_plan_left_for_approval_is_a_task_waiting_for_a_person(
    setup_for: Callable[[dict[str, Any]], Setup],
) -> None:
    setup = setup_for(PLAN_SCRIPT)
    bridge, workspace = setup.bridge, setup.workspace
    with Tui(setup.binary, workspace, setup.fake).start("Hello.") as tui:
        tui.wait_for_screen("Hello back.")
        tui.keys("BTab")  # Shift+Tab: the next mode, plan
        (changed,) = until_logged(workspace, "session.mode_changed")
        assert changed["data"]["newMode"] == "plan"
        tui.keys("-l", "PLAN-APPROVAL: plan it.")
        tui.keys("Enter")
        tui.wait_for_screen("Plan Ready for Review")
        (started,) = [
            e for e in until_logged(workspace, "tool.execution_start")
            if e["data"]["toolName"] == "exit_plan_mode"
        ]  # fmt: skip
        written = set(kinds(workspace))
        assert not written & {"tool.execution_complete", "exit_plan_mode.requested"}, written
        bridge.expect(
            "one plan-mode task open, waiting for its plan's approval",
            {OPEN: 1, f'{OPEN}{{copilot_mode="plan"}}': 1, PLAN_WAIT: 1, PERMISSION: 0},
        )
        rising(bridge, PLAN_OLDEST)

        tui.keys("Down", "Down", "Enter")  # 3. exit plan mode without running the plan
        answered(setup, tui, started, "after-plan", "Plan noted.", PLAN_WAIT)


# --- a model in a loop ---------------------------------------------------------------------------

LOOP_CALLS = REPEATS + 1
LOOP_COMMAND = "cat README.md"


def loop_script() -> dict[str, Any]:
    """The model asks for the same command LOOP_CALLS times, then answers. Every answer after
    the first is held: the test looks at the figures after each call, then lets the next go."""
    calls = [
        {
            "name": f"call-{n}",
            "when": {"assistant_count": n - 1},
            "hold": n > 1,
            "tool_calls": [bash_call(LOOP_COMMAND, "Read the readme")],
        }
        for n in range(1, LOOP_CALLS + 1)
    ]
    final = {
        "name": "final",
        "when": {"assistant_count": LOOP_CALLS},
        "hold": True,
        "text": "The readme says it is a demo.",
    }
    return {"responses": [*calls, final]}


def end(process: subprocess.Popen[bytes]) -> int | None:
    """Wait for the CLI to end (it does once the model answered); kill it after DEADLINE."""
    try:
        return process.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        processes.terminate(process, group=True)
        return None


def test_a_model_calling_the_same_tool_again_and_again_is_a_task_in_trouble(
    setup_for: Callable[[dict[str, Any]], Setup],
) -> None:
    setup = setup_for(loop_script())
    bridge, fake = setup.bridge, setup.fake
    cli = start_copilot(setup.binary, setup.workspace, fake, "LOOP-PROMPT: read the readme.")
    try:
        for calls in range(1, LOOP_CALLS + 1):
            held = f"call-{calls + 1}" if calls < LOOP_CALLS else "final"
            fake.wait_held(held)  # `calls` calls done, the model asked again
            looping = 1.0 if calls >= REPEATS else 0.0
            bridge.expect(
                f"{calls} calls of the same command, repeated_call {looping}",
                {
                    OPEN: 1,
                    "copilot_tasks_open_tool_calls": calls,
                    "copilot_tasks_open_repeated_calls": calls,
                    REPEATED: looping,
                },
            )
            fake.release(held)
        assert end(cli) == 0, (setup.workspace.root / "stderr.txt").read_text()[-2000:]
    finally:
        processes.terminate(cli, group=True)
    done = bridge.expect(
        "no task open, none troubled, once the CLI ended",
        {OPEN: 0, "copilot_tasks_open_repeated_calls": 0, REPEATED: 0},
    )
    assert done.value("copilot_task_trouble_total", copilot_trouble_signal="repeated_call") == 1
    assert done.value("copilot_task_trouble_total") == 1  # no other signal
    starts = [e for e in events(setup.workspace) if e["type"] == "tool.execution_start"]
    assert [e["data"]["arguments"]["command"] for e in starts] == [LOOP_COMMAND] * LOOP_CALLS
    # `copilot -p` does not offer the model ask_user (the interactive CLI does)
    offered = {
        (tool.get("function") or {}).get("name")
        for request in fake.completions()
        for tool in request.body.get("tools") or []
    }
    assert "bash" in offered and "ask_user" not in offered


# --- the alerts on these gauges, in a real Prometheus ------------------------------------------

ALERTS = paths.REPO / "deploy" / "prometheus" / "alerts.yml"
WAITING_ALERT = "CopilotAgentWaitingForPerson"
LOOPING_ALERT = "CopilotAgentLooping"
STALLED_ALERT = "CopilotAgentStalled"
#: Seconds the test's copy of the waiting rule's threshold, instead of the shipped 600: a
#: prompt left open crosses it within the test.
SHORT = 2


def short_rules(directory: Path) -> Path:
    """The shipped rules of these three alerts, copied for the test with `for: 0s` and the
    threshold of the waiting rule (`> 600`) at SHORT seconds; otherwise as shipped
    (deploy/prometheus/alerts.yml). The stalled rule has no threshold of its own: it follows
    the bridge's `stalled` signal (600 s, far past the test's silence)."""
    document = yaml.safe_load(ALERTS.read_text())
    rules = {
        rule["alert"]: rule
        for group in document["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    wanted = (WAITING_ALERT, LOOPING_ALERT, STALLED_ALERT)
    missing = [name for name in wanted if name not in rules]
    assert not missing, f"{ALERTS} has no rule {missing}"
    copies = []
    for name in wanted:
        rule = dict(rules[name], **{"for": "0s"})
        if name == WAITING_ALERT:
            rule["expr"], changed = re.subn(r">\s*600\b", f"> {SHORT}", rule["expr"])
            assert changed == 1, f"{name}: no `> 600` threshold to shorten in {rule['expr']!r}"
        copies.append(rule)
    path = directory / "running-now-alerts.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "running-now", "rules": copies}]}))
    return path


def active(prometheus: Prometheus) -> dict[str, set[str]]:
    """Alert name -> the states (pending, firing) of its active alerts."""
    out: dict[str, set[str]] = {}
    for alert in prometheus.alerts():
        out.setdefault(alert["labels"]["alertname"], set()).add(alert["state"])
    return out


def until_alert(prometheus: Prometheus, name: str, *, on: bool) -> dict[str, set[str]]:
    """Wait until the alert `name` is active (pending or firing), or (`on=False`) is not."""
    deadline = time.monotonic() + DEADLINE
    while True:
        now = active(prometheus)
        if (name in now) == on:
            return now
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"{name} never {'went active' if on else 'went away'}: {now}; "
                f"targets {prometheus.target_health()}\n{prometheus.log_tail()}"
            )
        time.sleep(0.25)


def for_prompt(word: str, script: dict[str, Any]) -> list[dict[str, Any]]:
    """The rules of `script`, each for the session whose prompt has `word` only."""
    return [
        dict(rule, when={**rule.get("when", {}), "first_user_contains": word})
        for rule in script["responses"]
    ]


def test_the_running_now_alerts_fire_while_a_person_is_waited_for_and_while_a_model_loops(
    setup_for: Callable[[dict[str, Any]], Setup],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """deploy/prometheus/alerts.yml's CopilotAgentWaitingForPerson, CopilotAgentStalled and
    CopilotAgentLooping on a real Prometheus scraping the bridge every second, while the real
    CLI waits for a permission (TUI) and then loops (`copilot -p`)."""
    script = {
        "responses": [
            *for_prompt("PERM-PROMPT", PERMISSION_SCRIPT),
            *for_prompt("LOOP-PROMPT", loop_script()),
        ]
    }
    setup = setup_for(script)
    bridge, fake = setup.bridge, setup.fake
    start_prometheus: Callable[..., Prometheus] = request.getfixturevalue("prometheus_factory")
    prometheus = start_prometheus([bridge.target], rule_files=[short_rules(tmp_path)])

    with Tui(setup.binary, setup.workspace, fake).start("PERM-PROMPT: write a file.") as tui:
        tui.wait_for_screen("Do you want to run this command?")
        now = until_alert(prometheus, WAITING_ALERT, on=True)
        # silent past the threshold too, but waiting for a person: not stalled
        assert STALLED_ALERT not in now, now
        assert LOOPING_ALERT not in now, now
        tui.keys("Enter")
        fake.wait_held("after-shell")
        until_alert(prometheus, WAITING_ALERT, on=False)
        fake.release("after-shell")
        tui.wait_for_screen("Done.")

    for n in range(2, REPEATS + 1):  # the calls before the threshold go on at once
        fake.release(f"call-{n}")
    cli = start_copilot(setup.binary, setup.workspace, fake, "LOOP-PROMPT: read the readme.")
    try:
        fake.wait_held(f"call-{REPEATS + 1}")  # REPEATS calls done: the task is looping
        until_alert(prometheus, LOOPING_ALERT, on=True)
        for n in range(REPEATS + 1, LOOP_CALLS + 1):
            fake.release(f"call-{n}")
        fake.release("final")
        assert end(cli) == 0, (setup.workspace.root / "stderr.txt").read_text()[-2000:]
    finally:
        processes.terminate(cli, group=True)
    until_alert(prometheus, LOOPING_ALERT, on=False)
    bridge.expect("the looping task ended", {OPEN: 0, REPEATED: 0})
