"""The CI example (deploy/github-actions/copilot-agent.yml) run locally, step by step.

The job's own shell scripts run here as GitHub Actions runs them (`bash --noprofile --norc -eo
pipefail`), with the job's environment filled in as the runner would (RUNNER_TEMP, the
variables and secrets) and TRACEPARENT set, as a step that traces the job sets it: "Start
otel-bridge", then the agent, then "Stop otel-bridge". The agent is the real Copilot CLI
(node_modules) with the fake model of the end-to-end tests (tests/e2e/copilot.py), in place of
the job's `copilot -p` step, which needs a GitHub token and the real model. The spans go to the
OTLP receiver; they must be every span `otel-bridge replay` makes of the same log, all in the
job's trace, each task's root a child of the job's span.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import paths
from tests.e2e.copilot import SCENARIOS, CopilotMissing, find_copilot, run_scenario
from tests.otlp_receiver import OtlpReceiver
from tests.prometheus import free_port

ROOT = paths.REPO
WORKFLOW = ROOT / "deploy" / "github-actions" / "copilot-agent.yml"
JOB_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
JOB_SPAN = "00f067aa0ba902b7"
START, AGENT, STOP = (
    "Start otel-bridge",
    "Run the agent",
    "Stop otel-bridge (what is queued is delivered)",
)
#: How GitHub Actions runs a `run:` script with `shell: bash` (its default on Linux).
BASH = ("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c")


def _job() -> dict[str, Any]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job: dict[str, Any] = workflow["jobs"]["agent"]
    return job


def _steps() -> dict[str, dict[str, Any]]:
    return {step["name"]: step for step in _job()["steps"] if "name" in step}


def test_the_scripts_use_no_expression_and_the_bridge_brackets_the_agent() -> None:
    """What runs here is what runs there: the scripts read variables only (the expressions are
    in `env:`), and the order is start, agent, stop, the stop even when the agent failed."""
    names = [step.get("name") for step in _job()["steps"]]
    assert names.index(START) < names.index(AGENT) < names.index(STOP)
    for step in _job()["steps"]:
        assert "${{" not in step.get("run", ""), step.get("name")
    assert _steps()[STOP]["if"] == "always()"
    assert "copilot -p" in _steps()[AGENT]["run"]
    # the CLI gets no OTLP variable: it would export its own copy of every trace
    agent_env = {**_job()["env"], **_steps()[AGENT].get("env", {})}
    sdk = [n for n in agent_env if n.startswith("OTEL_") and not n.startswith("OTEL_BRIDGE_")]
    assert not sdk, agent_env


def _replayed_spans(events: Path, out: Path) -> int:
    """How many spans `otel-bridge replay` makes of the log (no parent: the same spans)."""
    traces = out / "replay.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRACEPARENT"))}
    done = subprocess.run(
        [sys.executable, "-m", "otel_bridge", "replay", str(events), "--traces-file",
         str(traces), "--no-progress"],
        env={**env, "OTEL_TRACES_EXPORTER": "none", "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    count = 0
    for line in traces.read_text().splitlines():
        for resource in json.loads(line).get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                count += len(scope.get("spans", []))
    return count


def test_the_ci_job_exports_the_agents_session_under_the_jobs_span(
    otlp_receiver: OtlpReceiver, tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    try:
        find_copilot()
    except CopilotMissing as exc:  # as the end-to-end tests: scripts/test.sh installs it
        pytest.fail(str(exc), pytrace=False)
    started = time.monotonic()
    agent_root = tmp_path / "agent"  # the CLI's workspace; its home is COPILOT_HOME
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    shim = tmp_path / "bin"  # `otel-bridge` of this checkout, as pip would install it
    shim.mkdir()
    (shim / "otel-bridge").write_text(f'#!/bin/sh\nexec {sys.executable} -m otel_bridge "$@"\n')
    (shim / "otel-bridge").chmod(0o755)
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "COPILOT_", "GITHUB_", "RUNNER_")) and k != "TRACEPARENT"
    }
    job_env = {  # the job's env and the start step's: as the runner fills in expressions
        "COPILOT_HOME": str(agent_root / "home"),
        "OTEL_BRIDGE_STATE_DIR": str(runner_temp / "otel-bridge-state"),
        "OTEL_BRIDGE_PORT": str(free_port()),
    }
    start_env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.http_endpoint,
        "OTEL_EXPORTER_OTLP_HEADERS": "",  # an unset secret is an empty string
        "OTEL_RESOURCE_ATTRIBUTES": "cicd.pipeline.name=copilot-agent,cicd.pipeline.run.id=1",
    }
    steps = _steps()
    assert set(_job()["env"]) == set(job_env)
    assert set(steps[START]["env"]) == set(start_env)
    env = {
        **clean,
        **job_env,
        "RUNNER_TEMP": str(runner_temp),
        "TRACEPARENT": f"00-{JOB_TRACE}-{JOB_SPAN}-01",  # from a step that traces the job
        "PATH": f"{shim}{os.pathsep}{clean.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
    }
    start = subprocess.run(
        [*BASH, steps[START]["run"]], env={**env, **start_env}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert start.returncode == 0, start.stdout + start.stderr
    try:
        run = run_scenario(SCENARIOS["one_tool"], agent_root)
    finally:
        stop = subprocess.run(
            [*BASH, steps[STOP]["run"]], env=env, capture_output=True, text=True, timeout=180,
            check=False,
        )  # fmt: skip
    assert stop.returncode == 0, stop.stdout[-4000:] + stop.stderr[-2000:]  # the bridge's 0

    expected = _replayed_spans(run.events_file, tmp_path)
    spans = otlp_receiver.spans()
    assert expected > 0 and len(spans) == expected, stop.stdout[-4000:]
    assert {span["trace_id"] for span in spans} == {JOB_TRACE}
    ids = {span["span_id"] for span in spans}
    roots = [span for span in spans if span["parent_span_id"] not in ids]
    assert roots and {span["parent_span_id"] for span in roots} == {JOB_SPAN}
    assert all(span["name"].startswith("invoke_agent") for span in roots), roots
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        sys.stderr.write(f"\n[ci-runner] {time.monotonic() - started:.0f}s\n")


@pytest.mark.parametrize("value", ["bad", f"00-{'0' * 32}-{JOB_SPAN}-01"])
def test_a_traceparent_that_is_not_one_is_an_error_that_names_it(value: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "otel_bridge", "replay", str(ROOT / "tests" / "fixtures"
         / "run1_cli_prompt_basic" / "events.jsonl"), "--no-progress"],
        env={**os.environ, "TRACEPARENT": value, "OTEL_TRACES_EXPORTER": "none",
             "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "TRACEPARENT: " in done.stderr and "unset it for a trace per task" in done.stderr
