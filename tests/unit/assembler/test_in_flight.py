"""What runs now: the gauges of the open tasks (`Assembler.in_flight`) at each step of a task
(open, waiting for a person, answered, closed), after a checkpoint's snapshot and restore, and
the signals of a task in trouble (docs/metrics.md, "Running now")."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from otel_bridge import semconv as sc
from otel_bridge.assembler import Assembler, AssemblerConfig, TroubleOptions, label_dict
from otel_bridge.feed import StreamFeeder
from tests.builder import Log
from tests.recorder import Recorder


def watch(assembler: Assembler, now_ns: int) -> None:
    """`run`'s clock looks at the open tasks: through the quiet-task policy (`feed._quiet`),
    which says which are stalled, with the default timeouts."""
    StreamFeeder(assembler, lambda _records: None).watch(now_ns / 1e9)


STREAM = "sess-1"
MAIN = (sc.MODE_INTERACTIVE, None, None, sc.MAIN_AGENT_NAME)


def gauges(assembler: Assembler, now_ns: int) -> dict[str, dict[tuple[Any, ...], float]]:
    """The gauges' values, without the series at 0."""
    view = assembler.in_flight(now_ns)
    return {
        name: {key: value for key, value in series.items() if value}
        for name, series in view.items()
        if any(series.values())
    }


class Stepper:
    """Feeds a log's new events to one assembler, step by step."""

    def __init__(self, log: Log, assembler: Assembler | None = None) -> None:
        self.log = log
        self.assembler = assembler or Assembler()
        self.fed = 0
        self.spans: list[Any] = []

    def step(self) -> dict[str, dict[tuple[Any, ...], float]]:
        events = self.log.events()[self.fed :]
        self.fed = len(self.log.raw)
        self.spans += self.assembler.feed(STREAM, events)
        return gauges(self.assembler, self.log.now)


def open_task(log: Log, interaction: str = "i1") -> None:
    log.user(interaction=interaction)
    log.turn("0", interaction)
    log.usage(f"u-{interaction}")
    log.message([("c1", "bash")], turn="0")


def test_the_gauges_follow_a_task_through_a_wait_for_a_person_to_its_end() -> None:
    log = Log()
    log.start()
    steps = Stepper(log)
    assert steps.step() == {}  # a session, no task

    open_task(log)
    now = steps.step()
    assert now[sc.METRIC_TASKS_OPEN] == {MAIN: 1}
    assert now[sc.METRIC_TASKS_OPEN_TURNS] == {MAIN: 1}
    assert sc.METRIC_TASKS_WAITING_FOR_USER not in now

    # the shell call asks for permission: the task waits for a person
    log.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c1"})
    log.wait(30_000)
    now = steps.step()
    assert now[sc.METRIC_TASKS_WAITING_FOR_USER] == {(sc.WAIT_PERMISSION, *MAIN): 1}
    assert now[sc.METRIC_TASKS_OPEN_SILENCE][MAIN] == pytest.approx(30.0)

    # answered: the wait is over, the tool runs
    log.add("permission.completed", requestId="p1", toolCallId="c1", result={"kind": "approved"})
    log.tool_start("c1", "bash")
    now = steps.step()
    assert sc.METRIC_TASKS_WAITING_FOR_USER not in now
    assert now[sc.METRIC_TASKS_OPEN_TOOL_CALLS] == {MAIN: 1}
    log.tool_done("c1")
    log.turn_end("0")

    # the next turn asks the user a question, then for the plan's approval
    log.turn("1")
    log.message([("c2", "ask_user")], turn="1")
    log.tool_start("c2", "ask_user")
    now = steps.step()
    assert now[sc.METRIC_TASKS_WAITING_FOR_USER] == {(sc.WAIT_QUESTION, *MAIN): 1}
    assert now[sc.METRIC_TASKS_OPEN_TURNS] == {MAIN: 2}
    log.tool_done("c2")
    log.add("tool.execution_start", toolCallId="c3", toolName="exit_plan_mode", arguments={})
    now = steps.step()
    assert now[sc.METRIC_TASKS_WAITING_FOR_USER] == {(sc.WAIT_PLAN_APPROVAL, *MAIN): 1}
    log.tool_done("c3")
    now = steps.step()
    assert sc.METRIC_TASKS_WAITING_FOR_USER not in now
    assert now[sc.METRIC_TASKS_OPEN_TOOL_CALLS] == {MAIN: 3}

    # the loop ends: nothing is open
    log.turn_end("1")
    log.turn("2")
    log.message([], turn="2")
    log.turn_end("2")
    assert steps.step() == {}
    assert all(not series for series in steps.assembler.in_flight(log.now).values())


def test_the_oldest_task_is_timed_from_its_first_event_to_now() -> None:
    log = Log()
    log.start()
    open_task(log)
    steps = Stepper(log)
    steps.step()
    first = steps.assembler.session(STREAM).interaction
    assert first is not None
    now = first.root.start_ns + 125 * 10**9
    assert gauges(steps.assembler, now)[sc.METRIC_TASKS_OPEN_OLDEST] == {MAIN: 125.0}


def test_the_oldest_wait_of_each_kind_is_timed_from_its_request_until_it_is_answered() -> None:
    log = Log()
    log.start()
    open_task(log)
    log.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c1"})
    log.wait(40_000)
    log.add("permission.requested", requestId="p2", permissionRequest={"toolCallId": "c9"})
    log.wait(20_000)
    steps = Stepper(log)
    waited = steps.step()[sc.METRIC_TASKS_WAITING_OLDEST]
    assert waited == {(sc.WAIT_PERMISSION, *MAIN): pytest.approx(60.0, abs=0.1)}  # p1
    assert steps.step()[sc.METRIC_TASKS_WAITING_FOR_USER] == {(sc.WAIT_PERMISSION, *MAIN): 1}

    # the first is answered: the second has waited 20 s so far, and goes on
    log.add("permission.completed", requestId="p1", toolCallId="c1", result={"kind": "approved"})
    log.wait(5_000)
    waited = steps.step()[sc.METRIC_TASKS_WAITING_OLDEST]
    assert waited == {(sc.WAIT_PERMISSION, *MAIN): pytest.approx(25.0, abs=0.1)}

    # a live question beside it has its own series, from its own request
    log.add("user_input.requested", requestId="q1", question="which branch?")
    log.wait(3_000)
    waited = steps.step()[sc.METRIC_TASKS_WAITING_OLDEST]
    assert waited[(sc.WAIT_QUESTION, *MAIN)] == pytest.approx(3.0, abs=0.1)
    assert waited[(sc.WAIT_PERMISSION, *MAIN)] == pytest.approx(28.0, abs=0.1)

    # both answered: every kind's series is there, at 0
    log.add("permission.completed", requestId="p2", toolCallId="c9", result={"kind": "approved"})
    log.add("user_input.completed", requestId="q1")
    steps.step()
    view = steps.assembler.in_flight(log.now)[sc.METRIC_TASKS_WAITING_OLDEST]
    assert view == {(kind, *MAIN): 0.0 for kind in sc.WAIT_KINDS}


def test_at_a_glance_tasks_open_waiting_and_in_trouble_each_counted_once() -> None:
    assembler, _ = trouble_assembler(repeated_calls=2)
    logs = {name: Log(session=name) for name in ("a", "b", "c")}
    for name, log in logs.items():
        log.start()
        open_task(log, interaction=f"i-{name}")
        assembler.feed(name, log.events())
    a, b = logs["a"], logs["b"]
    # a waits for a permission and asks a question: one task waiting
    a.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c1"})
    a.add("tool.execution_start", toolCallId="q", toolName="ask_user", arguments={})
    # b calls one tool twice with the same arguments: in trouble
    for n in range(2):
        b.add("tool.execution_start", toolCallId=f"r{n}", toolName="view", arguments={"p": 1})
        b.tool_done(f"r{n}")
    for name in ("a", "b"):
        assembler.feed(name, logs[name].events()[-(2 if name == "a" else 4) :])
    assert assembler.glance() == (3, 1, 1)
    assert assembler.glance(skip={"a"}) == (2, 0, 1)


def test_a_permission_left_unanswered_by_an_earlier_task_is_not_a_wait_of_this_one() -> None:
    log = Log()
    log.start()
    log.add("permission.requested", requestId="old", permissionRequest={"toolCallId": "x"})
    open_task(log)
    now = Stepper(log).step()
    assert now[sc.METRIC_TASKS_OPEN] == {MAIN: 1}
    assert sc.METRIC_TASKS_WAITING_FOR_USER not in now


def test_sub_agents_shells_and_labels_of_mode_repository_and_agent() -> None:
    log = Log()
    log.start(context={"repository": "octo/widgets", "cwd": "/w", "gitRoot": "/w"})
    log.add("session.mode_changed", newMode="autopilot")
    log.user()
    log.turn("0")
    log.message([("t1", "task")], turn="0")
    log.tool_start("t1", "task")
    log.add("subagent.started", toolCallId="t1", agentName="explore", agentDisplayName="Explore")
    now = Stepper(log).step()
    labels = next(iter(now[sc.METRIC_TASKS_OPEN]))
    assert labels[0] == sc.MODE_AUTOPILOT
    assert labels[2] == "widgets"
    assert now[sc.METRIC_SUBAGENTS_RUNNING] == {labels: 1}
    named = label_dict(sc.METRIC_TASKS_OPEN, labels)
    assert named[sc.VCS_REPOSITORY_NAME] == "widgets"
    assert not any("sess" in str(value) for value in named.values())


def test_live_requests_for_an_answer_wait_until_their_completion() -> None:
    log = Log()
    log.start()
    open_task(log)
    log.add("user_input.requested", requestId="r1", question="which?")
    steps = Stepper(log)
    assert steps.step()[sc.METRIC_TASKS_WAITING_FOR_USER] == {(sc.WAIT_QUESTION, *MAIN): 1}
    log.add("exit_plan_mode.requested", requestId="r2", summary="s", planContent="p")
    now = steps.step()
    assert now[sc.METRIC_TASKS_WAITING_FOR_USER] == {
        (sc.WAIT_QUESTION, *MAIN): 1,
        (sc.WAIT_PLAN_APPROVAL, *MAIN): 1,
    }
    log.add("user_input.completed", requestId="r1", answer="a")
    log.add("exit_plan_mode.completed", requestId="r2", approved=True)
    assert sc.METRIC_TASKS_WAITING_FOR_USER not in steps.step()


def test_after_a_restart_from_a_checkpoint_the_gauges_are_the_same() -> None:
    """A checkpoint is taken between tasks: the restarted bridge restores the session and
    reads the open task's events again, and finds the figures the first one had."""
    log = Log()
    log.start()
    log.user()
    log.simple_turn("0", "u0")
    done = len(log.raw)
    log.user(interaction="i2")
    log.turn("0", "i2")
    log.message([("c1", "view"), ("c2", "view")], turn="0")
    for _ in range(3):
        log.add(
            "tool.execution_start",
            toolCallId=f"v{len(log.raw)}",
            toolName="grep",
            arguments={"pattern": "x"},
        )
    log.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c9"})
    first = Stepper(log)
    before = first.step()
    assert before[sc.METRIC_TASKS_OPEN_REPEATS] == {MAIN: 3}
    assert before[sc.METRIC_TASKS_WAITING_FOR_USER] == {(sc.WAIT_PERMISSION, *MAIN): 1}

    checkpointed = Assembler()
    checkpointed.feed(STREAM, log.events()[:done])
    saved = checkpointed.evict(STREAM)
    assert saved is not None
    restarted = Assembler()
    restarted.session(STREAM).restore(saved)
    restarted.feed(STREAM, log.events()[done:])
    assert gauges(restarted, log.now) == before


def signals_of(spans: list[Any]) -> list[dict[str, Any]]:
    roots = [s for s in spans if s.parent_span_id is None]
    return [dict(e.attributes) for r in roots for e in r.events if e.name == sc.EVENT_TROUBLE]


def trouble_assembler(**options: Any) -> tuple[Assembler, Recorder]:
    recorder = Recorder()
    config = AssemblerConfig(trouble=TroubleOptions(**options))
    return Assembler(config, recorder), recorder  # type: ignore[arg-type]


def test_the_same_call_again_and_again_is_a_signal_once(caplog: pytest.LogCaptureFixture) -> None:
    assembler, recorder = trouble_assembler(repeated_calls=3)
    log = Log()
    log.start()
    open_task(log)
    steps = Stepper(log, assembler)
    for n in range(5):
        call = f"r{n}"
        log.add(
            "tool.execution_start",
            toolCallId=call,
            toolName="view",
            arguments={"path": "/secret/a.py"},
        )
        log.tool_done(call)
        # other arguments are another call
        log.add(
            "tool.execution_start",
            toolCallId=f"o{n}",
            toolName="view",
            arguments={"path": f"/b{n}.py"},
        )
        log.tool_done(f"o{n}")
        with caplog.at_level(logging.WARNING):
            now = steps.step()
        expected = 1 if n + 1 >= 3 else 0
        assert (
            now.get(sc.METRIC_TASKS_TROUBLED, {}).get((sc.TROUBLE_REPEATED_CALL, *MAIN), 0)
            == expected
        )
        assert now[sc.METRIC_TASKS_OPEN_REPEATS] == {MAIN: n + 1}
    warnings = [r for r in caplog.records if "repeated_call" in r.getMessage()]
    assert len(warnings) == 1
    assert "secret" not in warnings[0].getMessage() and "view" not in warnings[0].getMessage()
    assert recorder.values(sc.METRIC_TASK_TROUBLE, copilot__trouble__signal="repeated_call") == [1]
    log.turn_end("0")
    log.turn("1")
    log.message([], turn="1")
    log.turn_end("1")
    steps.step()
    (event,) = signals_of(steps.spans)
    assert event == {
        sc.COPILOT_TROUBLE_SIGNAL: sc.TROUBLE_REPEATED_CALL,
        sc.COPILOT_TROUBLE_VALUE: 3,
        sc.COPILOT_TROUBLE_THRESHOLD: 3,
        sc.GEN_AI_TOOL_NAME: "view",
    }
    assert gauges(assembler, log.now) == {}


def test_a_tool_failing_in_a_row_is_a_signal_and_a_success_starts_again() -> None:
    assembler, recorder = trouble_assembler(tool_failures=3)
    log = Log()
    log.start()
    open_task(log)
    steps = Stepper(log, assembler)
    for n, success in enumerate([False, False, True, False, False]):
        log.add("tool.execution_start", toolCallId=f"f{n}", toolName="edit", arguments={"n": n})
        log.tool_done(f"f{n}", success=success)
    now = steps.step()
    assert now[sc.METRIC_TASKS_OPEN_TOOL_FAILURES] == {MAIN: 2}
    assert sc.METRIC_TASKS_TROUBLED not in now
    log.add("tool.execution_start", toolCallId="f9", toolName="edit", arguments={"n": 9})
    log.tool_done("f9", success=False)
    now = steps.step()
    assert now[sc.METRIC_TASKS_OPEN_TOOL_FAILURES] == {MAIN: 3}
    assert now[sc.METRIC_TASKS_TROUBLED] == {(sc.TROUBLE_TOOL_FAILURES, *MAIN): 1}
    assert recorder.values(sc.METRIC_TASK_TROUBLE, copilot__trouble__signal="tool_failures") == [1]


def test_many_turns_and_a_long_task_by_event_time() -> None:
    assembler, _ = trouble_assembler(turns=3, long_task_seconds=((sc.MODE_INTERACTIVE, 60.0),))
    log = Log()
    log.start()
    log.user()
    steps = Stepper(log, assembler)
    for n in range(3):
        log.turn(str(n))
        log.message([(f"c{n}", "bash")], turn=str(n))
        log.tool_start(f"c{n}", "bash")
        log.tool_done(f"c{n}")
        log.turn_end(str(n))
        raised = steps.step().get(sc.METRIC_TASKS_TROUBLED, {})
        assert ((sc.TROUBLE_TURNS, *MAIN) in raised) == (n == 2)
    assert (sc.TROUBLE_LONG, *MAIN) not in raised
    log.wait(61_000)
    log.turn("3")
    assert (sc.TROUBLE_LONG, *MAIN) in steps.step()[sc.METRIC_TASKS_TROUBLED]


def test_a_silent_task_is_stalled_by_the_callers_clock(caplog: pytest.LogCaptureFixture) -> None:
    assembler, recorder = trouble_assembler(stalled_seconds=300)
    log = Log()
    log.start()
    open_task(log)
    steps = Stepper(log, assembler)
    steps.step()
    last = log.now
    watch(assembler, last + 299 * 10**9)
    assert sc.METRIC_TASKS_TROUBLED not in gauges(assembler, last + 299 * 10**9)
    with caplog.at_level(logging.WARNING):
        watch(assembler, last + 301 * 10**9)
        watch(assembler, last + 900 * 10**9)
    assert gauges(assembler, last + 301 * 10**9)[sc.METRIC_TASKS_TROUBLED] == {
        (sc.TROUBLE_STALLED, *MAIN): 1
    }
    assert len([r for r in caplog.records if "stalled" in r.getMessage()]) == 1
    assert recorder.values(sc.METRIC_TASK_TROUBLE, copilot__trouble__signal="stalled") == [1]
    # a signal the clock told puts nothing on the spans: they are what the log says, the same
    # whenever it is read (a root exported again after a crash must be identical)
    spans = steps.spans + assembler.end_stream(STREAM)
    assert signals_of(spans) == []


def test_a_stall_is_over_when_the_task_writes_again() -> None:
    """The stalled series goes back to 0 at the task's next event (CopilotAgentStalled
    resolves then), and comes back if it goes silent again; counted once per task."""
    assembler, recorder = trouble_assembler(stalled_seconds=300)
    log = Log()
    log.start()
    open_task(log)
    steps = Stepper(log, assembler)
    steps.step()
    watch(assembler, log.now + 301 * 10**9)
    stalled = (sc.TROUBLE_STALLED, *MAIN)
    assert gauges(assembler, log.now + 301 * 10**9)[sc.METRIC_TASKS_TROUBLED] == {stalled: 1}
    log.wait(302_000)
    log.tool_start("c1", "bash")  # it writes again
    steps.step()
    assert stalled not in gauges(assembler, log.now).get(sc.METRIC_TASKS_TROUBLED, {})
    watch(assembler, log.now + 301 * 10**9)  # silent again
    assert gauges(assembler, log.now + 301 * 10**9)[sc.METRIC_TASKS_TROUBLED] == {stalled: 1}
    assert recorder.values(sc.METRIC_TASK_TROUBLE, copilot__trouble__signal="stalled") == [1]


def test_a_task_silent_while_it_waits_for_a_person_is_waiting_not_stalled_nor_long() -> None:
    assembler, recorder = trouble_assembler(stalled_seconds=300)
    log = Log()
    log.start()
    open_task(log)
    log.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c1"})
    steps = Stepper(log, assembler)
    steps.step()
    later = log.now + 7200 * 10**9  # past the long task's hour too
    watch(assembler, later)
    now = gauges(assembler, later)
    assert sc.METRIC_TASKS_TROUBLED not in now
    assert now[sc.METRIC_TASKS_WAITING_OLDEST] == {
        (sc.WAIT_PERMISSION, *MAIN): pytest.approx(7200.0, abs=0.1)
    }
    assert recorder.values(sc.METRIC_TASK_TROUBLE) == []
    # answered, then silent again: now it is stalled
    log.add("permission.completed", requestId="p1", toolCallId="c1", result={"kind": "approved"})
    log.tool_start("c1", "bash")
    steps.step()
    watch(assembler, log.now + 301 * 10**9)
    assert recorder.values(sc.METRIC_TASK_TROUBLE, copilot__trouble__signal="stalled") == [1]


def test_thresholds_at_zero_raise_nothing() -> None:
    assembler, recorder = trouble_assembler(
        repeated_calls=0, tool_failures=0, turns=0, stalled_seconds=0, long_task_seconds=()
    )
    log = Log()
    log.start()
    open_task(log)
    for n in range(3):
        log.add("tool.execution_start", toolCallId=f"f{n}", toolName="edit", arguments={})
        log.tool_done(f"f{n}", success=False)
    steps = Stepper(log, assembler)
    steps.step()
    watch(assembler, log.now + 10**13)
    assert sc.METRIC_TASKS_TROUBLED not in gauges(assembler, log.now)
    assert recorder.values(sc.METRIC_TASK_TROUBLE) == []


def test_negative_thresholds_are_refused() -> None:
    with pytest.raises(ValueError, match="turns"):
        TroubleOptions(turns=-1)


def test_run_s_flags_set_the_thresholds_and_replay_keeps_the_defaults(tmp_path) -> None:
    from otel_bridge.cli._parser import build_parser
    from otel_bridge.cli._settings import (
        daemon_options,
        replay_pipeline_config,
        run_pipeline_config,
    )

    flags = ["--trouble-repeated-calls", "7", "--trouble-tool-failures", "0"]
    flags += ["--trouble-turns", "9", "--trouble-stalled-seconds", "30"]
    flags += ["--trouble-task-minutes", "2", "--trouble-autopilot-minutes", "3"]
    flags += ["--trouble-compactions", "4"]
    args = build_parser().parse_args(["run", "--no-checkpoints", *flags])
    trouble = run_pipeline_config(args, {}).assembler.trouble
    assert (trouble.repeated_calls, trouble.tool_failures, trouble.turns) == (7, 0, 9)
    assert trouble.compactions == 4
    assert trouble.stalled_seconds == 30
    assert trouble.long_task(sc.MODE_PLAN) == 120 and trouble.long_task(sc.MODE_AUTOPILOT) == 180
    replay = build_parser().parse_args(["replay", str(tmp_path)])
    assert replay_pipeline_config(replay, {}).assembler.trouble == TroubleOptions()
    # how long a task waiting for a person stays open without an event
    assert daemon_options(args, {}).tail.person_timeout_seconds == 86_400
    waits = build_parser().parse_args(["run", "--no-checkpoints", "--person-timeout", "7200"])
    assert daemon_options(waits, {}).tail.person_timeout_seconds == 7200
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--trouble-turns", "-1"])


def test_run_asks_for_the_clock_s_signals_only_once_the_logs_are_caught_up() -> None:
    from otel_bridge.app._running import RunningNow

    assembler, recorder = trouble_assembler(stalled_seconds=60)
    log = Log()
    log.start()
    open_task(log)
    Stepper(log, assembler).step()
    running = RunningNow(assembler, clock=lambda: (log.now + 3600 * 10**9) / 1e9)
    running.watch(catching_up=True)  # the task's next events may still be on disk
    assert recorder.values(sc.METRIC_TASK_TROUBLE) == []
    running.watch()
    assert recorder.values(sc.METRIC_TASK_TROUBLE, copilot__trouble__signal="stalled") == [1]
    series = dict(
        (labels.get(sc.COPILOT_TROUBLE_SIGNAL), value)
        for value, labels in running.series(sc.METRIC_TASKS_TROUBLED)
    )
    assert series[sc.TROUBLE_STALLED] == 1 and series[sc.TROUBLE_TURNS] == 0
