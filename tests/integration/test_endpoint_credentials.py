"""An OTLP endpoint's credentials (`http://user:password@host`, a key in its query) are never
shown: not in log lines, /readyz, `doctor`, errors or summaries. One function,
`shown_endpoint`, gives every place the endpoint without them."""

from __future__ import annotations

import io
import json
import logging
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from otel_bridge._exceptions import ConfigError
from otel_bridge.app._doctor import diagnose
from otel_bridge.export import build_span_exporters
from otel_bridge.export._common import (
    CredentialFilter,
    otlp_endpoint,
    shown_endpoint,
    without_credentials,
)
from otel_bridge.export._exporters import exporter_label, unreachable_collector
from otel_bridge.export._verdicts import failure_reason
from tests.integration.test_exporters_config import (
    basic_session_state,
    bridge,
    dead_port,
    environment,
)
from tests.processes import log_tail, start_bridge, terminate

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


# --- every log line, the SDK's, gRPC's and urllib3's included (issue 32, item 2) -------------

TOKEN = "t0kenOnly77"
HEADER_TOKEN = "h3aderBearer55"
HEADER_KEY = "h3aderKey44"


@pytest.mark.parametrize(
    ("text", "kept", "secret"),
    [
        (f"Failed to export traces to alice:{PASSWORD}@127.0.0.1:4317, error", "127.0.0.1:4317",
         PASSWORD),  # gRPC's scheme-less target
        (f"resolving alice:p%40{PASSWORD}%3A@[::1]:4317: x", "[::1]:4317", PASSWORD),
        (f"to {TOKEN}@127.0.0.1:4317", "127.0.0.1:4317", TOKEN),  # a token alone
        (f"https://{TOKEN}@collector/v1 and http://a:{PASSWORD}@b@h:1/", "https://collector/v1",
         PASSWORD),  # an unencoded @ in a password
        (f"Max retries exceeded with url: /?api_key={KEY}/v1/traces (Caused", "url: /?api_key=",
         KEY),
        (f"GET /v1/traces?a=1&access_token={KEY}&sig={TOKEN} HTTP/1.1", "?a=1", KEY),
        (f"headers {{'Authorization': 'Bearer {HEADER_TOKEN}', 'x-api-key': '{HEADER_KEY}'}}",
         "'Authorization': 'Bearer ", HEADER_TOKEN),
        (f"Authorization=Basic%20{HEADER_TOKEN},api-key={HEADER_KEY}", "Authorization=",
         HEADER_KEY),
    ],
)  # fmt: skip
def test_a_log_line_loses_every_shape_of_credential(text: str, kept: str, secret: str) -> None:
    shown = without_credentials(text)
    assert kept in shown, shown
    for word in (secret, PASSWORD, KEY, TOKEN, HEADER_TOKEN, HEADER_KEY):
        assert word not in shown, shown


@pytest.mark.parametrize(
    "text",
    [
        "tokens: 12 input_tokens=3 signal=x at 18:58:33,219",
        "mail bob@example.com about copilot@1.0.9",
        "followed /home/a/.copilot/session-state/0a1b/events.jsonl",
    ],
)
def test_a_log_line_without_credentials_is_left_as_it_is(text: str) -> None:
    assert without_credentials(text) == text


def test_the_filter_on_a_handler_scrubs_what_other_loggers_propagate_to_it() -> None:
    """A third-party logger's record, with the credential in its arguments and its
    exception: a filter on the handler sees it (one on the bridge's logger would not)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(CredentialFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        try:
            raise ConnectionError(f"cannot reach alice:{PASSWORD}@127.0.0.1:4317")
        except ConnectionError:
            logging.getLogger("opentelemetry.exporter.test").error(
                "Failed to export traces to %s", f"{TOKEN}@127.0.0.1:4317", exc_info=True
            )
    finally:
        root.removeHandler(handler)
    written = stream.getvalue()
    assert "Failed to export traces to 127.0.0.1:4317" in written, written
    assert "ConnectionError: cannot reach 127.0.0.1:4317" in written, written
    assert PASSWORD not in written and TOKEN not in written, written


_USERINFOS = {
    "plain": (f"alice:{PASSWORD}", [PASSWORD]),
    "percent-encoded": (f"alice:p%40{PASSWORD}%2F", [PASSWORD, f"p@{PASSWORD}"]),
    "token-only": (TOKEN, [TOKEN]),
}


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
@pytest.mark.parametrize("userinfo", sorted(_USERINFOS))
def test_no_credential_reaches_stderr_with_the_collector_down_at_debug(
    protocol: str, userinfo: str, tmp_path: Path
) -> None:
    """run at DEBUG, exporting to a refused port on 127.0.0.1 with credentials in the user
    info, the query and the headers: the SDK's, gRPC's and urllib3's lines and the bridge's
    "export failed" line are all written, and none holds a credential. The query string is
    said at start to be unusable, without its value."""
    info, secrets = _USERINFOS[userinfo]
    url = f"http://{info}@127.0.0.1:{dead_port()}/?api_key={KEY}"
    headers = f"Authorization=Bearer {HEADER_TOKEN},x-api-key={HEADER_KEY}"
    env = environment(
        OTEL_EXPORTER_OTLP_ENDPOINT=url,
        OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
        OTEL_EXPORTER_OTLP_HEADERS=headers,
        OTEL_EXPORTER_OTLP_TIMEOUT="1",
    )
    log = tmp_path / "bridge.log"
    process = start_bridge(
        [
            "run", "--session-state", str(basic_session_state(tmp_path)),
            "--state-dir", str(tmp_path / "bridge-state"), "--no-prometheus",
            "--log-level", "DEBUG", "--poll-interval", "0.1", "--export-timeout", "1",
        ],
        env=env,
        log=log,
    )  # fmt: skip
    sdk = "opentelemetry.exporter.otlp.proto." + ("grpc" if protocol == "grpc" else "http")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            text = log.read_text()
            if "export failed" in text and f"ERROR {sdk}" in text:
                break
            time.sleep(0.2)
    finally:
        terminate(process)
    stderr = log.read_text()
    assert "export failed" in stderr and f"ERROR {sdk}" in stderr, stderr[-3000:]
    assert "has a query string (value not shown)" in stderr, stderr[-3000:]
    for secret in [*secrets, KEY, HEADER_TOKEN, HEADER_KEY]:
        assert secret not in stderr, (secret, stderr[-3000:])


def test_readyz_turns_unready_at_the_first_refused_connection(tmp_path: Path) -> None:
    """The SDK's HTTP exporter retries a refused connection inside one export call for
    OTEL_EXPORTER_OTLP_TIMEOUT (30 s here) before it returns; /readyz counts the outage
    from the first refusal, so it says "failing" while that first call still runs, before
    the bridge's "export failed" warning (logged when the call returns)."""
    port = dead_port()
    env = environment(
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{dead_port()}",
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_TIMEOUT="30",
    )
    log = tmp_path / "bridge.log"
    process = start_bridge(
        [
            "run", "--session-state", str(basic_session_state(tmp_path)),
            "--state-dir", str(tmp_path / "bridge-state"), "--prometheus-port", str(port),
            "--poll-interval", "0.1", "--unready-after", "0.5", "--export-timeout", "1",
        ],
        env=env,
        log=log,
    )  # fmt: skip
    answer: tuple[int, str] | None = None
    try:
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and process.poll() is None:
            try:
                code, body = readyz(port)
            except OSError:
                time.sleep(0.1)
                continue
            if code == 503 and "failing" in body:
                answer = code, body
                warned = "export failed" in log.read_text()
                break
            time.sleep(0.1)
    finally:
        terminate(process)
    assert answer is not None, log_tail(log)
    assert not warned, "the first export call had returned already: " + log_tail(log)
