"""/healthz and /readyz answer whatever OTEL_METRICS_EXPORTER says: a manifest's liveness probe
that finds nothing on the port restarts the bridge for ever.

`run` serves Prometheus on its port by default; with OTEL_METRICS_EXPORTER=otlp or none (and
no flag of the port, which forces Prometheus on) the port still answers the probes, and
/metrics answers 404 saying where the metrics went. The pipeline is checked in-process on a
free port; `otel-bridge run` itself at its default address (127.0.0.1:9464, which a flag
would change and so hide the case) in a network namespace of its own (`unshare -rn`, a user
namespace: no root needed, no port of the machine's taken), with the OTLP receiver beside it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource

from otel_bridge.export import MetricsOptions
from otel_bridge.export._metrics import build_metrics
from tests import paths

ROOT = paths.REPO
FIXTURE = ROOT / "tests" / "fixtures" / "run1_cli_prompt_basic" / "events.jsonl"


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=20) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.parametrize("exporters", ["otlp", "none", "otlp,console"])
def test_the_port_serves_the_probes_whatever_the_metric_exporters(
    exporters: str, otlp_receiver
) -> None:
    environ = {
        "OTEL_METRICS_EXPORTER": exporters,
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint,
    }
    options = MetricsOptions(
        default_exporters=("prometheus",), prometheus_port=0, probes=True, console_stream=None
    )
    pipeline = build_metrics(environ, Resource.create({}), options)
    try:
        assert pipeline.server is not None, "nothing serves the probes"
        base = f"http://{pipeline.server.address}"
        assert _get(f"{base}/healthz") == (200, "ok\n")
        # not ready until run's daemon installs its verdict (the driver below sees it do so)
        assert _get(f"{base}/readyz") == (503, '{"ready": false, "reason": "starting"}\n')
        status, body = _get(f"{base}/metrics")
        assert status == 404
        assert f"OTEL_METRICS_EXPORTER={exporters} leaves prometheus out" in body
        # the metrics still go where they were asked to
        assert (pipeline.recorder is not None) == (exporters != "none")
    finally:
        pipeline.shutdown(timeout=1)


def test_without_probes_a_one_shot_command_binds_no_port(otlp_receiver) -> None:
    environ = {
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint,
    }
    pipeline = build_metrics(environ, Resource.create({}), MetricsOptions(prometheus_port=0))
    try:
        assert pipeline.server is None  # replay: nothing to probe
    finally:
        pipeline.shutdown(timeout=1)


def test_prometheus_on_the_port_still_serves_metrics() -> None:
    options = MetricsOptions(default_exporters=("prometheus",), prometheus_port=0, probes=True)
    pipeline = build_metrics({}, Resource.create({}), options)
    try:
        assert pipeline.server is not None and pipeline.server.no_metrics is None
        assert _get(f"http://{pipeline.server.address}/metrics")[0] == 200
    finally:
        pipeline.shutdown(timeout=1)


# The driver runs inside the namespace: a receiver, `otel-bridge run` with no flag of the port,
# the probes asked at 127.0.0.1:9464, then SIGTERM; it prints what it saw as JSON.
_DRIVER = r"""
import json, os, signal, subprocess, sys, time, urllib.error, urllib.request
from tests.otlp_receiver import OtlpReceiver

def get(path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:9464" + path, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)

state, exporters = sys.argv[1], sys.argv[2]
with OtlpReceiver() as receiver:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env.update(OTEL_METRICS_EXPORTER=exporters,
               OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint)
    argv = [sys.executable, "-m", "otel_bridge", "run", "--session-state", state + "/ss",
            "--state-dir", state + "/bridge", "--poll-interval", "0.1"]
    if "otlp" in exporters:
        argv += ["--metrics-interval", "0.5"]
    with open(state + "/bridge.log", "wb") as log:
        bridge = subprocess.Popen(argv, env=env, stdout=log, stderr=log)
    seen = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and get("/readyz")[0] != 200:
        time.sleep(0.2)
    seen["healthz"] = get("/healthz")
    seen["readyz"] = get("/readyz")
    seen["metrics"] = get("/metrics")
    receiver.wait_for_spans(6, timeout=30)
    if "otlp" in exporters:
        receiver.wait_for_metrics(1, timeout=30)
    seen["spans"] = len(receiver.spans())
    seen["metric_requests"] = len(receiver.requests("metrics"))
    bridge.send_signal(signal.SIGTERM)
    seen["exit"] = bridge.wait(timeout=60)
print(json.dumps(seen))
"""


@pytest.mark.parametrize("exporters", ["otlp", "none"])
def test_run_at_its_default_address_answers_the_probes(exporters: str, tmp_path: Path) -> None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        message = "needs unshare (util-linux) and ip (iproute2) for a network namespace"
        if os.environ.get("CI") == "true" or os.environ.get("OTEL_BRIDGE_TEST_SH") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    session = tmp_path / "ss" / "0b6c2a4e-8d4c-4d39-9f0c-3c5a4a3f1d11"
    session.mkdir(parents=True)
    shutil.copy(FIXTURE, session / "events.jsonl")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
         sys.executable, "-c", _DRIVER, str(tmp_path), exporters],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    log = (tmp_path / "bridge.log").read_text() if (tmp_path / "bridge.log").exists() else ""
    assert done.returncode == 0, f"{done.stderr[-3000:]}\n{log[-3000:]}"
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["healthz"] == [200, "ok\n"], log
    assert seen["readyz"][0] == 200, f"{seen}\n{log}"  # a string: pytest shows it whole
    assert seen["metrics"][0] == 404, seen
    assert f"OTEL_METRICS_EXPORTER={exporters}" in seen["metrics"][1]
    assert seen["spans"] == 6
    assert (seen["metric_requests"] > 0) == (exporters == "otlp")
    assert seen["exit"] == 0, log
