"""`replay --jobs N`: worker processes read the logs, and the output is that of one process."""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otel_bridge.cli import main
from otel_bridge.feed import WORKERS_FROM_BYTES, default_jobs, usable_cores
from otel_bridge.feed import _parallel as parallel
from otel_bridge.feed._parallel import RecordingRecorder, replay_into
from tests import paths
from tests.corpus import metric_points, session_state, spans_in_order
from tests.processes import bridge_env, start_bridge, terminate

ROOT = paths.REPO


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return session_state(tmp_path / "session-state")


def replay(corpus: Path, out: Path, jobs: int, *extra: str) -> int:
    """`replay --jobs` of `corpus` to `out`/traces.jsonl and `out`/metrics.jsonl."""
    out.mkdir()
    argv = ["replay", str(corpus), "--no-progress", "--jobs", str(jobs)]
    argv += [
        "--traces-file",
        str(out / "traces.jsonl"),
        "--metrics-file",
        str(out / "metrics.jsonl"),
    ]
    return main([*argv, *extra])


def messages(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str]]:
    """What the bridge logged, the timing-free part of each record. Not the SDK's own records:
    a forked worker inherits the metric readers of the pipelines an earlier replay in this
    same test process left behind, and the SDK restarts their threads in the child, which may
    then say "Exporter already shutdown" (seen once in a loaded run); one replay per process,
    as the command line does, has no earlier pipeline."""
    return [
        (r.name, r.levelno, r.getMessage())
        for r in caplog.records
        if r.name == "otel_bridge" or r.name.startswith("otel_bridge.")
    ]


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_jobs_2_writes_the_spans_and_metrics_of_jobs_1(
    method: str,
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    chosen = parallel._context  # forkserver: with its preload
    context = multiprocessing.get_context(method) if method != "forkserver" else None
    monkeypatch.setattr(parallel, "_context", lambda: context or chosen())
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 2)  # forkserver for chosen
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    caplog.set_level(logging.INFO)
    assert replay(corpus, tmp_path / "one", 1) == 0
    logged_by_one = messages(caplog)
    caplog.clear()
    assert replay(corpus, tmp_path / "two", 2) == 0
    one, two = tmp_path / "one", tmp_path / "two"
    spans = spans_in_order(one / "traces.jsonl")
    assert len(spans) > 300
    assert spans_in_order(two / "traces.jsonl") == spans  # the same spans, in the same order
    points = metric_points(one / "metrics.jsonl")
    assert "copilot.tool.calls" in points
    assert "gen_ai.client.inference.operation.input_tokens" in points
    assert metric_points(two / "metrics.jsonl") == points
    assert messages(caplog) == logged_by_one  # the summary line included


def test_a_bad_file_gives_the_same_exit_status_and_lines_with_jobs_2(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    (corpus / "0-binary").mkdir()
    (corpus / "0-binary" / "events.jsonl").write_bytes(b"\x00\xff\x89PNG\r\n" * 50)
    (corpus / "0-empty").mkdir()
    (corpus / "0-empty" / "events.jsonl").write_bytes(b"")
    torn = corpus / "0-torn" / "events.jsonl"
    torn.parent.mkdir()
    good = next(corpus.glob("*/events.jsonl")).read_bytes()
    torn.write_bytes(b"{not json\n" + good[: len(good) // 2])
    caplog.set_level(logging.INFO)
    assert replay(corpus, tmp_path / "one", 1) == 1
    logged_by_one = messages(caplog)
    caplog.clear()
    assert replay(corpus, tmp_path / "two", 2) == 1
    assert messages(caplog) == logged_by_one
    assert {r.processName for r in caplog.records} - {"MainProcess"}  # logged by workers
    assert any("not a Copilot session log" in text for _, _, text in logged_by_one)
    assert any("0-empty" in text and "empty" in text for _, _, text in logged_by_one)
    assert spans_in_order(tmp_path / "two" / "traces.jsonl") == spans_in_order(
        tmp_path / "one" / "traces.jsonl"
    )


def test_sampling_keeps_the_same_traces_with_jobs_2(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert replay(corpus, tmp_path / "one", 1, "--sample-ratio", "0.3") == 0
    assert replay(corpus, tmp_path / "two", 2, "--sample-ratio", "0.3") == 0
    assert replay(corpus, tmp_path / "all", 1) == 0
    sampled = spans_in_order(tmp_path / "one" / "traces.jsonl")
    assert 0 < len(sampled) < len(spans_in_order(tmp_path / "all" / "traces.jsonl"))
    assert spans_in_order(tmp_path / "two" / "traces.jsonl") == sampled


def test_workers_scrub_with_the_configured_scrubber_for_every_exporter(
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # With --jobs the workers scrub (and encode for the traces file); the console exporter
    # gets SDK spans made in the parent of what they scrubbed.
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    options = ["--deny-attribute", "gen_ai.request.model", "--scrub-pattern", "gpt-[0-9.]+"]
    options += ["--console-format", "json"]
    capsys.readouterr()
    assert replay(corpus, tmp_path / "one", 1, *options) == 0
    printed_by_one = capsys.readouterr().out
    assert replay(corpus, tmp_path / "two", 2, *options) == 0
    assert capsys.readouterr().out == printed_by_one
    spans = spans_in_order(tmp_path / "one" / "traces.jsonl")
    assert spans_in_order(tmp_path / "two" / "traces.jsonl") == spans
    text = (tmp_path / "two" / "traces.jsonl").read_text()
    assert "[REDACTED:custom]" in text and "gpt-4.1" not in text
    assert '"gen_ai.request.model"' not in text and '"gen_ai.response.model"' in text


def test_with_no_destination_jobs_2_says_what_jobs_1_says(
    corpus: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # no destination: the workers send the spans' ids only
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    caplog.set_level(logging.INFO)
    argv = ["replay", str(corpus), "--no-progress"]
    assert main([*argv, "--jobs", "1"]) == 0
    logged_by_one = messages(caplog)
    caplog.clear()
    assert main([*argv, "--jobs", "2"]) == 0
    assert messages(caplog) == logged_by_one
    assert any("traces" in text for _, _, text in logged_by_one)


def test_recorded_observations_are_made_again_in_order() -> None:
    recorder, target = RecordingRecorder(), RecordingRecorder()
    recorder.add("copilot.turns", 1, {"copilot.agent.type": "main"}, "s1")
    recorder.record("gen_ai.client.inference.operation.input_tokens", 12.5, {}, "s1")
    recorder.add("otel_bridge.events.read", 3, {}, "")
    replay_into(recorder.calls, target)
    assert target.calls == recorder.calls
    assert [call[0] for call in target.calls] == ["add", "record", "add"]


def test_default_jobs_is_the_usable_cores_for_logs_worth_it() -> None:
    from otel_bridge.cli._parser import build_parser

    assert build_parser().parse_args(["replay", "x"]).jobs is None  # chosen by the logs' size
    assert default_jobs(WORKERS_FROM_BYTES) == usable_cores() >= 1
    assert default_jobs(WORKERS_FROM_BYTES - 1) == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(["replay", "x", "--jobs", "0"])


def _group(pgid: int) -> list[int]:
    """The processes of a process group, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def _workers(parent: int) -> list[int]:
    """The pool's workers: children of the parent that run its command line (forked from
    it), or children of its forkserver (a child of the parent) when it cannot fork."""
    members = {}
    for pid in _group(parent):
        try:
            stat = (Path("/proc") / str(pid) / "stat").read_text()
            command = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue
        members[pid] = (int(stat.rsplit(")", 1)[1].split()[1]), command)
    if parent not in members:
        return []
    own = members[parent][1]
    return [
        pid
        for pid, (ppid, command) in members.items()
        if pid != parent
        and ((ppid == parent and command == own) or (ppid != parent and ppid in members))
    ]


def _replay_with_workers(tmp_path: Path, stderr: int) -> subprocess.Popen[str]:
    """`replay --jobs 2` of many logs in a process group of its own, once its workers run."""
    corpus = session_state(tmp_path / "session-state")
    sessions = list(corpus.iterdir())
    for copy in range(19):  # enough logs that the workers are still at it when signalled
        for session in sessions:
            shutil.copytree(session, corpus / f"{copy}-{session.name}")
    process = start_bridge(
        [
            *("replay", str(corpus), "--no-progress"),
            *("--jobs", "2", "--traces-file", str(tmp_path / "traces.jsonl")),
        ],
        env=bridge_env({"PYTHONPATH": str(ROOT), "OTEL_TRACES_EXPORTER": "none"}),
        log=stderr,
        sigint="default",
        new_session=True,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not _workers(process.pid) and process.poll() is None:
        if time.monotonic() > deadline:
            terminate(process, group=True)
            pytest.fail("no worker started")
        time.sleep(0.01)
    return process


def _wait_for_empty_group(pgid: int, seconds: float = 30.0) -> list[int]:
    """The processes left in the group after up to `seconds` (the forkserver goes once the
    last worker has)."""
    deadline = time.monotonic() + seconds
    left = _group(pgid)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _group(pgid)
    return left


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


@needs_proc
def test_ctrl_c_stops_the_workers_without_a_traceback(tmp_path: Path) -> None:
    process = _replay_with_workers(tmp_path, subprocess.PIPE)
    try:
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        _, stderr = process.communicate(timeout=60)
        left = _wait_for_empty_group(process.pid)
    finally:
        terminate(process, group=True)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "KeyboardInterrupt" not in stderr
    assert left == []  # no worker (nor forkserver) left behind


@needs_proc
def test_the_workers_end_when_the_parent_is_killed(tmp_path: Path) -> None:
    process = _replay_with_workers(tmp_path, subprocess.DEVNULL)
    try:
        os.kill(process.pid, signal.SIGKILL)  # the parent alone: it can stop nothing
        process.wait(timeout=60)
        left = _wait_for_empty_group(process.pid)
    finally:
        terminate(process, group=True)
    assert left == []


def test_tasks_are_runs_of_consecutive_logs_cut_by_size(tmp_path: Path) -> None:
    from otel_bridge.feed._parallel import _groups
    from otel_bridge.sources import LogFile

    logs = []
    for number, size in enumerate([600_000, 600_000, 10, 2_000_000, 5, 5]):
        path = tmp_path / f"{number}" / "events.jsonl"
        path.parent.mkdir()
        path.write_bytes(b"x" * size)
        logs.append(LogFile(path, str(number)))
    groups = list(_groups(logs))
    assert [log for group in groups for log in group] == logs  # all, once, in order
    assert [len(group) for group in groups] == [2, 2, 2]  # cut once a run reaches 1 MiB


_HALF_A_RESULT = """
import struct
from otel_bridge.feed._parallel import Workers

workers = Workers(2)
pool = workers.pool
pool.submit(int).result(timeout=30)  # the workers and the executor's manager thread run
manager = pool._executor_manager_thread
# What a worker ended in the middle of sending a result leaves in the result pipe: a message's
# length, and less than that (multiprocessing.connection: a 4-byte length, then the bytes).
pool._result_queue._writer._send(struct.pack("!i", 1000) + b"x" * 10)
workers.stop()
print("manager alive" if manager.is_alive() else "manager gone")
"""


def test_stopped_workers_never_leave_the_pool_reading_half_a_result() -> None:
    """A worker ended while it sent its result (Ctrl-C, SIGTERM) must not leave the executor's
    manager thread waiting for the rest for ever: the interpreter joins it at exit, so the
    process would never end. In a process of its own, ended within a minute."""
    done = subprocess.run(
        [sys.executable, "-c", _HALF_A_RESULT],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "manager gone", done.stderr
    assert done.returncode == 0, done.stderr
    assert "Exception" not in done.stderr and "Traceback" not in done.stderr
