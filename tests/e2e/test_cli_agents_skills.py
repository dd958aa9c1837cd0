"""Custom agents, skills and the autopilot continuation limit with the real Copilot CLI
(`copilot -p`, offline against the scripted fake model), then `otel-bridge replay`, `stats`
and `run` on the log it wrote (tests/e2e/copilot.py: scenarios custom_agent, skill,
autopilot_limit; the generic checks of every scenario are in test_cli_tail.py).

Expectations come from the scenario scripts and the raw log, never from the bridge's output.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import (
    AUTOPILOT_STOPPED,
    E2E,
    SKILL_CONTEXT_DELIVERED,
    SUBAGENT_SELECTED,
    Metrics,
)
from tests.e2e.test_cli_tail import assert_tasks, cli_ok, main_events, turns_of


def test_custom_agent_names_the_root(e2e: E2E) -> None:
    """`--agent reviewer` (a .github/agents file): the task's root is the reviewer's; the
    explore sub-agent it delegates to keeps its own name."""
    result = e2e.run("custom_agent")
    cli_ok(result)
    selected = [e for e in result.events() if e["type"] == "subagent.selected"]
    assert [(e.get("agentId") is None, e["data"]["agentName"]) for e in selected] == [
        (True, "reviewer"),
        *([(False, "explore")] if SUBAGENT_SELECTED else []),  # 1.0.81: the main agent's only
    ]
    (started,) = [e for e in result.events() if e["type"] == "subagent.started"]
    assert started["data"]["agentName"] == "explore"
    tree = result.tree
    tree.check_well_formed()
    (root,) = tree.roots()
    assert root.name == "invoke_agent reviewer"
    assert root.attrs["gen_ai.agent.name"] == "reviewer"
    assert root.attrs["copilot.task.outcome"] == "no_signal"
    (explore,) = tree.named("invoke_agent explore")
    assert explore.attrs["copilot.agent.id"] == started["agentId"]
    if SUBAGENT_SELECTED:
        assert explore.attrs["copilot.agent.id"] == selected[1]["agentId"]
    assert tree.parent(explore).name == "execute_tool task"
    assert len(turns_of(tree, root)) == len(main_events(result, "assistant.turn_start"))
    durations = result.metrics.series(
        "gen_ai.invoke_agent.duration", gen_ai__agent__name="reviewer"
    )
    assert sum(p.count for p in durations) == 1


def test_skill_invocation_is_an_event_on_its_turn_and_counted(e2e: E2E) -> None:
    result = e2e.run("skill")
    cli_ok(result)
    (invoked,) = [e for e in result.events() if e["type"] == "skill.invoked"]
    assert invoked["data"]["name"] == "greeting"
    tree = result.tree
    tree.check_well_formed()
    (call,) = tree.named("execute_tool skill")
    turn = tree.parent(call)
    delivered = [e for e in result.events() if e["type"].startswith("skill.context_delivered")]
    assert len(delivered) == (1 if SKILL_CONTEXT_DELIVERED else 0)  # 1.0.81: skill.invoked only
    assert [name for name, _ in turn.events] == [
        "copilot.skill.invoked",
        *(["copilot.skill.context_delivered"] if SKILL_CONTEXT_DELIVERED else []),
    ]
    attributes = dict(turn.events[0][1])
    assert attributes["copilot.skill.name"] == "greeting"
    assert attributes["copilot.skill.trigger"] == invoked["data"]["trigger"]
    assert attributes["copilot.skill.content.length"] == len(invoked["data"]["content"])
    assert result.metrics.by("copilot.skills.invoked", "copilot.skill.name") == {"greeting": 1.0}
    # the skill's text never leaves: not in the traces file
    assert "GREETING-SKILL-BODY" not in json.dumps([s.attrs for s in tree.named("")])


def test_autopilot_limit_is_its_own_end_reason(e2e: E2E) -> None:
    """`--autopilot --max-autopilot-continues 2` with a model that never calls task_complete:
    the CLI nudges twice, then shuts down (exit 0)."""
    result = e2e.run("autopilot_limit")
    cli_ok(result)
    messages = main_events(result, "user.message")
    continuations = [m for m in messages if m["data"].get("isAutopilotContinuation")]
    assert len(continuations) == 2
    assert not [e for e in result.events() if e["type"] == "session.task_complete"]
    # the CLI's own word for it is in its live stream only
    live = [e for r in result.run.runs for e in r.live_events()]
    stops = [e for e in live if e.get("type") == "session.autopilot_stopped"]
    # (1.0.81 and 1.0.92 write none: the bridge knows the limit by the shutdown after a nudge)
    assert [e["data"]["reason"] for e in stops] == (["cap_reached"] if AUTOPILOT_STOPPED else [])
    tree = result.tree
    tree.check_well_formed()
    (root,) = tree.roots()
    assert root.attrs["copilot.task.outcome"] == "no_signal"
    assert root.attrs["copilot.end_reason"] == "autopilot_limit"
    assert root.attrs["copilot.autopilot.continuations"] == len(continuations)
    assert "copilot.incomplete" not in root.attrs
    assert_tasks(result.metrics, no_signal=1)
    assert result.metrics.total("copilot.autopilot.limit_stops") == 1


@pytest.mark.parametrize(
    ("name", "metric"),
    [("skill", "copilot.skills.invoked"), ("autopilot_limit", "copilot.autopilot.limit_stops")],
)
def test_run_counts_what_replay_counts(e2e: E2E, name: str, metric: str) -> None:
    """`run`, following the log as the CLI wrote it, counts the new metrics as replay does."""
    result = e2e.run(name)
    assert result.followed is not None
    assert _series(result.followed.metrics, metric) == _series(result.replayed.metrics, metric)
    assert _series(result.replayed.metrics, metric)


def _series(metrics: Metrics, name: str) -> dict[str, float]:
    return {
        json.dumps(p.attributes, sort_keys=True): p.value for p in metrics.series(name) if p.value
    }
