"""How `replay` and `run` stop: Ctrl-C (SIGINT), SIGTERM and SIGHUP, and SIGINT ignored at start.

A shell starts a script's background job with SIGINT ignored, so that the terminal's Ctrl-C
leaves it running; both commands keep it ignored then (Python does not install its
KeyboardInterrupt handler for an ignored SIGINT, and neither do they), and stop on SIGTERM as
they do on Ctrl-C. Each child here is started with the disposition the test is about
(`tests.processes`), whatever way pytest itself was started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest

from tests import paths
from tests.builder import Log
from tests.corpus import session_state, spans_in_order
from tests.otlp_receiver import OtlpReceiver
from tests.processes import bridge_env, start_bridge, terminate
from tests.traces_file import attribute, spans_in_file

ROOT = paths.REPO
needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def _environment(**extra: str) -> dict[str, str]:
    return bridge_env({"PYTHONPATH": str(ROOT), **extra})


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (its replay workers, or its forkserver)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds} s for {what}")
        time.sleep(0.02)


def _big_corpus(root: Path) -> Path:
    """Enough logs that `replay --jobs 2` is still reading when it is signalled."""
    corpus = session_state(root)
    sessions = list(corpus.iterdir())
    for copy in range(19):
        for session in sessions:
            shutil.copytree(session, corpus / f"{copy}-{session.name}")
    return corpus


def _replay(tmp_path: Path, sigint: Literal["default", "ignored"]) -> subprocess.Popen[str]:
    """`replay --jobs 2 --traces-file` of the big corpus, in a process group of its own, once
    its workers are reading."""
    corpus = _big_corpus(tmp_path / "session-state")
    process = start_bridge(
        [
            *("replay", str(corpus), "--no-progress"),
            *("--jobs", "2", "--traces-file", str(tmp_path / "traces.jsonl")),
        ],
        env=_environment(OTEL_TRACES_EXPORTER="none"),
        sigint=sigint,
        new_session=True,
        text=True,
    )
    traces = tmp_path / "traces.jsonl"
    _wait_for(  # its workers are reading, and what they read is being written
        lambda: (traces.exists() and traces.stat().st_size > 0) or process.poll() is not None,
        60,
        "the first spans",
    )
    return process


@needs_proc
def test_replay_started_with_sigint_ignored_keeps_ignoring_it(tmp_path: Path) -> None:
    process = _replay(tmp_path, "ignored")
    try:
        assert process.poll() is None, "replay ended before it could be signalled"
        os.killpg(process.pid, signal.SIGINT)  # the terminal's Ctrl-C, to the whole group
        _, stderr = process.communicate(timeout=120)
    finally:
        terminate(process, group=True)
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode == 0, stderr  # it went on to the end
    assert "received SIGINT" not in stderr and "Traceback" not in stderr
    logs = len(list((tmp_path / "session-state").iterdir()))
    assert f"replayed {logs} logs" in stderr
    normal = tmp_path / "normal.jsonl"
    corpus = tmp_path / "session-state"
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_bridge",
            "replay",
            str(corpus),
            "--no-progress",
            "--traces-file",
            str(normal),
        ],
        env=_environment(OTEL_TRACES_EXPORTER="none"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert len(spans_in_order(tmp_path / "traces.jsonl")) == len(spans_in_order(normal))


@needs_proc
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("sigint", ["default", "ignored"], ids=lambda s: f"sigint_{s}")
def test_sigterm_or_sighup_stops_replay_and_its_workers_as_ctrl_c_does(
    tmp_path: Path, sigint: Literal["default", "ignored"], signum: signal.Signals
) -> None:
    """SIGHUP (the terminal closed) ended replay at once, by default: nothing queued was
    delivered. It stops replay as SIGTERM does."""
    process = _replay(tmp_path, sigint)
    try:
        assert process.poll() is None, "replay ended before it could be signalled"
        workers = _children(process.pid)
        process.send_signal(signum)  # the parent alone: it ends its workers itself
        _, stderr = process.communicate(timeout=60)
        _wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers), 30, "end")
    finally:
        terminate(process, group=True)
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode == 128 + signum, stderr
    assert f"received {signum.name}" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    # what was queued went out: the file holds whole requests, each parsed
    spans_in_order(tmp_path / "traces.jsonl")


def _one_task(session: str) -> bytes:
    log = Log(session=session)
    log.start()
    log.user("hello")
    log.simple_turn("0", f"{session}-usage")
    return log.jsonl()


def _run(state: Path, receiver: OtlpReceiver, log: Path) -> subprocess.Popen[str]:
    return start_bridge(
        [
            *("run", "--session-state", str(state), "--no-checkpoints"),
            *("--prometheus-port", "0", "--poll-interval", "0.1", "--rescan-interval", "0.3"),
        ],
        env=_environment(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint),
        log=log,
        sigint="ignored",
        text=True,
    )


def test_run_started_with_sigint_ignored_goes_on_and_stops_on_sigterm(
    tmp_path: Path, otlp_receiver: OtlpReceiver
) -> None:
    state = tmp_path / "session-state"
    (state / "first").mkdir(parents=True)
    (state / "first" / "events.jsonl").write_bytes(_one_task("first"))
    log = tmp_path / "run.log"
    process = _run(state, otlp_receiver, log)
    try:
        spans = len(otlp_receiver.wait_for_spans(1, timeout=30))
        process.send_signal(signal.SIGINT)
        # still following: a session that starts after the Ctrl-C is exported
        (state / "second").mkdir()
        (state / "second" / "events.jsonl").write_bytes(_one_task("second"))
        otlp_receiver.wait_for_spans(spans + 1, timeout=30)
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
    finally:
        terminate(process)
    stderr = log.read_text()
    assert "received SIGTERM" in stderr
    assert "SIGINT" not in stderr and "Traceback" not in stderr
    roots = [s for s in otlp_receiver.spans() if s["name"] == "invoke_agent copilot"]
    assert {s["attributes"]["gen_ai.conversation.id"] for s in roots} == {"first", "second"}


def test_run_started_from_a_terminal_stops_on_ctrl_c(
    tmp_path: Path, otlp_receiver: OtlpReceiver
) -> None:
    state = tmp_path / "session-state"
    (state / "first").mkdir(parents=True)
    (state / "first" / "events.jsonl").write_bytes(_one_task("first"))
    process = start_bridge(
        [
            *("run", "--session-state", str(state), "--no-checkpoints"),
            *("--prometheus-port", "0", "--poll-interval", "0.1"),
        ],
        env=_environment(OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.http_endpoint),
        sigint="default",
        text=True,
    )
    try:
        otlp_receiver.wait_for_spans(1, timeout=30)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        terminate(process)
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode == 0, stderr
    assert "received SIGINT" in stderr


def _checkpointed(state_dir: Path, log: Path) -> bool:
    """The checkpoint of `log` is past its whole length: its task ended and was delivered, so a
    restart must not send any of it again."""
    path = state_dir / "checkpoints.jsonl"
    offset = -1
    if path.exists():
        for line in path.read_text().splitlines()[1:]:  # a journal: a log's latest entry holds
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:  # the line being written now
                continue
            if entry.get("path") == str(log):
                offset = entry.get("offset", -1)
    return offset == log.stat().st_size


@pytest.mark.parametrize("sigint", ["default", "ignored"], ids=lambda s: f"sigint_{s}")
def test_sighup_stops_run_cleanly_and_a_restart_sends_no_span_twice(
    tmp_path: Path, sigint: Literal["default", "ignored"]
) -> None:
    """SIGHUP killed run on the spot (status 129, nothing flushed, no checkpoint, nothing
    said), and the restart sent again what was delivered. Now it stops run as SIGTERM does,
    with one line saying so and that a config change needs a restart, also when SIGINT was
    ignored at start (a script's background job). The restart sends only the new task."""
    state = tmp_path / "session-state"
    first = state / "first" / "events.jsonl"
    first.parent.mkdir(parents=True)
    shutil.copyfile(paths.FIXTURES / "one_tool_cli1092" / "events.jsonl", first)
    traces, state_dir, log = (
        tmp_path / "traces.jsonl",
        tmp_path / "bridge-state",
        tmp_path / "run.log",
    )
    argv = [
        *("run", "--session-state", str(state), "--state-dir", str(state_dir)),
        *("--traces-file", str(traces), "--no-prometheus", "--poll-interval", "0.1"),
        *("--rescan-interval", "0.3"),
    ]
    process = start_bridge(argv, env=_environment(), log=log, sigint=sigint)
    try:
        _wait_for(lambda: bool(spans_in_file(traces)), 30, "the first spans written")
        written = spans_in_file(traces)
        _wait_for(lambda: _checkpointed(state_dir, first), 30, "the checkpoint past the task")
        process.send_signal(signal.SIGHUP)
        assert process.wait(timeout=30) == 0, log.read_text()
    finally:
        terminate(process)
    stderr = log.read_text()
    (said,) = [line for line in stderr.splitlines() if "received SIGHUP" in line]
    assert "restart" in said and "Traceback" not in stderr, stderr
    assert "stopped:" in stderr, stderr  # the stop ran: delivered, checkpoints saved

    process = start_bridge(argv, env=_environment(), log=log, sigint=sigint, append=True)
    try:
        (state / "second").mkdir()
        (state / "second" / "events.jsonl").write_bytes(_one_task("second"))
        _wait_for(
            lambda: any(
                attribute(s, "gen_ai.conversation.id") == "second" for s in spans_in_file(traces)
            ),
            30,
            "the second task's spans",
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()
    finally:
        terminate(process)
    ids = [span["spanId"] for span in spans_in_file(traces)]
    assert len(ids) == len(set(ids)), "a span was written twice"
    assert {span["spanId"] for span in written} <= set(ids)
