"""An OTLP endpoint's credentials (`http://user:password@host`, a key in its query) are never
shown: not in log lines, /readyz, `doctor`, errors or summaries. One function,
`shown_endpoint`, gives every place the endpoint without them."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from otel_bridge._doctor import diagnose
from otel_bridge._exceptions import ConfigError
from otel_bridge.export import build_span_exporters
from otel_bridge.export._common import otlp_endpoint, shown_endpoint, without_credentials
from otel_bridge.export._exporters import exporter_label, unreachable_collector
from otel_bridge.export._verdicts import failure_reason
from tests.integration.test_exporters_config import (
    basic_session_state,
    bridge,
    dead_port,
    environment,
)
from tests.processes import start_bridge, terminate

PASSWORD = "S3cretPassw0rd"
KEY = "k3yInQuery99"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"http://alice:{PASSWORD}@collector:4318", "http://collector:4318"),
        (f"https://{PASSWORD}@collector.example.com/otlp", "https://collector.example.com/otlp"),
        (f"http://collector:4318/v1/traces?api-key={KEY}#x", "http://collector:4318/v1/traces"),
        (f"alice:{PASSWORD}@collector:4317", "collector:4317"),  # grpc's host:port form
        (f"http://alice:{PASSWORD}/x@collector:4318", "http://collector:4318"),  # '/' in it
        ("http://[::1]:4318/v1/traces", "http://[::1]:4318/v1/traces"),
        ("collector:4317", "collector:4317"),
        ("http://collector:4318/v1/a@b", "http://collector:4318/v1/a@b"),
    ],
)
def test_an_endpoint_is_shown_without_its_credentials(url: str, shown: str) -> None:
    assert shown_endpoint(url) == shown


def test_the_exporter_gets_the_credentials_and_nothing_shows_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"http://alice:{PASSWORD}@127.0.0.1:{dead_port()}?api-key={KEY}"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url}
    endpoint = otlp_endpoint(env, "traces")
    assert PASSWORD in endpoint.target  # the HTTP exporter sends them (Basic credentials)
    shown = [endpoint.describe()]
    (exporter,) = build_span_exporters(env)
    shown.append(exporter_label(exporter))
    problem = unreachable_collector(env, timeout=1)
    assert problem is not None
    shown.append(problem)
    shown.extend(check.message for check in diagnose([], env, None, timeout=1))
    exporter.shutdown()
    for text in shown:
        assert "127.0.0.1" in text or text.startswith(("OTEL_", "no ")), text
        assert PASSWORD not in text and "alice" not in text and KEY not in text, text


def test_doctor_s_hint_about_a_signal_s_own_variable_hides_them(otlp_receiver) -> None:
    """Reachable, with the signal's own variable and no path: the hint repeats the URL."""
    url = otlp_receiver.http_endpoint.replace("http://", f"http://alice:{PASSWORD}@")
    checks = diagnose([], {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url}, None, timeout=2)
    (hint,) = [c for c in checks if "did you mean" in c.message]
    assert PASSWORD not in hint.message
    assert f"{otlp_receiver.http_endpoint}/v1/traces?" in hint.message


@pytest.mark.parametrize(
    "url",
    [
        f"http://alice:{PASSWORD}@collector:99999",  # port out of range
        f"ftp://alice:{PASSWORD}@collector:21",  # not http
        f"http://alice:{PASSWORD}@collector:port",  # not a number
    ],
)
def test_a_bad_endpoint_s_error_hides_them(url: str) -> None:
    with pytest.raises(ConfigError) as error:
        otlp_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": url}, "traces")
    assert "collector" in str(error.value)
    assert PASSWORD not in str(error.value)


def test_an_export_failure_s_reason_hides_them() -> None:
    record = logging.LogRecord(
        "opentelemetry.exporter", logging.WARNING, __file__, 0,
        "Failed to export to %s: %s", (f"https://alice:{PASSWORD}@collector/v1/traces", "boom"),
        None,
    )  # fmt: skip
    reason = failure_reason([record])
    assert "collector" in reason and PASSWORD not in reason
    assert without_credentials(f"see http://a:{PASSWORD}@h and ws://{PASSWORD}@h") == (
        "see http://h and ws://h"
    )


def readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_run_shows_the_endpoint_without_credentials_in_logs_and_readyz(
    otlp_receiver, tmp_path: Path
) -> None:
    """The collector fails, then recovers: the failure warning, /readyz and the recovery
    line all name the endpoint, none with its password (and no other line shows it)."""
    state = basic_session_state(tmp_path)
    port = dead_port()
    otlp_receiver.mode = "unavailable"
    url = otlp_receiver.http_endpoint.replace("http://", f"http://alice:{PASSWORD}@")
    env = environment(OTEL_EXPORTER_OTLP_ENDPOINT=url, OTEL_EXPORTER_OTLP_TIMEOUT="1")
    log = tmp_path / "bridge.log"
    process = start_bridge(
        [
            "run",
            "--session-state", str(state), "--state-dir", str(tmp_path / "bridge-state"),
            "--prometheus-port", str(port), "--poll-interval", "0.1", "--unready-after", "1",
        ],
        env=env,
        log=log,
    )  # fmt: skip
    bodies = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                code, body = readyz(port)
            except OSError:
                time.sleep(0.1)
                continue
            bodies.append(body)
            if code == 503 and "failing" in body:
                break
            time.sleep(0.1)
        reason = json.loads(bodies[-1])["reason"]
        assert "failing" in reason and otlp_receiver.http_endpoint in reason, bodies
        otlp_receiver.mode = "ok"
        otlp_receiver.wait_for_spans(1, timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and readyz(port)[0] != 200:
            time.sleep(0.1)
    finally:
        terminate(process)
    stderr = log.read_text()
    assert all(PASSWORD not in body for body in bodies)
    named = [line for line in stderr.splitlines() if otlp_receiver.http_endpoint in line]
    said = ("export failed", "exporting again")
    assert all(any(word in line for line in named) for word in said), stderr
    assert PASSWORD not in stderr and "alice" not in stderr, stderr


def test_replay_s_unreachable_collector_error_hides_them(tmp_path: Path) -> None:
    url = f"http://alice:{PASSWORD}@127.0.0.1:{dead_port()}"
    result = bridge(
        "replay", str(basic_session_state(tmp_path)), "--no-progress",
        env=environment(OTEL_EXPORTER_OTLP_ENDPOINT=url),
    )  # fmt: skip
    assert result.returncode == 1
    assert "127.0.0.1" in result.stderr and PASSWORD not in result.stderr, result.stderr
