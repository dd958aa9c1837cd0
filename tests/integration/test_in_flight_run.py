"""Through `run`: the gauges of what runs now change while a log grows, and go back to 0 when
its task ends (docs/metrics.md, "Running now"). A real subprocess, a real /metrics."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.builder import GrowingLog
from tests.processes import bridge_env, start_bridge, terminate
from tests.prometheus import Scrape, free_port, scrape_metrics

DEADLINE_S = 30.0


def scrape(process: subprocess.Popen[bytes], port: int, err: Path) -> Scrape | None:
    if process.poll() is not None:
        pytest.fail(f"run exited with {process.returncode}:\n{err.read_text()[-3000:]}")
    try:
        return scrape_metrics(f"127.0.0.1:{port}", timeout=2)
    except OSError:
        return None


def wait_for(
    process: subprocess.Popen[bytes], port: int, err: Path, ok: Callable[[Scrape], bool], what: str
) -> Scrape:
    deadline = time.monotonic() + DEADLINE_S
    last = None
    while time.monotonic() < deadline:
        last = scrape(process, port, err)
        if last is not None and ok(last):
            return last
        time.sleep(0.2)
    pytest.fail(f"{what}: not seen in {DEADLINE_S}s; last /metrics:\n{last and last.text[-4000:]}")


def start(state: Path, port: int, err: Path, *more: str) -> subprocess.Popen[bytes]:
    return start_bridge(
        [
            *("run", "--session-state", str(state), "--prometheus-port", str(port)),
            *("--poll-interval", "0.1", "--rescan-interval", "0.3", "--export-timeout", "1"),
            *more,
        ],
        env=bridge_env({"OTEL_TRACES_EXPORTER": "none"}),
        log=err,
        append=True,
    )


MAIN = {"copilot_mode": "interactive", "gen_ai_agent_name": "copilot"}


def test_the_running_now_gauges_follow_a_growing_log_through_run(tmp_path: Path) -> None:
    state = tmp_path / "session-state"
    growing = GrowingLog(state)
    log, write = growing.log, growing.write
    log.start()
    log.user()
    log.turn("0")
    log.usage("u0")
    log.message([("c1", "bash")], turn="0")
    write()
    port = free_port()
    err = tmp_path / "bridge.err"
    process = start(state, port, err, "--no-checkpoints", "--status-interval", "0.5")
    try:
        main = MAIN
        text = wait_for(
            process,
            port,
            err,
            lambda t: t.one("copilot_tasks_open", **main) == 1,
            "a task open",
        )
        assert text.one("copilot_tasks_open_turns", **main) == 1
        assert text.one("copilot_tasks_waiting_for_user", copilot_wait_kind="permission") == 0
        assert (text.one("copilot_tasks_open_oldest_seconds", **main) or 0) > 0

        log.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c1"})
        write()
        permission = {"copilot_wait_kind": "permission", **main}
        text = wait_for(
            process,
            port,
            err,
            lambda t: t.one("copilot_tasks_waiting_for_user", **permission) == 1,
            "a task waiting for a permission",
        )
        # the status line says it too, for whoever reads run's log rather than /metrics
        deadline = time.monotonic() + DEADLINE_S
        said = "1 task open (1 waiting for a person, 0 in trouble)"
        while said not in err.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert said in err.read_text()
        waited = text.one("copilot_tasks_waiting_for_user_oldest_seconds", **permission)
        assert waited is not None and waited > 0
        assert (
            text.one(
                "copilot_tasks_waiting_for_user_oldest_seconds",
                copilot_wait_kind="question",
                **main,
            )
            == 0
        )

        log.add(
            "permission.completed", requestId="p1", toolCallId="c1", result={"kind": "approved"}
        )
        log.tool_start("c1", "bash")
        write()
        text = wait_for(
            process,
            port,
            err,
            lambda t: t.one("copilot_tasks_waiting_for_user", copilot_wait_kind="permission") == 0,
            "the permission answered",
        )
        assert text.one("copilot_tasks_waiting_for_user_oldest_seconds", **permission) == 0
        assert text.one("copilot_tasks_open_tool_calls", **main) == 1
        assert text.one("copilot_tasks_open", **main) == 1

        log.tool_done("c1")
        log.turn_end("0")
        log.turn("1")
        log.message([], turn="1")
        log.turn_end("1")
        write()
        text = wait_for(
            process,
            port,
            err,
            lambda t: t.one("copilot_tasks_open", **main) == 0,
            "the task ended",
        )
        assert text.one("copilot_tasks_open_turns", **main) == 0
        assert text.one("copilot_tasks_open_tool_calls", **main) == 0
    finally:
        terminate(process, 20)


def test_after_a_restart_from_checkpoints_the_open_task_is_counted_again(tmp_path: Path) -> None:
    """run stops with a task open and waiting for a permission; the next run resumes the log
    from its checkpoint (before that task) and says the same."""
    state = tmp_path / "session-state"
    growing = GrowingLog(state)
    log = growing.log
    log.start()
    log.user()
    log.simple_turn("0", "u0")  # a first task, ended: the checkpoint is after it
    log.user(interaction="i2")
    log.turn("0", "i2")
    log.message([("c1", "bash")], turn="0")
    log.add("permission.requested", requestId="p1", permissionRequest={"toolCallId": "c1"})
    growing.write()
    err = tmp_path / "bridge.err"
    checkpoints = ("--state-dir", str(tmp_path / "bridge-state"))
    waiting = {"copilot_wait_kind": "permission", **MAIN}
    for attempt in range(2):
        if attempt:  # the first run saved its place: after the first task, before the open one
            lines = (tmp_path / "bridge-state" / "checkpoints.jsonl").read_text().splitlines()
            saved = [json.loads(line) for line in lines[1:]]
            offsets = [entry["offset"] for entry in saved if entry["path"] == str(growing.path)]
            assert 0 < offsets[-1] < growing.path.stat().st_size
        port = free_port()
        process = start(state, port, err, *checkpoints)
        try:
            text = wait_for(
                process,
                port,
                err,
                lambda t: t.one("copilot_tasks_waiting_for_user", **waiting) == 1,
                "the open task waiting for a permission",
            )
            assert text.one("copilot_tasks_open", **MAIN) == 1
            assert text.one("copilot_tasks_open_turns", **MAIN) == 1
        finally:
            terminate(process, 20)
        assert process.returncode == 0, err.read_text()[-3000:]


def test_a_silent_task_is_said_stalled_once_while_run_follows_it(tmp_path: Path) -> None:
    state = tmp_path / "session-state"
    growing = GrowingLog(state)
    log = growing.log
    log.start()
    log.user()
    log.turn("0")
    log.message([("c1", "bash")], turn="0")
    log.tool_start("c1", "bash")
    growing.write()
    port = free_port()
    err = tmp_path / "bridge.err"
    process = start(state, port, err, "--no-checkpoints", "--trouble-stalled-seconds", "2")
    stalled = {"copilot_trouble_signal": "stalled", **MAIN}
    try:
        text = wait_for(
            process,
            port,
            err,
            lambda t: t.one("copilot_tasks_troubled", **stalled) == 1,
            "the task stalled",
        )
        assert text.one("copilot_task_trouble_total", copilot_trouble_signal="stalled") == 1
        assert (text.one("copilot_tasks_open_silence_seconds", **MAIN) or 0) >= 2
        log.tool_done("c1")
        log.turn_end("0")
        log.turn("1")
        log.message([], turn="1")
        log.turn_end("1")
        growing.write()
        wait_for(
            process,
            port,
            err,
            lambda t: t.one("copilot_tasks_troubled", **stalled) == 0,
            "the stalled task ended",
        )
    finally:
        terminate(process, 20)
    said = [line for line in err.read_text().splitlines() if "stalled" in line]
    assert len(said) == 1, said
    assert str(growing.path) in said[0]
