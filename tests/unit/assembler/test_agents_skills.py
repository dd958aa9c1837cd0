"""Custom agents, skills and the autopilot continuation limit, one hand-built log per rule
(docs/events.md: "Custom agents", "Skills", "Autopilot and its continuation limit")."""

from __future__ import annotations

from otel_bridge import Assembler
from tests.builder import Log
from tests.recorder import Recorder
from tests.spantree import assemble, by_name, check_invariants, children, turns


def roots_of(spans):
    return sorted((s for s in spans if s.parent_span_id is None), key=lambda s: s.start_ns)


def observe(log: Log) -> tuple[list, Recorder]:
    recorder = Recorder()
    assembler = Assembler(metrics=recorder)
    spans = assembler.feed("s", log.events(), "sess-1") + assembler.end_stream("s")
    return spans, recorder


# --- custom agents ------------------------------------------------------------------------------


def selected(log: Log, name: str, agent: str | None = None) -> None:
    log.add("subagent.selected", agent, agentName=name, agentDisplayName=name.title(), tools=["*"])


def test_agent_flag_names_the_root_of_every_task_of_that_process() -> None:
    log = Log()
    log.start()
    selected(log, "reviewer")  # `--agent reviewer`: written before the first message
    log.user(interaction="i1")
    log.simple_turn("0", "u1")
    log.user(interaction="i2")
    log.simple_turn("0", "u2", interaction="i2")
    spans = assemble(log.events())
    check_invariants(spans)
    roots = roots_of(spans)
    assert [r.name for r in roots] == ["invoke_agent reviewer"] * 2
    assert {r.attributes["gen_ai.agent.name"] for r in roots} == {"reviewer"}


def test_a_resumed_process_without_agent_runs_the_default_agent_again() -> None:
    """Seen on CLI 1.0.102: `--resume` without `--agent` writes no subagent.selected and runs
    the default agent; with `--agent` it writes the selection again."""
    log = Log()
    log.start()
    selected(log, "reviewer")
    log.user(interaction="i1")
    log.simple_turn("0", "u1")
    log.add("session.shutdown", shutdownType="routine")
    log.add("session.resume", eventCount=10)
    log.user(interaction="i2")
    log.simple_turn("0", "u2", interaction="i2")
    log.add("session.shutdown", shutdownType="routine")
    log.add("session.resume", eventCount=20)
    selected(log, "reviewer")
    log.user(interaction="i3")
    log.simple_turn("0", "u3", interaction="i3")
    spans = assemble(log.events())
    assert [r.name for r in roots_of(spans)] == [
        "invoke_agent reviewer",
        "invoke_agent copilot",
        "invoke_agent reviewer",
    ]


def test_deselecting_returns_to_the_default_agent() -> None:
    log = Log()
    log.start()
    selected(log, "reviewer")
    log.user(interaction="i1")
    log.simple_turn("0", "u1")
    log.add("subagent.deselected")
    log.user(interaction="i2")
    log.simple_turn("0", "u2", interaction="i2")
    spans = assemble(log.events())
    assert [r.name for r in roots_of(spans)] == ["invoke_agent reviewer", "invoke_agent copilot"]


def test_a_subagents_own_selection_names_neither_the_root_nor_the_next_task() -> None:
    """An explore sub-agent writes subagent.selected with its agentId after subagent.started."""
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("t1", "task")])
    log.tool_start("t1", "task")
    log.add("subagent.started", "a1", toolCallId="t1", agentName="explore")
    selected(log, "explore", agent="a1")
    log.turn("0", "s1", agent="a1")
    log.usage("u2", agent="a1")
    log.message(agent="a1")
    log.turn_end("0", agent="a1")
    log.add("subagent.completed", "a1", toolCallId="t1", agentName="explore")
    log.tool_done("t1")
    log.turn_end("0")
    log.simple_turn("1", "u3")
    log.user(interaction="i2")
    log.simple_turn("0", "u4", interaction="i2")
    spans = assemble(log.events())
    check_invariants(spans)
    assert [r.name for r in roots_of(spans)] == ["invoke_agent copilot"] * 2
    (explore,) = by_name(spans, "invoke_agent explore")
    assert explore.attributes["copilot.agent.id"] == "a1"


def test_the_custom_agent_names_the_task_metrics_too() -> None:
    log = Log()
    log.start()
    selected(log, "reviewer")
    log.user()
    log.simple_turn("0", "u1", [("c1", "bash")])
    log.simple_turn("1", "u2")
    _, recorder = observe(log)
    assert recorder.values("gen_ai.invoke_agent.duration", gen_ai__agent__name="reviewer")
    assert recorder.values("gen_ai.invoke_agent.tool_calls", gen_ai__agent__name="reviewer") == [1]
    assert not recorder.values("gen_ai.invoke_agent.tool_calls", gen_ai__agent__name="copilot")


def test_a_checkpoint_keeps_the_selected_agent() -> None:
    """`run` restarts from a checkpoint after the last finished task: the next task must still
    be named after the agent selected before the checkpoint."""
    log = Log()
    log.start()
    selected(log, "reviewer")
    log.user(interaction="i1")
    log.simple_turn("0", "u1")
    first = Assembler()
    first.feed("s", log.events(), "sess-1")
    saved = first.session("s").snapshot()
    mark = len(log.raw)
    log.user(interaction="i2")
    log.simple_turn("0", "u2", interaction="i2")
    second = Assembler()
    second.session("s", "sess-1").restore(saved)
    spans = second.feed("s", log.events()[mark:], "sess-1") + second.end_stream("s")
    assert [r.name for r in roots_of(spans)] == ["invoke_agent reviewer"]


# --- skills -------------------------------------------------------------------------------------


def skill_turn(log: Log, turn: str, call: str, usage: str, agent: str | None = None) -> None:
    """A turn that calls the `skill` tool; the CLI writes skill.invoked and the context receipt
    after the tool completes, before the turn ends (CLI 1.0.102)."""
    log.turn(turn, agent=agent)
    log.usage(usage, agent=agent)
    log.message([(call, "skill")], agent=agent, turn=turn)
    log.tool_start(call, "skill", agent=agent)
    log.tool_done(call, agent=agent)
    log.add(
        "skill.invoked",
        agent,
        name="greeting",
        path="/home/someone/project/.github/skills/greeting/SKILL.md",
        content="SECRET-SKILL-BODY greet people",
        allowedTools=[],
        source="project",
        trigger="agent-invoked",
        invokedAtTurn=3,
    )
    log.add(
        "skill.context_delivered_ref",
        agent,
        source="skill-greeting",
        contentId="sha256:" + "0" * 64,
        prefix='<skill-context name="greeting">',
        suffix="</skill-context>",
    )
    log.turn_end(turn, agent=agent)


def test_skill_events_go_on_the_turn_and_are_counted_by_name() -> None:
    log = Log.asked()
    skill_turn(log, "0", "c1", "u1")
    log.turn("1")
    log.usage("u2")
    log.message([("c2", "skill")], turn="1")
    log.tool_start("c2", "skill")
    log.tool_done("c2")
    log.add(
        "skill.invoked_ref",
        name="greeting",
        path="",
        contentId="sha256:" + "1" * 64,
        contentLength=42,
        source="project",
    )
    log.turn_end("1")
    log.simple_turn("2", "u3")
    spans, recorder = observe(log)
    check_invariants(spans)
    turn1, turn2 = turns(spans, 1)[0], turns(spans, 2)[0]
    assert [(e.name, e.attributes) for e in turn1.events] == [
        (
            "copilot.skill.invoked",
            {
                "copilot.skill.name": "greeting",
                "copilot.skill.source": "project",
                "copilot.skill.trigger": "agent-invoked",
                "copilot.skill.content.length": len("SECRET-SKILL-BODY greet people"),
            },
        ),
        ("copilot.skill.context_delivered", {"copilot.skill.name": "greeting"}),
    ]
    assert [(e.name, e.attributes["copilot.skill.content.length"]) for e in turn2.events] == [
        ("copilot.skill.invoked", 42)
    ]
    assert recorder.values("copilot.skills.invoked", copilot__skill__name="greeting") == [1, 1]
    text = repr(spans)
    assert "SECRET-SKILL-BODY" not in text and "/home/someone" not in text


def main_turn_spawning_a_subagent() -> Log:
    """A task whose first main turn calls `task` (t1), and its sub-agent a1 started."""
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("t1", "task")])
    log.tool_start("t1", "task")
    log.add("subagent.started", "a1", toolCallId="t1", agentName="general-purpose")
    return log


def test_a_subagents_skill_goes_on_the_subagents_turn() -> None:
    log = main_turn_spawning_a_subagent()
    skill_turn(log, "0", "c1", "u2", agent="a1")
    log.add("subagent.completed", "a1", toolCallId="t1", agentName="general-purpose")
    log.tool_done("t1")
    log.turn_end("0")
    spans = assemble(log.events())
    check_invariants(spans)
    (subagent,) = by_name(spans, "invoke_agent general-purpose")
    (sub_turn,) = children(spans, subagent)
    assert [e.name for e in sub_turn.events] == [
        "copilot.skill.invoked",
        "copilot.skill.context_delivered",
    ]
    (root,) = roots_of(spans)
    main_turn = children(spans, root)[0]
    assert main_turn.events == () and root.events == ()


def test_a_skill_with_no_task_open_is_still_counted() -> None:
    log = Log()
    log.start()
    log.add("skill.invoked", name="greeting", path="", content="x", trigger="user-invoked")
    spans, recorder = observe(log)
    assert spans == []
    assert recorder.values("copilot.skills.invoked", copilot__skill__name="greeting") == [1]


# --- the autopilot continuation limit -----------------------------------------------------------


def nudged_autopilot_task(log: Log, interaction: str, nudges: int, first_usage: int = 0) -> int:
    """An autopilot task whose model never calls task_complete, nudged `nudges` times; returns
    the time of its last turn_end."""
    log.user(interaction=interaction, agentMode="autopilot")
    log.simple_turn("0", f"u{first_usage}", interaction=interaction)
    for n in range(nudges):
        log.add(
            "user.message",
            content="",
            source="autopilot",
            isAutopilotContinuation=True,
            interactionId=f"{interaction}-n{n}",
            turnId="0",
        )
        log.simple_turn("0", f"u{first_usage + n + 1}", interaction=f"{interaction}-n{n}")
    return log.now


def autopilot_log() -> Log:
    log = Log()
    log.start()
    log.add("session.mode_changed", previousMode="interactive", newMode="autopilot")
    return log


def test_shutdown_without_another_nudge_is_the_autopilot_limit() -> None:
    log = autopilot_log()
    last = nudged_autopilot_task(log, "i1", nudges=2)
    log.wait(50)
    log.add("session.shutdown", shutdownType="routine")
    spans, recorder = observe(log)
    check_invariants(spans)
    (root,) = roots_of(spans)
    assert root.attributes["copilot.end_reason"] == "autopilot_limit"
    assert root.attributes["copilot.task.outcome"] == "no_signal"
    assert root.attributes["copilot.autopilot.continuations"] == 2
    assert "copilot.incomplete" not in root.attributes
    assert root.end_ns == last
    assert recorder.values("copilot.autopilot.limit_stops") == [1]
    assert recorder.values("copilot.tasks", copilot__task__outcome="no_signal") == [1]


def test_a_limit_of_zero_continuations_is_recognised_too() -> None:
    log = autopilot_log()
    nudged_autopilot_task(log, "i1", nudges=0)
    log.add("session.shutdown", shutdownType="routine")
    (root,) = roots_of(assemble(log.events()))
    assert root.attributes["copilot.end_reason"] == "autopilot_limit"


def test_the_next_message_after_an_unnudged_stop_ends_it_at_the_limit() -> None:
    """Interactive autopilot: after the last nudge the CLI waits for the user."""
    log = autopilot_log()
    nudged_autopilot_task(log, "i1", nudges=1)
    log.user(interaction="i2", agentMode="autopilot")
    log.turn("0", "i2")
    log.usage("u9")
    log.message([("c1", "task_complete")])
    log.tool_start("c1", "task_complete")
    log.tool_done("c1")
    log.add("session.task_complete", summary="done", success=True)
    log.turn_end("0")
    spans, recorder = observe(log)
    first, second = roots_of(spans)
    assert first.attributes["copilot.end_reason"] == "autopilot_limit"
    assert second.attributes["copilot.end_reason"] == "task_complete"
    assert second.attributes["copilot.task.outcome"] == "completed"
    assert recorder.values("copilot.autopilot.limit_stops") == [1]


def test_end_of_input_without_shutdown_is_not_called_a_limit() -> None:
    """A log that just ends (a killed CLI, a file copied mid-run) does not say the CLI gave up."""
    log = autopilot_log()
    nudged_autopilot_task(log, "i1", nudges=1)
    spans, recorder = observe(log)
    (root,) = roots_of(spans)
    assert root.attributes["copilot.end_reason"] == "loop_end"
    assert recorder.values("copilot.autopilot.limit_stops") == []


def test_interactive_mode_and_task_complete_are_never_a_limit() -> None:
    log = Log.asked()
    log.simple_turn("0", "u1")
    log.add("session.shutdown", shutdownType="routine")
    log.add("session.resume", eventCount=5)
    log.add("session.mode_changed", previousMode="interactive", newMode="autopilot")
    log.user(interaction="i2", agentMode="autopilot")
    log.turn("0", "i2")
    log.usage("u2")
    log.message([("c1", "task_complete")])
    log.tool_start("c1", "task_complete")
    log.tool_done("c1")
    log.add("session.task_complete", summary="done", success=True)
    log.turn_end("0")
    log.add("session.shutdown", shutdownType="routine")
    spans, recorder = observe(log)
    assert [r.attributes["copilot.end_reason"] for r in roots_of(spans)] == [
        "loop_end",
        "task_complete",
    ]
    assert recorder.values("copilot.autopilot.limit_stops") == []


def test_a_turn_that_asked_for_tools_before_shutdown_is_incomplete_not_a_limit() -> None:
    log = autopilot_log()
    log.user(agentMode="autopilot")
    log.turn("0")
    log.usage("u1")
    log.message([("c1", "bash")])
    log.tool_start("c1", "bash")
    log.tool_done("c1")
    log.turn_end("0")
    log.add("session.shutdown", shutdownType="routine")
    (root,) = roots_of(assemble(log.events()))
    assert root.attributes["copilot.end_reason"] == "shutdown"
    assert root.attributes["copilot.incomplete"] is True


def live_stop(log: Log, reason: str) -> None:
    log.add("session.autopilot_stopped", reason=reason, requestId="m1")
    log.raw[-1]["ephemeral"] = True


def test_live_autopilot_stopped_at_the_cap_ends_the_task_at_its_last_turn() -> None:
    """The SDK stream says so itself (session.autopilot_stopped, reason cap_reached): the task
    ends then, with the same ids and end as the log gives once the CLI shuts down."""
    log = autopilot_log()
    last = nudged_autopilot_task(log, "i1", nudges=2)
    disk = Log()
    disk.raw = [dict(e) for e in log.raw]
    disk.now = log.now
    disk.add("session.shutdown", shutdownType="routine")
    live_stop(log, "cap_reached")
    assembler = Assembler()
    live_spans = assembler.feed("s", log.events(), "sess-1")  # no end of input needed
    (live_root,) = roots_of(live_spans)
    assert live_root.attributes["copilot.end_reason"] == "autopilot_limit"
    assert live_root.attributes["copilot.autopilot.stop_reason"] == "cap_reached"
    assert live_root.end_ns == last
    (disk_root,) = roots_of(assemble(disk.events()))
    assert (disk_root.trace_id, disk_root.span_id, disk_root.end_ns) == (
        live_root.trace_id,
        live_root.span_id,
        live_root.end_ns,
    )


def test_live_autopilot_stopped_for_another_reason_only_records_it() -> None:
    log = autopilot_log()
    log.user(agentMode="autopilot")
    log.turn("0")
    log.usage("u1")
    log.message([("c1", "task_complete")])
    log.tool_start("c1", "task_complete")
    log.tool_done("c1")
    log.add("session.task_complete", summary="done", success=True)
    live_stop(log, "task_complete")
    log.turn_end("0")
    (root,) = roots_of(assemble(log.events()))
    assert root.attributes["copilot.end_reason"] == "task_complete"
    assert root.attributes["copilot.autopilot.stop_reason"] == "task_complete"


def test_live_cap_reached_while_background_work_runs_names_the_later_end() -> None:
    """`cap_reached` with a background sub-agent still running: the task ends when the stream
    says idle, and its end reason is still the limit."""
    log = autopilot_log()
    log.user(agentMode="autopilot")
    log.turn("0")
    log.usage("u1")
    log.message([("t1", "task")])
    log.tool_start("t1", "task")
    log.add("subagent.started", "a1", toolCallId="t1", agentName="explore")
    log.tool_done("t1")
    log.turn_end("0")
    log.simple_turn("1", "u2")
    live_stop(log, "cap_reached")
    assembler = Assembler()
    assert roots_of(assembler.feed("s", log.events(), "sess-1")) == []  # still open
    log.add("subagent.completed", "a1", toolCallId="t1", agentName="explore")
    log.add("session.idle")
    spans = assembler.feed("s", log.events()[-2:], "sess-1")
    (root,) = roots_of(spans)
    assert root.attributes["copilot.end_reason"] == "autopilot_limit"
    assert "copilot.incomplete" not in root.attributes


def background_subagent_past_shutdown() -> Log:
    """As CLI 1.0.81 logged it: the `task` call completes at once (the sub-agent runs in the
    background), the main loop ends, the CLI writes session.shutdown, and only then the
    sub-agent's last turn and its subagent.completed."""
    log = main_turn_spawning_a_subagent()
    log.turn("0", agent="a1", parent="t1")
    log.usage("s1", agent="a1", parent="t1")
    log.message(agent="a1", parent="t1")
    log.tool_done("t1")
    log.turn_end("0")
    log.turn("1")
    log.usage("u2")
    log.message(turn="1")
    log.turn_end("0", agent="a1", parent="t1")
    log.turn_end("1")  # the main loop stops: its sub-agent still runs
    log.turn("1", agent="a1", parent="t1")
    log.add("session.shutdown", shutdownType="routine")
    log.usage("s2", agent="a1", parent="t1")  # after the shutdown
    log.message(agent="a1", parent="t1", turn="1")
    log.turn_end("1", agent="a1", parent="t1")
    log.add("subagent.completed", "a1", toolCallId="t1", agentName="general-purpose")
    return log


def test_a_shutdown_waits_for_the_background_subagent_it_left_running() -> None:
    log = background_subagent_past_shutdown()
    spans = assemble(log.events())
    check_invariants(spans)
    (root,) = [s for s in spans if s.name == "invoke_agent copilot"]
    (agent,) = [s for s in spans if s.name == "invoke_agent general-purpose"]
    completed = log.events()[-1].timestamp_ns
    assert agent.end_ns == root.end_ns == completed  # the task ended with its sub-agent
    assert "copilot.incomplete" not in agent.attributes
    assert root.attributes["copilot.end_reason"] == "loop_end"
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 4  # the sub-agent's last call, after the shutdown, included
    assert all(s.trace_id == root.trace_id for s in spans)  # no late, separate trace


def test_a_shutdown_whose_subagent_never_reports_ends_its_task_at_the_end_of_input() -> None:
    log = background_subagent_past_shutdown()
    log.raw = log.raw[: next(i for i, e in enumerate(log.raw) if e["type"] == "session.shutdown")]
    log.add("session.shutdown", shutdownType="routine")
    spans = assemble(log.events())
    check_invariants(spans)
    (root,) = [s for s in spans if s.name == "invoke_agent copilot"]
    (agent,) = [s for s in spans if s.name == "invoke_agent general-purpose"]
    assert agent.attributes.get("copilot.incomplete") is True  # cut short by the exit
    assert root.end_ns >= agent.end_ns
