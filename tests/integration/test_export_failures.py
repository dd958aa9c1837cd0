"""What a refused export comes to (`export_failure`), through the real SDK exporters and a
real receiver: a permanent answer is told from a transient one, with the collector's
Retry-After; and OTLP metrics sent where nothing takes them say, once, what to set."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otel_bridge.export import probe_otlp
from otel_bridge.export._verdicts import REFUSED_ENDPOINT, REFUSED_REQUEST
from tests import paths
from tests.corpus import session_state
from tests.otlp_receiver import OtlpReceiver
from tests.processes import bridge_env, start_bridge, terminate

ROOT = paths.REPO


def _environ(receiver: OtlpReceiver, protocol: str) -> dict[str, str]:
    endpoint = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
@pytest.mark.parametrize(
    ("mode", "refused", "http", "grpc"),
    [
        ("bad_request", REFUSED_REQUEST, 400, "INVALID_ARGUMENT"),
        ("not_found", REFUSED_ENDPOINT, 404, "NOT_FOUND"),
        ("not_implemented", REFUSED_ENDPOINT, 501, "UNIMPLEMENTED"),
    ],
)
def test_a_permanent_refusal_is_said_so_and_sent_once(
    otlp_receiver: OtlpReceiver, protocol: str, mode: str, refused: str, http: int, grpc: str
) -> None:
    otlp_receiver.mode = mode  # type: ignore[assignment]
    failure = probe_otlp(_environ(otlp_receiver, protocol), "traces", timeout=5)
    assert failure is not None
    assert failure.refused == refused
    assert failure.status == (grpc if protocol == "grpc" else http)
    assert failure.retry_after is None
    # the SDK's exporter did not try it again: one request for one export
    assert otlp_receiver.refused_requests == 1


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
@pytest.mark.parametrize("mode", ["unavailable", "throttle"])
def test_a_transient_refusal_is_retried_and_carries_retry_after(
    otlp_receiver: OtlpReceiver, protocol: str, mode: str
) -> None:
    otlp_receiver.mode = mode  # type: ignore[assignment]
    otlp_receiver.retry_after = 1
    failure = probe_otlp(_environ(otlp_receiver, protocol), "traces", timeout=3)
    assert failure is not None
    assert failure.refused is None  # try again later
    assert otlp_receiver.refused_requests >= 2  # the SDK tried again, after the hint
    if protocol == "http/protobuf":
        assert failure.status == (503 if mode == "unavailable" else 429)
        assert failure.retry_after == 1.0


_IN_A_ROW = """
import sys
from otel_bridge.export import probe_otlp
environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": sys.argv[1], "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
for signal in ("traces", "traces", "metrics", "metrics"):
    print(probe_otlp(environ, signal, timeout=5).refused)
"""


def test_a_refusal_in_a_row_is_still_told_what_it_was(otlp_receiver: OtlpReceiver) -> None:
    """The gRPC exporter's logger drops a message it gave in the last 20 s (the SDK's
    DuplicateFilter): the second refusal must not come out as a transient failure. In a
    process of its own, where the gRPC exporter is the first one made (the order its logger
    got its filters in is what matters)."""
    otlp_receiver.mode = "not_found"
    done = subprocess.run(
        [sys.executable, "-c", _IN_A_ROW, otlp_receiver.grpc_endpoint],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [REFUSED_ENDPOINT] * 4


def test_a_signal_nothing_receives_is_refused_by_the_endpoint() -> None:
    with OtlpReceiver(signals=("traces",)) as jaeger_like:
        for protocol in ("http/protobuf", "grpc"):
            environ = _environ(jaeger_like, protocol)
            assert probe_otlp(environ, "traces") is None
            failure = probe_otlp(environ, "metrics")
            assert failure is not None and failure.refused == REFUSED_ENDPOINT
            assert failure.status == (404 if protocol == "http/protobuf" else "UNIMPLEMENTED")


def test_run_s_metrics_to_a_traces_only_backend_say_once_what_to_set(tmp_path: Path) -> None:
    state = session_state(tmp_path / "session-state")
    log = tmp_path / "run.log"
    with OtlpReceiver(signals=("traces",)) as jaeger_like:
        env = bridge_env(
            {"PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": jaeger_like.http_endpoint}
        )
        process = start_bridge(
            [
                *("run", "--session-state", str(state), "--no-checkpoints", "--backfill"),
                *("--prometheus-port", "0", "--metrics-interval", "0.2"),
            ],
            env=env,
            log=log,
        )
        try:
            deadline = time.monotonic() + 60
            while len(jaeger_like.errors()) < 4:  # four metrics exports refused
                assert process.poll() is None, log.read_text()
                if time.monotonic() > deadline:
                    pytest.fail(log.read_text())
                time.sleep(0.05)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
        finally:
            terminate(process)
        assert jaeger_like.spans()  # the traces went through
    lines = [line for line in log.read_text().splitlines() if "metrics export" in line]
    assert len(lines) == 1, lines  # once, not at every interval
    assert "(HTTP 404 Not Found)" in lines[0]
    assert "OTEL_METRICS_EXPORTER=prometheus" in lines[0]
    assert "OTEL_METRICS_EXPORTER=none" in lines[0]


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
@pytest.mark.parametrize("mode", ["not_found", "not_implemented"])
def test_replay_to_an_endpoint_that_takes_no_traces_asks_once_and_says_what_to_check(
    otlp_receiver: OtlpReceiver, protocol: str, mode: str, tmp_path: Path
) -> None:
    """The bridge's own queue does not retry a refusal that will not change as if the
    collector were busy: before, a replay asked again after 1, 2, 4 and 8 s, until its
    --export-timeout, and said only "export failed"."""
    otlp_receiver.mode = mode  # type: ignore[assignment]
    log = tmp_path / "events.jsonl"  # one small real session: one batch of spans
    log.write_bytes(
        (ROOT / "tests" / "fixtures" / "run1_cli_prompt_basic" / "events.jsonl").read_bytes()
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env.update(_environ(otlp_receiver, protocol))
    done = subprocess.run(
        [sys.executable, "-m", "otel_bridge", "replay", str(log), "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert otlp_receiver.refused_requests == 1  # one batch, asked once, never split
    assert "takes no OTLP traces" in done.stderr
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in done.stderr
