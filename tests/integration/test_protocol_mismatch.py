"""The gRPC port given with the http/protobuf protocol, or the reverse: both accept the
connection, so replay waited its export timeout (30 s) and then said BadStatusLine. Now the
start says what to set, and doctor says the same."""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from otel_bridge.export import REFUSED_ENDPOINT, otlp_endpoint, probe_otlp, protocol_mismatch
from tests import paths
from tests.otlp_receiver import OtlpReceiver
from tests.processes import bridge_env

LOG = paths.FIXTURES / "run1_cli_prompt_basic" / "events.jsonl"


def _bridge(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otel_bridge", *args],
        env=bridge_env({"PYTHONPATH": str(paths.REPO), **env}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _cases(receiver: OtlpReceiver) -> list[tuple[str, str, str]]:
    """(protocol, endpoint of the other protocol's port, what to say)."""
    grpc_port = urlsplit(receiver.grpc_endpoint).port
    http_port = urlsplit(receiver.http_endpoint).port
    return [
        (
            "http/protobuf",
            f"http://127.0.0.1:{grpc_port}",
            f"{grpc_port} answers gRPC (HTTP/2), not OTLP/HTTP: set "
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc, or use port 4318",
        ),
        (
            "grpc",
            f"http://127.0.0.1:{http_port}",
            f"{http_port} answers HTTP/1, not gRPC: set "
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, or use port 4317",
        ),
    ]


@pytest.mark.parametrize("case", [0, 1])
def test_replay_says_what_to_set_before_it_exports(otlp_receiver: OtlpReceiver, case: int) -> None:
    protocol, endpoint, said = _cases(otlp_receiver)[case]
    result = _bridge(
        "replay",
        str(LOG),
        "--no-progress",
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"OTLP endpoint {endpoint} ({protocol}): {said}" in lines[0]
    assert otlp_receiver.spans() == []


@pytest.mark.parametrize("case", [0, 1])
def test_doctor_says_the_same(otlp_receiver: OtlpReceiver, case: int) -> None:
    protocol, endpoint, said = _cases(otlp_receiver)[case]
    result = _bridge(
        "doctor",
        "--no-prometheus",
        "--no-checkpoints",
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
        OTEL_METRICS_EXPORTER="none",
    )
    assert result.returncode == 1
    assert f"[!!] exporter otlp at {endpoint} ({protocol}): {said}" in result.stdout


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_the_right_port_is_no_mismatch(otlp_receiver: OtlpReceiver, protocol: str) -> None:
    endpoint = otlp_receiver.grpc_endpoint if protocol == "grpc" else otlp_receiver.http_endpoint
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
    assert protocol_mismatch(otlp_endpoint(environ, "traces")) is None


@pytest.mark.parametrize("case", [0, 1])
def test_an_export_to_the_other_protocol_s_port_is_refused_with_what_to_set(
    otlp_receiver: OtlpReceiver, case: int
) -> None:
    """Past the start (a collector restarted with its ports swapped), the failed export itself
    says what to set, and is taken as an endpoint that refuses every request: not retried as
    if the collector were busy, nor waited on at a stop."""
    protocol, endpoint, _ = _cases(otlp_receiver)[case]
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
    failure = probe_otlp(environ, "traces", timeout=2.0)
    assert failure is not None and failure.refused == REFUSED_ENDPOINT
    other = "grpc" if protocol == "http/protobuf" else "http/protobuf"
    assert f"set OTEL_EXPORTER_OTLP_PROTOCOL={other}" in failure.reason
