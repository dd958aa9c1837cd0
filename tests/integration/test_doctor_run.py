"""`doctor` checks what `run` meets on the machine the way `run` meets it: a log it cannot
read, a port in use, a state directory another run holds, an endpoint that takes no metrics.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import paths
from tests.corpus import session_state
from tests.otlp_receiver import OtlpReceiver
from tests.processes import bridge_env, start_bridge, terminate

ROOT = paths.REPO


def environment(**extra: str) -> dict[str, str]:
    return bridge_env({"PYTHONPATH": str(ROOT), "OTEL_TRACES_EXPORTER": "console", **extra})


def as_a_user(command: list[str]) -> list[str]:
    """`command` run by a user whom file permissions bind: root reads a file of mode 000, so
    as root it runs in a user namespace (util-linux `unshare`) as uid 1000, mapped to root:
    files root owns are that user's, and their owner's permission bits apply to it."""
    if os.geteuid() != 0:
        return command
    unshare = shutil.which("unshare")
    assert unshare is not None, "as root, this test needs util-linux's unshare"
    return [unshare, "--user", "--map-user=1000", "--map-group=1000", *command]


def doctor(*args: str, user: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "otel_bridge", "doctor", *args]
    return subprocess.run(
        as_a_user(command) if user else command,
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def marked(stdout: str, mark: str) -> list[str]:
    return [line.strip() for line in stdout.splitlines() if line.strip().startswith(f"[{mark}]")]


def test_a_log_run_cannot_read_is_a_failure(tmp_path: Path) -> None:
    state = session_state(tmp_path / "session-state")
    logs = sorted(state.glob("*/events.jsonl"))
    logs[0].chmod(0)
    try:
        result = doctor(
            "--session-state", str(state), "--no-prometheus", "--no-checkpoints", user=True
        )
    finally:
        logs[0].chmod(0o644)
    assert result.returncode == 1, result.stdout
    (failure,) = marked(result.stdout, "!!")
    assert f"1 of {len(logs)} session logs cannot be read" in failure
    assert f"{logs[0].parent.name}: Permission denied" in failure
    assert "its owner can make it readable" in failure
    assert f"[ok] {state}: {len(logs) - 1} session logs" in result.stdout


def test_a_log_run_refuses_is_a_failure(tmp_path: Path) -> None:
    state = session_state(tmp_path / "session-state")
    fifo = state / "fifo-session" / "events.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    result = doctor("--session-state", str(state), "--no-prometheus", "--no-checkpoints")
    assert result.returncode == 1, result.stdout
    (failure,) = marked(result.stdout, "!!")
    assert "fifo-session: not a regular file (a FIFO)" in failure
    assert "Permission" not in failure and "owner" not in failure


def test_a_port_in_use_is_a_failure(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = doctor(
            "--session-state", str(tmp_path), "--no-checkpoints", "--prometheus-port", str(port)
        )
        free = doctor(
            "--session-state", str(tmp_path), "--no-checkpoints", "--prometheus-port", "0"
        )
    assert result.returncode == 1, result.stdout
    (failure,) = marked(result.stdout, "!!")
    assert f"run cannot serve /metrics on 127.0.0.1:{port}: the port is in use" in failure
    assert free.returncode == 0 and not marked(free.stdout, "!!"), free.stdout


def test_a_running_run_is_named_and_its_port_is_no_failure(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    state_dir = tmp_path / "bridge-state"  # beside the watched directory: never inside it
    sessions = tmp_path / "session-state"
    sessions.mkdir()
    log = tmp_path / "run.log"
    run = start_bridge(
        [
            *("run", "--session-state", str(sessions), "--state-dir", str(state_dir)),
            *("--prometheus-port", str(port)),
        ],
        env=environment(),
        log=log,
    )
    try:
        deadline = time.monotonic() + 30
        while "following" not in log.read_text():
            assert run.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        result = doctor(
            "--session-state",
            str(sessions),
            "--state-dir",
            str(state_dir),
            "--prometheus-port",
            str(port),
        )
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=30)
    finally:
        terminate(run)
    assert result.returncode == 0, result.stdout
    state, served = marked(result.stdout, "warn")
    assert f"state directory {state_dir}: a run is using it (pid {run.pid} on " in state
    assert "presumably by the run above" in served
    assert not (state_dir / "run.lock").read_text().startswith(f"pid {os.getpid()}")


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_an_endpoint_that_takes_no_metrics_is_caught(tmp_path: Path, protocol: str) -> None:
    with OtlpReceiver(signals=("traces",)) as jaeger_like:
        endpoint = jaeger_like.grpc_endpoint if protocol == "grpc" else jaeger_like.http_endpoint
        result = doctor(
            "--session-state",
            str(tmp_path),
            "--no-checkpoints",
            "--no-prometheus",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
            OTEL_TRACES_EXPORTER="otlp",
        )
        prometheus_only = doctor(
            "--session-state",
            str(tmp_path),
            "--no-checkpoints",
            "--no-prometheus",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_METRICS_EXPORTER="prometheus",
        )
    assert result.returncode == 1, result.stdout
    assert "[ok] exporter otlp at " in result.stdout and "reachable, takes traces" in (
        result.stdout
    )
    (failure,) = marked(result.stdout, "!!")
    assert failure.startswith("[!!] metrics otlp at ")
    assert ("(HTTP 404 Not Found)" if protocol != "grpc" else "(UNIMPLEMENTED") in failure
    assert "OTEL_METRICS_EXPORTER=prometheus" in failure
    assert prometheus_only.returncode == 0, prometheus_only.stdout  # what it said to do works


def test_doctor_catches_the_readme_s_collector_command_pointed_at_jaeger(tmp_path: Path) -> None:
    """The real thing: Jaeger's OTLP port takes traces and answers 404 to metrics."""
    from tests.goparts import Jaeger, jaeger_binary

    jaeger_binary()  # skip, saying how to build it, when it is not built
    (tmp_path / "jaeger").mkdir()
    with Jaeger(tmp_path / "jaeger") as jaeger:
        result = doctor(
            "--session-state",
            str(tmp_path),
            "--no-checkpoints",
            "--no-prometheus",
            OTEL_EXPORTER_OTLP_ENDPOINT=jaeger.otlp_http_url,
            OTEL_TRACES_EXPORTER="otlp",
        )
    assert result.returncode == 1, result.stdout
    assert "reachable, takes traces" in result.stdout
    (failure,) = marked(result.stdout, "!!")
    assert failure.startswith("[!!] metrics otlp at ") and "HTTP 404" in failure
    assert "OTEL_METRICS_EXPORTER=prometheus" in failure


def _lines(stderr: str) -> list[str]:
    """The log lines, without their times."""
    return [line.split(" ", 2)[2] for line in stderr.splitlines() if line[:2] == "20"]


def test_replay_says_each_thing_once(tmp_path: Path) -> None:
    """An unreadable log and spans a collector refuses: each said in one line, then counted in
    the summary, not listed again."""
    state = session_state(tmp_path / "session-state")
    logs = sorted(state.glob("*/events.jsonl"))
    logs[0].chmod(0)
    with OtlpReceiver() as receiver:
        receiver.mode = "not_found"
        command = [sys.executable, "-m", "otel_bridge", "replay", str(state), "--no-progress"]
        try:
            result = subprocess.run(
                as_a_user([*command, "--export-timeout", "0"]),
                env=environment(
                    OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint, OTEL_TRACES_EXPORTER="otlp"
                ),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        finally:
            logs[0].chmod(0o644)
    assert result.returncode == 1, result.stderr
    lines = _lines(result.stderr)
    assert len(lines) == len(set(lines)), result.stderr
    assert sum(str(logs[0]) in line for line in lines) == 1, result.stderr
    assert sum("not delivered" in line or "could not be exported" in line for line in lines) == 2
    (summary,) = [line for line in lines if "replayed" in line]
    assert f"replayed {len(logs)} logs (1 could not be read)" in summary
    assert "could not be exported" in summary
