"""`otel-bridge run` end to end: a real process follows growing session logs and sends spans to a
real OTLP receiver (tests/otlp_receiver.py decodes the protobuf), over gRPC and HTTP."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests import paths, processes
from tests.spantree import assemble_file

FIXTURES = paths.FIXTURES
SESSIONS = {  # directory name -> capture: a plain session and one with parallel sub-agents
    "d3ebfa08-de8a-4b43-93da-591db8061cb6": FIXTURES / "run1_cli_prompt_basic" / "events.jsonl",
    "218f9283-f314-4dd7-a5a9-14e9c357e003": FIXTURES / "subagent_parallel" / "events.jsonl",
}


def append_line_by_line(source: Path, target: Path, pause: float) -> None:
    """Write a real log the way the CLI does: one event at a time, sometimes in two pieces."""
    target.parent.mkdir(parents=True)
    with target.open("ab") as handle:
        for number, line in enumerate(source.read_bytes().splitlines(keepends=True)):
            if number % 3 == 0:  # a half-written line must wait for its newline
                handle.write(line[: len(line) // 2])
                handle.flush()
                time.sleep(pause)
                handle.write(line[len(line) // 2 :])
            else:
                handle.write(line)
            handle.flush()
            time.sleep(pause)


def start_bridge(state: Path, env_extra: dict[str, str], *more: str) -> subprocess.Popen:
    """`run` on `state`, its checkpoints beside it; `more` options come last (and win)."""
    return processes.start_bridge(
        [
            "run",
            "--session-state",
            str(state),
            "--poll-interval",
            "0.1",
            "--rescan-interval",
            "0.3",
            "--prometheus-port",
            "0",
            # OTLP metrics often, when they go anywhere but to Prometheus (which is scraped)
            *(["--metrics-interval", "0.5"] if "OTEL_EXPORTER_OTLP_ENDPOINT" in env_extra else []),
            "--state-dir",
            str(state.parent / "bridge-state"),
            *more,
        ],
        env=processes.bridge_env(env_extra),
        stdout=subprocess.PIPE,
        text=True,
    )


def stop_bridge(process: subprocess.Popen) -> tuple[int, str, str]:
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=20)
    return process.returncode, stdout, stderr


def expected_spans() -> dict[str, dict]:
    """What a replay of the same logs gives, keyed by span id (hex)."""
    out = {}
    for source in SESSIONS.values():
        for span in assemble_file(source):
            out[f"{span.span_id:016x}"] = {
                "trace_id": f"{span.trace_id:032x}",
                "name": span.name,
                "parent_span_id": f"{span.parent_span_id:016x}" if span.parent_span_id else "",
                "start": span.start_ns,
                "end": span.end_ns,
            }
    return out


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_run_follows_growing_logs_and_exports_over_otlp(protocol, otlp_receiver, tmp_path) -> None:
    state = tmp_path / "session-state"
    state.mkdir()
    (state / ".session-operation-locks").mkdir()  # the CLI keeps this beside the sessions
    endpoint = otlp_receiver.grpc_endpoint if protocol == "grpc" else otlp_receiver.http_endpoint
    bridge = start_bridge(
        state,
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_SERVICE_NAME": "itest",
        },
    )
    try:
        time.sleep(1.0)  # let it start watching before the sessions appear
        writers = [
            threading.Thread(
                target=append_line_by_line, args=(source, state / name / "events.jsonl", 0.01)
            )
            for name, source in SESSIONS.items()
        ]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        expected = expected_spans()
        received = otlp_receiver.wait_for_spans(len(expected), timeout=30)
    finally:
        code, _, stderr = stop_bridge(bridge)
    assert code == 0, stderr
    assert "Traceback" not in stderr
    got = {s["span_id"]: s for s in received}
    assert len(received) == len(got) == len(expected)  # nothing lost, nothing doubled
    for span_id, want in expected.items():
        span = got[span_id]
        assert span["name"] == want["name"]
        assert span["trace_id"] == want["trace_id"]
        assert span["parent_span_id"] == want["parent_span_id"]
        assert (span["start_time_unix_nano"], span["end_time_unix_nano"]) == (
            want["start"],
            want["end"],
        )
        assert span["resource"]["service.name"] == "itest"
        assert span["protocol"] == ("grpc" if protocol == "grpc" else "http")
    names = sorted(s["name"] for s in received)
    # independent of the assembler: what the two raw logs hold
    raw = [
        json.loads(line) for source in SESSIONS.values() for line in source.read_text().splitlines()
    ]
    assert names.count("execute_tool task") == 2
    assert sum(n == "turn" for n in names) == sum(e["type"] == "assistant.turn_start" for e in raw)
    assert sum(n.startswith("chat ") for n in names) == sum(
        e["type"] == "session.usage_record" for e in raw
    )
    assert names.count("invoke_agent copilot") == 2
    # metrics go the same way as the spans when an OTLP endpoint is set
    main_turns = sum(e["type"] == "assistant.turn_start" and "agentId" not in e for e in raw)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        latest = {}
        for point in otlp_receiver.metrics():  # cumulative: the last point of a series wins
            latest[(point["name"], json.dumps(point["attributes"], sort_keys=True))] = point
        per_message = [p for (n, _), p in latest.items() if n == "copilot.turns_per_message"]
        if sum(p["count"] for p in per_message) == 2:
            break
        time.sleep(0.2)
    assert sum(p["count"] for p in per_message) == 2
    assert sum(p["sum"] for p in per_message) == main_turns


def test_run_with_nothing_configured_prints_spans_and_stops_cleanly(tmp_path) -> None:
    state = tmp_path / "session-state"
    session = state / "s1"
    session.mkdir(parents=True)
    (session / "events.jsonl").write_bytes(
        (FIXTURES / "run1_cli_prompt_basic" / "events.jsonl").read_bytes()
    )
    bridge = start_bridge(state, {})
    time.sleep(1.5)  # the log is older than nothing: caught up at start, then idle
    code, stdout, stderr = stop_bridge(bridge)
    assert code == 0, stderr
    spans = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    assert sorted(s["name"] for s in spans) == sorted(
        [
            "invoke_agent copilot",
            "turn",
            "turn",
            "chat gpt-4.1",
            "chat gpt-4.1",
            "execute_tool bash",
        ]
    )
    assert "received SIGTERM" in stderr


def test_run_reports_a_missing_state_directory_and_picks_it_up_later(
    tmp_path, otlp_receiver
) -> None:
    state = tmp_path / "not-yet"
    bridge = start_bridge(state, {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint})
    assert bridge.stderr is not None
    lines: list[str] = []  # read as it logs, so the directory is made only after it said so
    reader = threading.Thread(target=lambda: lines.extend(iter(bridge.stderr.readline, "")))
    reader.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any("does not exist yet" in x for x in lines):
            time.sleep(0.05)
        session = state / "later"
        session.mkdir(parents=True)
        (session / "events.jsonl").write_bytes(
            (FIXTURES / "run1_cli_prompt_basic" / "events.jsonl").read_bytes()
        )
        received = otlp_receiver.wait_for_spans(6, timeout=20)
    finally:
        bridge.send_signal(signal.SIGTERM)
        code = bridge.wait(timeout=20)
        reader.join(timeout=5)
        for pipe in (bridge.stdout, bridge.stderr):
            if pipe is not None:
                pipe.close()
    stderr = "".join(lines)
    assert code == 0
    assert stderr.index("does not exist yet") < stderr.index("later/events.jsonl"), stderr
    assert len(received) == 6


def test_spans_queued_while_the_collector_is_down_arrive_when_it_is_back(
    otlp_receiver, tmp_path
) -> None:
    state = tmp_path / "session-state"
    state.mkdir()
    otlp_receiver.mode = "unavailable"  # 503 with Retry-After, as a collector that is down
    bridge = start_bridge(
        state,
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint,
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
        },
    )
    try:
        for name, source in SESSIONS.items():
            (state / name).mkdir()
            (state / name / "events.jsonl").write_bytes(source.read_bytes())
        deadline = time.monotonic() + 20
        while otlp_receiver.refused_requests < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert otlp_receiver.refused_requests >= 2  # it really was refused, and retried
        assert otlp_receiver.spans() == []
        otlp_receiver.mode = "ok"
        expected = expected_spans()
        received = otlp_receiver.wait_for_spans(len(expected), timeout=40)
    finally:
        code, _, stderr = stop_bridge(bridge)
    assert code == 0, stderr
    assert sorted(s["span_id"] for s in received) == sorted(expected)  # each once
    # The bridge says so, once, when an export() call has failed; whether one does depends on
    # the SDK's own retries inside export() (SDK 1.44 retries a 503 until its timeout and may
    # get through there, so scripts/test_oldest.sh can see none).
    failed = [
        line for line in stderr.splitlines() if "_queue: " in line and "export failed" in line
    ]
    assert len(failed) <= 1 and all("retrying" in line for line in failed), stderr


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_health_and_readiness_probes_and_the_status_line(otlp_receiver, tmp_path) -> None:
    state = tmp_path / "session-state"
    (state / "s1").mkdir(parents=True)
    (state / "s1" / "events.jsonl").write_bytes(
        (FIXTURES / "run1_cli_prompt_basic" / "events.jsonl").read_bytes()
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    otlp_receiver.mode = "unavailable"
    env = processes.bridge_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint,
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
        }
    )
    bridge = processes.start_bridge(
        [
            "run",
            "--session-state",
            str(state),
            "--state-dir",
            str(tmp_path / "bridge-state"),
            "--prometheus-port",
            str(port),
            "--poll-interval",
            "0.1",
            "--unready-after",
            "1",
            "--status-interval",
            "0.5",
        ],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if _get(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        assert _get(f"{base}/healthz") == (200, "ok\n")
        deadline = time.monotonic() + 20
        seen = []  # not ready while starting and catching up, then ready, then the outage
        while time.monotonic() < deadline:
            code, body = _get(f"{base}/readyz")
            seen.append((code, json.loads(body)["reason"]))
            if code == 503 and "failing" in body:
                break
            time.sleep(0.1)
        assert code == 503 and "failing" in json.loads(body)["reason"], seen
        otlp_receiver.mode = "ok"
        otlp_receiver.wait_for_spans(6, timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _get(f"{base}/readyz")[0] != 200:
            time.sleep(0.2)
        assert _get(f"{base}/readyz") == (200, json.dumps({"ready": True, "reason": "ok"}) + "\n")
        assert "copilot_tasks_total" in _get(f"{base}/metrics")[1]
        assert _get(f"{base}/nope")[0] == 404
    finally:
        code, _, stderr = stop_bridge(bridge)
    assert code == 0, stderr
    assert "status: following 1 log (" in stderr


def test_a_checkpoint_that_cannot_be_saved_stops_nothing_and_is_reported(
    otlp_receiver, tmp_path
) -> None:
    """The state volume full or read-only: spans still go out, /readyz and the metrics say
    why, saving works again when it can, and a restart then repeats nothing."""
    state = tmp_path / "session-state"
    bridge_state = tmp_path / "bridge-state"
    # A directory where the journal and its temporary file go: every write fails, whoever
    # runs the test (root ignores file modes), as on a full disk or a read-only volume.
    (bridge_state / "checkpoints.jsonl").mkdir(parents=True)
    (bridge_state / "checkpoints.jsonl.tmp").mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def start() -> subprocess.Popen:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint}
        return start_bridge(state, env, "--prometheus-port", str(port))

    source = FIXTURES / "run1_cli_prompt_basic" / "events.jsonl"
    expected = len(assemble_file(source))
    (state / "s1").mkdir(parents=True)
    (state / "s1" / "events.jsonl").write_bytes(source.read_bytes())
    bridge = start()
    base = f"http://127.0.0.1:{port}"
    try:
        otlp_receiver.wait_for_spans(expected, timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                code, body = _get(f"{base}/readyz")
            except OSError:
                code, body = 0, ""
            if code == 503 and "checkpoints cannot be saved" in body:
                break
            time.sleep(0.1)
        assert code == 503 and "checkpoints cannot be saved" in body, body
        (failures,) = [
            float(line.rsplit(" ", 1)[1])
            for line in _get(f"{base}/metrics")[1].splitlines()
            if line.startswith("otel_bridge_checkpoint_failures_total")
        ]
        assert failures >= 1
        (bridge_state / "checkpoints.jsonl").rmdir()  # room again
        (bridge_state / "checkpoints.jsonl.tmp").rmdir()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _get(f"{base}/readyz")[0] != 200:
            time.sleep(0.2)
        assert _get(f"{base}/readyz")[0] == 200
    finally:
        code, _, stderr = stop_bridge(bridge)
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert sum("cannot write" in line for line in stderr.splitlines()) == 1  # said once
    assert "checkpoints saved again" in stderr
    received = len(otlp_receiver.spans())
    assert received == expected
    bridge = start()  # resumes from the checkpoint saved once there was room
    try:
        time.sleep(2)
    finally:
        code, _, stderr = stop_bridge(bridge)
    assert code == 0, stderr
    assert len(otlp_receiver.spans()) == received  # nothing exported again
