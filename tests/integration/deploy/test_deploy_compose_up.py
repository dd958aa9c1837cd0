"""The viewing stack of deploy/compose/compose.yaml, started for real with podman-compose.

No registry is reachable here, so each image the compose file names is made locally under that
name (tests/podman.py), from what the suite already has:

- `otel-bridge:local`: the Dockerfile, as tests/integration/deploy/test_deploy_docker.py builds it;
- `otel/opentelemetry-collector-contrib:0.156.0`: the Collector built from the Go module proxy
  with deploy/otelcol/builder-config.yaml (tests/goparts.py), at the contrib image's paths
  (`/otelcol-contrib --config /etc/otelcol-contrib/config.yaml`, uid 10001);
- `jaegertracing/jaeger:2.21.0`: Jaeger v2 built from the Go module proxy, default
  configuration (the compose file's command gives the rest);
- `prom/prometheus:v3.5.0`: Debian's Prometheus (2.42; the compose file's configuration is
  valid for both), at the official image's paths, as `nobody`.

Grafana cannot be built here (no Debian package, not a Go module the proxy builds without its
front end): it is the one service not started (podman-compose starts the services named).
The shipped compose file itself is used, with no override: COPILOT_HOME and OTEL_BRIDGE_UID
are the variables it documents. Its ports are fixed on the loopback (9464, 9090, 16686): the
test checks that they are free first.

It shows the whole path: a session log written into the mounted home after `up` -> its trace
in Jaeger (query API), through the Collector -> the bridge's metrics in Prometheus (scraped
from the bridge as job "otel-bridge") -> the alert rules loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from otel_bridge.export import DEFAULT_SERVICE_NAME
from tests import paths, podman
from tests.goparts import jaeger_binary, otelcol_binary
from tests.integration.test_alert_rules import alert_rules

ROOT = paths.REPO
COMPOSE = ROOT / "deploy" / "compose" / "compose.yaml"
FIXTURE = ROOT / "tests" / "fixtures" / "run1_cli_prompt_basic" / "events.jsonl"
FIXTURE_SPANS = 6
SESSION = "3e9f5d71-b07f-4a6c-8c3f-6f8d7d6c4a44"
STARTED = ("otel-bridge", "otel-collector", "jaeger", "prometheus")  # all but grafana
PORTS = {"bridge": 9464, "prometheus": 9090, "jaeger": 16686}
PROMETHEUS_BINARY = Path("/usr/bin/prometheus")


def _say(config: pytest.Config, line: str) -> None:
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        sys.stderr.write(f"\n[podman-compose] {line}\n")


def _compose_tool() -> None:
    if shutil.which("podman-compose") is None:
        message = "podman-compose not installed (apt-get install podman-compose)"
        if os.environ.get("CI") == "true" or os.environ.get("OTEL_BRIDGE_TEST_SH") == "1":
            pytest.fail(f"{message}: scripts/test.sh installs it", pytrace=False)
        pytest.skip(message)


def _images() -> None:
    """Every image the started services name, made locally under that name."""
    podman.bridge_image()
    podman.wrap(
        "docker.io/otel/opentelemetry-collector-contrib:0.156.0",
        otelcol_binary(),
        ["/usr/local/bin/otelcol-bridge"],
        ["--config", "/etc/otelcol-contrib/config.yaml"],
        ["USER 10001"],
    )
    podman.wrap("docker.io/jaegertracing/jaeger:2.21.0", jaeger_binary(), ["/usr/local/bin/jaeger"])
    if not PROMETHEUS_BINARY.is_file():
        pytest.fail("Debian's prometheus is not installed (scripts/test.sh installs it)")
    podman.wrap(
        "docker.io/prom/prometheus:v3.5.0",
        PROMETHEUS_BINARY,
        ["/usr/local/bin/prometheus"],
        ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"],
        ["RUN mkdir -p /prometheus && chown nobody:nogroup /prometheus", "USER nobody",
         "WORKDIR /prometheus"],
    )  # fmt: skip


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _api(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def _until(what: str, check: Callable[[], Any], logs: Callable[[], str], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            found = check()
        except (OSError, ValueError, KeyError) as exc:  # not up yet, or not there yet
            found, last = None, exc
        if found:
            return found
        time.sleep(1)
    pytest.fail(f"{what}: not within {timeout:.0f}s (last: {last})\n{logs()}", pytrace=False)


@pytest.fixture
def stack(tmp_path: Path, pytestconfig: pytest.Config) -> Iterator[tuple[Path, Callable[[], str]]]:
    podman.require_podman()
    _compose_tool()
    taken = {name: port for name, port in PORTS.items() if not _free(port)}
    assert not taken, f"the compose file publishes fixed loopback ports; taken here: {taken}"
    started = time.monotonic()
    _images()
    _say(pytestconfig, f"images ready in {time.monotonic() - started:.0f}s")
    copilot = tmp_path / "copilot"
    (copilot / "session-state").mkdir(parents=True)
    env = {
        **podman.podman_env(),
        "COPILOT_HOME": str(copilot),
        "OTEL_BRIDGE_UID": str(os.getuid()),
    }
    compose = ["podman-compose", "-f", str(COMPOSE)]

    def logs() -> str:
        out = []
        for service in STARTED:
            done = subprocess.run(
                [*compose, "logs", "--tail", "30", service],
                env=env, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            out.append(f"--- {service}\n{done.stdout[-2000:]}{done.stderr[-500:]}")
        return "\n".join(out)

    up = subprocess.run(
        [*compose, "up", "-d", "--no-build", *STARTED],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield copilot, logs
    finally:
        subprocess.run(
            [*compose, "down", "-v", "-t", "30"],
            env=env, capture_output=True, timeout=600, check=False,
        )  # fmt: skip
        podman.podman("network", "prune", "-f", check=False)  # compose's, which down leaves
        _say(pytestconfig, f"stack up to down: {time.monotonic() - started:.0f}s")


def test_a_session_log_goes_through_the_collector_to_jaeger_and_prometheus(
    stack: tuple[Path, Callable[[], str]],
) -> None:
    copilot, logs = stack
    bridge = f"http://127.0.0.1:{PORTS['bridge']}"
    _until("the bridge's /readyz", lambda: _api(f"{bridge}/readyz")["ready"], logs, 120)
    # a session appears in the mounted home once the stack is up
    session = copilot / "session-state" / SESSION
    session.mkdir()
    shutil.copy(FIXTURE, session / "events.jsonl")

    jaeger = f"http://127.0.0.1:{PORTS['jaeger']}"
    # over all time: without `start`, Jaeger's query API searches the last 2 days only
    # (defaultTraceQueryLookbackDuration in jaeger's cmd/query/app/http_handler.go), and the
    # fixture's spans keep the times of the session it was recorded from
    query = urllib.parse.urlencode(
        {"service": DEFAULT_SERVICE_NAME, "limit": 20, "start": 0, "end": 9 * 10**15}
    )

    def trace_spans() -> int:
        traces = _api(f"{jaeger}/api/traces?{query}")["data"]
        spans = sum(len(trace["spans"]) for trace in traces)
        return spans if spans >= FIXTURE_SPANS else 0

    assert _until("the trace in Jaeger", trace_spans, logs, 120) == FIXTURE_SPANS

    prometheus = f"http://127.0.0.1:{PORTS['prometheus']}"
    scraped = urllib.parse.urlencode(
        {"query": 'otel_bridge_spans_exported_total{job="otel-bridge"} > 0'}
    )
    result = _until(
        "the bridge's metrics in Prometheus",
        lambda: _api(f"{prometheus}/api/v1/query?{scraped}")["data"]["result"],
        logs,
        120,  # a scrape every 15 s
    )
    assert result[0]["metric"]["job"] == "otel-bridge"

    groups = _api(f"{prometheus}/api/v1/rules")["data"]["groups"]
    loaded = {rule["name"] for group in groups for rule in group["rules"]}
    assert loaded == {rule["alert"] for rule in alert_rules()}
