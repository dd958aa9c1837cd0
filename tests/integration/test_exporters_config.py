"""Exporters that do what they say, checked on real processes: `otel-bridge replay`, `run` and
`doctor` started with `python -m otel_bridge`, against the real OTLP receiver of
tests/otlp_receiver.py when it is up, a port nothing listens on when it is down, and variables
that make no endpoint.

What a user sees: every configured destination gets every span and the summary counts each span
once; a collector that is down is one line that names it (not a minute of SDK retries); a bad
endpoint is exit status 2; Ctrl-C says how long it will try and a second one quits at once
without losing anything; OTEL_SDK_DISABLED is honoured; doctor warns about the Copilot CLI's
own copy of the traces and recognises a log file given as a directory.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_bridge import ConfigError
from otel_bridge.sources import LiveBridge
from tests import paths
from tests.otlp_receiver import OtlpReceiver
from tests.processes import bridge_env, log_tail, start_bridge, terminate

FIXTURES = paths.FIXTURES
BASIC = FIXTURES / "run1_cli_prompt_basic" / "events.jsonl"  # one task, 6 spans
BASIC_SPANS = 6
#: What the SDK exporters and urllib3 log while retrying; none of it may reach the terminal.
SDK_CHATTER = (
    "opentelemetry.exporter",
    "urllib3",
    "Transient error",
    "Traceback",
    "Failed to export",
)


def environment(**extra: str) -> dict[str, str]:
    """The test's environment without the developer's OTEL_* and COPILOT_* settings."""
    return bridge_env(extra)


def bridge(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "otel_bridge", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def dead_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def basic_session_state(tmp_path: Path) -> Path:
    state = tmp_path / "session-state"
    (state / "s1").mkdir(parents=True)
    (state / "s1" / "events.jsonl").write_bytes(BASIC.read_bytes())
    return state


def file_span_ids(path: Path) -> list[str]:
    """Span ids (hex, as the OTLP file exporter writes them) of an OTLP JSON Lines file."""
    return [
        span["spanId"]
        for line in path.read_text().splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]


def expected_span_ids() -> set[str]:
    from tests.spantree import assemble_file

    return {f"{span.span_id:016x}" for span in assemble_file(BASIC)}


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for(predicate, timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n" + (log_tail(log) if log else ""))


class RunningBridge:
    """`otel-bridge run` in the background, stderr to a file that the test can read as it
    grows, /readyz on a free port."""

    def __init__(self, tmp_path: Path, state: Path, env: dict[str, str], *extra: str) -> None:
        self.log = tmp_path / f"bridge-{time.monotonic_ns()}.log"
        self.port = dead_port()
        self.state_dir = tmp_path / "bridge-state"
        self.process = start_bridge(
            [
                "run",
                "--session-state",
                str(state),
                "--state-dir",
                str(self.state_dir),
                "--prometheus-port",
                str(self.port),
                "--poll-interval",
                "0.1",
                "--rescan-interval",
                "0.3",
                *extra,
            ],
            env=env,
            log=self.log,
            sigint="default",  # the Ctrl-C tests' SIGINT must reach it however pytest started
            text=True,
        )

    @property
    def stderr(self) -> str:
        return self.log.read_text()

    def wait_ready(self) -> None:
        """/readyz answers 200 once every log was read to its end (and nothing failed long)."""

        def ready() -> bool:
            try:
                return http_get(f"http://127.0.0.1:{self.port}/readyz")[0] == 200
            except OSError:
                return False

        wait_for(ready, 30, "the bridge to be ready", self.log)

    def close(self) -> None:
        terminate(self.process)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[list[RunningBridge]]:
    """Bridges a test starts; stopped (SIGTERM, then SIGKILL) whatever happens."""
    started: list[RunningBridge] = []
    yield started
    for item in started:
        item.close()


# --- every destination gets every span, counted once ---------------------------------------


@pytest.mark.parametrize(
    ("protocol", "traces_exporter"),
    [("http/protobuf", None), ("http/protobuf", "otlp"), ("grpc", None)],
)
def test_an_endpoint_and_a_traces_file_each_get_every_span_counted_once(
    protocol, traces_exporter, otlp_receiver, tmp_path
) -> None:
    endpoint = otlp_receiver.grpc_endpoint if protocol == "grpc" else otlp_receiver.http_endpoint
    env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_PROTOCOL=protocol)
    if traces_exporter:
        env["OTEL_TRACES_EXPORTER"] = traces_exporter
    out = tmp_path / "traces.jsonl"
    result = bridge("replay", str(BASIC), "--traces-file", str(out), "--no-progress", env=env)
    assert result.returncode == 0, result.stderr
    received = otlp_receiver.wait_for_spans(BASIC_SPANS, timeout=10)
    expected = expected_span_ids()
    assert sorted(s["span_id"] for s in received) == sorted(expected)  # each once, over OTLP
    assert sorted(file_span_ids(out)) == sorted(expected)  # and in FILE
    assert f"{BASIC_SPANS} spans exported" in result.stderr
    assert f"{2 * BASIC_SPANS} spans" not in result.stderr
    assert (
        f"to each of 2 destinations; otlp {endpoint} ({protocol}): {BASIC_SPANS}, "
        f"file {out}: {BASIC_SPANS}" in result.stderr
    )


def test_run_sends_to_the_endpoint_and_appends_to_the_traces_file(
    otlp_receiver, tmp_path, running
) -> None:
    state = basic_session_state(tmp_path)
    out = tmp_path / "run-traces.jsonl"
    env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.http_endpoint)
    running.append(RunningBridge(tmp_path, state, env, "--traces-file", str(out)))
    received = otlp_receiver.wait_for_spans(BASIC_SPANS, timeout=30)
    running[0].close()  # SIGTERM: what is queued for the file is written first
    assert running[0].process.returncode == 0, running[0].stderr
    assert {s["span_id"] for s in received} == expected_span_ids()
    assert sorted(file_span_ids(out)) == sorted(expected_span_ids())
    assert f"{BASIC_SPANS} spans exported (to each of 2 destinations" in running[0].stderr


# --- a collector that is down, an endpoint that is not one -----------------------------------


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_replay_to_a_collector_that_is_down_says_so_in_one_line(protocol, tmp_path) -> None:
    endpoint = f"http://127.0.0.1:{dead_port()}"
    out = tmp_path / "traces.jsonl"
    out.write_text("an earlier replay\n")
    env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_PROTOCOL=protocol)
    result = bridge("replay", str(BASIC), "--traces-file", str(out), "--no-progress", env=env)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"OTLP endpoint {endpoint} ({protocol}) refused the connection" in lines[0]
    assert "otel-bridge doctor" in lines[0]
    for chatter in SDK_CHATTER:
        assert chatter not in result.stderr
    assert out.read_text() == "an earlier replay\n"  # not overwritten by a replay that did not go


@pytest.mark.parametrize(
    ("variable", "value", "protocol"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "not-a-url", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318", "http/protobuf"),  # http needs a URL
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://:4318", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector:4318", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:99999", "grpc"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector", "grpc"),
    ],
)
def test_an_endpoint_that_is_not_one_is_a_configuration_error(
    variable, value, protocol, tmp_path
) -> None:
    env = environment(
        **{variable: value, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol, "OTEL_TRACES_EXPORTER": "otlp"}
    )
    result = bridge("replay", str(BASIC), "--no-progress", env=env, timeout=60)
    assert result.returncode == 2, result.stderr
    assert f"{variable}={value!r}" in result.stderr
    assert "http://" in result.stderr  # says what is expected
    assert "Traceback" not in result.stderr


def test_run_refuses_a_bad_endpoint_before_it_starts(tmp_path) -> None:
    state = basic_session_state(tmp_path)
    env = environment(OTEL_EXPORTER_OTLP_ENDPOINT="not-a-url")
    result = bridge(
        "run",
        "--session-state",
        str(state),
        "--state-dir",
        str(tmp_path / "bridge-state"),
        "--prometheus-port",
        "0",
        env=env,
        timeout=60,
    )
    assert result.returncode == 2
    assert "OTEL_EXPORTER_OTLP_ENDPOINT='not-a-url'" in result.stderr
    assert "serving" not in result.stderr  # refused before a port was bound


def test_grpc_takes_host_and_port_without_a_scheme(otlp_receiver) -> None:
    host_port = otlp_receiver.grpc_endpoint.removeprefix("http://")
    env = environment(
        OTEL_EXPORTER_OTLP_ENDPOINT=host_port,
        OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
        OTEL_EXPORTER_OTLP_INSECURE="true",
    )
    result = bridge("replay", str(BASIC), "--no-progress", env=env)
    assert result.returncode == 0, result.stderr
    assert len(otlp_receiver.wait_for_spans(BASIC_SPANS)) == BASIC_SPANS


def test_run_keeps_the_sdk_retry_chatter_off_the_terminal_and_counts_it(
    otlp_receiver, tmp_path, running
) -> None:
    state = basic_session_state(tmp_path)
    otlp_receiver.mode = "unavailable"  # 503, as a collector that is overloaded or restarting
    env = environment(
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.http_endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="1"
    )
    run = RunningBridge(tmp_path, state, env, "--metrics-interval", "0.5")
    running.append(run)
    wait_for(lambda: otlp_receiver.refused_requests >= 4, 30, "refused attempts", run.log)
    otlp_receiver.mode = "ok"
    received = otlp_receiver.wait_for_spans(BASIC_SPANS, timeout=40)
    wait_for(lambda: "exporting again" in run.stderr, 20, "the recovery line", run.log)
    _, metrics = http_get(f"http://127.0.0.1:{run.port}/metrics")
    run.close()
    stderr = run.stderr
    assert {s["span_id"] for s in received} == expected_span_ids()
    label = f"otlp {otlp_receiver.http_endpoint} (http/protobuf)"
    failed = [line for line in stderr.splitlines() if f"{label}: export failed (" in line]
    assert len(failed) == 1, stderr  # one warning for the outage...
    assert "503" in failed[0] or "Service Unavailable" in failed[0]  # ...that says why
    assert stderr.count(f"{label}: exporting again") == 1  # and one line when it is over
    for chatter in SDK_CHATTER:
        assert chatter not in stderr
    failures = [
        line
        for line in metrics.splitlines()
        if line.startswith("otel_bridge_export_failures_total{")
        and 'otel_bridge_exporter="OTLPSpanExporter"' in line
    ]
    # counted, not printed: at least once (how many refused requests one failed export() makes
    # is the SDK's own retry policy, which differs between SDK releases)
    assert failures and float(failures[0].rsplit(" ", 1)[1]) >= 1


# --- Ctrl-C ----------------------------------------------------------------------------------


def test_ctrl_c_while_the_collector_is_down_says_how_long_and_a_second_one_quits(
    tmp_path, running
) -> None:
    state = basic_session_state(tmp_path)
    endpoint = f"http://127.0.0.1:{dead_port()}"
    run = RunningBridge(
        tmp_path,
        state,
        environment(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="1"),
        "--export-timeout",
        "120",
    )
    running.append(run)
    # the log was read, and its spans are queued for a collector that is down
    wait_for(lambda: "export failed" in run.stderr, 30, "the first failed export", run.log)
    assert "refused the connection" in run.stderr  # said at start, and run went on
    assert "export failed (Connection refused)" in run.stderr  # and why it fails
    run.process.send_signal(signal.SIGINT)
    wait_for(lambda: "received SIGINT" in run.stderr, 20, "the first Ctrl-C", run.log)
    first = next(line for line in run.stderr.splitlines() if "received SIGINT" in line)
    assert f"delivering {BASIC_SPANS} spans queued for up to 120 s" in first
    assert "Ctrl-C again to quit now" in first
    time.sleep(0.5)
    assert run.process.poll() is None  # still trying to deliver: 120 s were promised
    run.process.send_signal(signal.SIGINT)
    assert run.process.wait(timeout=20) == 130, run.stderr  # well before the 120 s
    stderr = run.stderr
    assert "received SIGINT again: quitting now" in stderr
    for chatter in SDK_CHATTER:
        assert chatter not in stderr
    # Nothing is lost: the checkpoint stayed before the spans, a restart sends them all.
    with OtlpReceiver() as receiver:
        again = RunningBridge(
            tmp_path, state, environment(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint)
        )
        running.append(again)
        received = receiver.wait_for_spans(BASIC_SPANS, timeout=30)
        again.close()
    assert {s["span_id"] for s in received} == expected_span_ids()


# --- OTEL_SDK_DISABLED -----------------------------------------------------------------------


def test_sdk_disabled_replay_exports_nothing_and_says_so(otlp_receiver, tmp_path) -> None:
    out = tmp_path / "traces.jsonl"
    env = environment(
        OTEL_SDK_DISABLED="true", OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.http_endpoint
    )
    result = bridge(
        "replay",
        str(BASIC),
        "--traces-file",
        str(out),
        "--no-progress",
        "--metrics-file",
        str(tmp_path / "metrics.jsonl"),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if "OTEL_SDK_DISABLED" in line]
    assert len(notices) == 1
    assert result.stdout == ""
    assert not out.exists() and not (tmp_path / "metrics.jsonl").exists()
    assert otlp_receiver.requests() == []


def test_sdk_disabled_run_exports_nothing_and_leaves_checkpoints_alone(
    otlp_receiver, tmp_path, running
) -> None:
    state = basic_session_state(tmp_path)
    env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.http_endpoint)
    off = RunningBridge(tmp_path, state, {**env, "OTEL_SDK_DISABLED": "true"})
    running.append(off)
    off.wait_ready()  # the probes still answer
    status, metrics = http_get(f"http://127.0.0.1:{off.port}/metrics")
    off.close()
    assert status == 200
    assert off.process.returncode == 0, off.stderr
    assert "copilot_tasks" not in metrics  # no metrics of the bridge's
    assert otlp_receiver.requests() == []
    assert not list(off.state_dir.glob("checkpoints.*"))
    assert (
        sum("OTEL_SDK_DISABLED" in line for line in off.stderr.splitlines() if "WARNING" in line)
        == 1
    )
    # Enabled again, the same logs are exported: nothing was skipped while it was off.
    on = RunningBridge(tmp_path, state, env)
    running.append(on)
    received = otlp_receiver.wait_for_spans(BASIC_SPANS, timeout=30)
    assert {s["span_id"] for s in received} == expected_span_ids()


def test_sdk_disabled_live_bridge_exports_nothing(otlp_receiver, caplog) -> None:
    events = [json.loads(line) for line in BASIC.read_text().splitlines()]
    live = LiveBridge(
        environ={
            "OTEL_SDK_DISABLED": "TRUE",
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint,
        }
    )
    for event in events:
        live.on_event(event, "s1")
    live.close()
    assert live.assembler.stats.interactions == 1  # it did read them
    assert otlp_receiver.requests() == []
    assert "OTEL_SDK_DISABLED=true: LiveBridge exports no spans" in caplog.text


def test_live_bridge_refuses_a_bad_endpoint() -> None:
    with pytest.raises(ConfigError, match="OTEL_EXPORTER_OTLP_ENDPOINT='not-a-url'"):
        LiveBridge(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "not-a-url"})


# --- doctor ----------------------------------------------------------------------------------


def doctor(*args: str, **env: str) -> subprocess.CompletedProcess:
    """doctor about the exporters only: whether port 9464 is free and who uses the default
    state directory are the machine's business, not the test's."""
    return bridge(
        "doctor",
        "--session-state",
        str(FIXTURES),
        "--no-prometheus",
        "--no-checkpoints",
        *args,
        env=environment(**env),
        timeout=60,
    )


@pytest.mark.parametrize(
    "variables",
    [
        {"COPILOT_OTEL_ENABLED": "true"},
        {"COPILOT_OTEL_FILE_EXPORTER_PATH": "/tmp/copilot-otel.jsonl"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "RECEIVER"},
    ],
)
def test_doctor_warns_that_the_cli_would_export_its_own_copy(variables, otlp_receiver) -> None:
    env = {k: otlp_receiver.http_endpoint if v == "RECEIVER" else v for k, v in variables.items()}
    result = doctor(**env)
    assert result.returncode == 0, result.stdout  # a warning, not a failure
    warnings = [line for line in result.stdout.splitlines() if "[warn]" in line]
    assert len(warnings) == 1, result.stdout
    assert next(iter(variables)) in warnings[0]
    assert "two differently shaped copies" in warnings[0]
    assert "OTEL_SERVICE_NAME=otel-bridge" in warnings[0]


def test_doctor_does_not_warn_when_the_cli_would_export_nothing(otlp_receiver) -> None:
    result = doctor(
        "--traces-file",
        "/tmp/never-written.jsonl",
        COPILOT_OTEL_ENABLED="false",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=otlp_receiver.http_endpoint + "/v1/traces",
    )
    assert result.returncode == 0, result.stdout
    assert "[warn]" not in result.stdout
    assert "reachable" in result.stdout and "traces file" in result.stdout


def test_doctor_recognises_a_log_file_and_a_session_directory() -> None:
    result = bridge(
        "doctor",
        "--session-state",
        str(BASIC),
        "--session-state",
        str(BASIC.parent),
        env=environment(),
        timeout=60,
    )
    assert result.returncode == 1
    assert "does not exist" not in result.stdout
    assert f"{BASIC} is a file: pass the session-state directory" in result.stdout
    assert f"`otel-bridge replay {BASIC}`" in result.stdout
    assert f"{BASIC.parent} is one session's directory" in result.stdout
    assert f"--session-state {FIXTURES}" in result.stdout


def test_doctor_reports_an_endpoint_that_is_not_one() -> None:
    result = doctor(OTEL_EXPORTER_OTLP_ENDPOINT="not-a-url")
    assert result.returncode == 1
    errors = [line for line in result.stdout.splitlines() if "[!!]" in line]
    assert len(errors) == 1 and "'not-a-url' is not a usable OTLP endpoint" in errors[0]


def test_doctor_says_when_the_sdk_is_disabled() -> None:
    result = doctor(OTEL_SDK_DISABLED="true")
    assert result.returncode == 0
    assert "[warn] OTEL_SDK_DISABLED=true" in result.stdout


def test_doctor_reports_a_signal_endpoint_without_its_path(otlp_receiver) -> None:
    result = doctor(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=otlp_receiver.http_endpoint)
    assert result.returncode == 1, result.stdout  # its empty export was refused: 404
    (line,) = [line for line in result.stdout.splitlines() if "[!!]" in line]
    assert "(HTTP 404 Not Found)" in line
    assert f"did you mean {otlp_receiver.http_endpoint}/v1/traces?" in line
    # and what it says is so: spans sent there do not arrive
    env = environment(
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=otlp_receiver.http_endpoint,
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="1",
    )
    replay = bridge("replay", str(BASIC), "--no-progress", "--export-timeout", "2", env=env)
    assert replay.returncode == 1
    assert otlp_receiver.spans() == [] and otlp_receiver.errors()  # a 404 at the root
