"""End to end with a real Prometheus: `otel-bridge run --prometheus-port` follows real Copilot CLI
logs, Prometheus scrapes it, and every dashboard query and every alert rule must find data.

The bridge gets every capture in tests/fixtures (tasks of every outcome, tools that fail, a
provider error, aborts, sub-agents, autopilot, code changes, a session in a git checkout), plus
one log with a malformed line and an event of an unknown type, and one built log of billed calls
(premium requests, AI credits; the captures' calls are bring-your-own-key, which cost nothing
countable) and code changes in another repository, and one log of now whose task is still
open when Prometheus scrapes (tests/running_log.py: waiting for a permission, looping, long:
the running-now gauges, their dashboard row and the alerts while a task runs); its OTLP trace
exporter points at a port where nothing listens, so exports fail and spans are dropped (a file
exporter beside it succeeds). So every metric of the dashboards has something to show, and a
query that finds nothing is a wrong query: a misspelt metric or label, a label the bridge does
not set, a unit suffix the exporter does not add.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests import paths, processes
from tests.integration.test_alert_rules import ALERTS, GROUP, alert_rules
from tests.processes import terminate
from tests.prometheus import (  # noqa: F401  (prometheus_factory: a fixture, used by name)
    Prometheus,
    core_expression,
    find_binary,
    free_port,
    grafana_to_promql,
    prometheus_factory,
    promql_label_names,
    promql_selectors,
)
from tests.running_log import OWNER as RUNNING_OWNER
from tests.running_log import REPOSITORY as RUNNING_REPOSITORY
from tests.running_log import running_log
from tests.unit.assembler.test_accounting import two_segments
from tests.unit.deploy.test_dashboards import (
    DASHBOARD_FILES,
    all_dashboard_queries,
    label_values_query,
    template_variables,
)

FIXTURES = paths.FIXTURES
DEADLINE_S = 25.0  # for the bridge to read everything and Prometheus to see it


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def bad_input_log() -> bytes:
    """A session whose log has a malformed line and an event type no CLI version has yet."""
    session = str(uuid.uuid4())
    start_id, unknown_id = str(uuid.uuid4()), str(uuid.uuid4())
    events = [
        {
            "type": "session.start",
            "data": {
                "sessionId": session,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": "1.0.102",
                "startTime": _now(),
                "selectedModel": "gpt-4.1",
                "context": {"cwd": "/home/dev/project"},
            },
            "id": start_id,
            "timestamp": _now(),
            "parentId": None,
        },
        "this line is not JSON",
        {
            "type": "session.hologram_projected",
            "data": {"beams": 3},
            "id": unknown_id,
            "timestamp": _now(),
            "parentId": start_id,
        },
    ]
    return "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events).encode()


#: the repository of the built log of billed calls (tests/fixtures/git_repo has another)
BILLED_OWNER, BILLED_REPOSITORY = "octo-org", "billing"


def billed_log() -> bytes:
    """A session in a git checkout whose calls are billed (premium requests, AI credits) and
    whose shutdowns report code changes: tests/unit/assembler/test_accounting.py's two segments,
    moved into repository octo-org/billing under a fresh session id."""
    log = two_segments()
    start = log.raw[0]["data"]
    start["sessionId"] = str(uuid.uuid4())
    start["context"] = {
        "cwd": "/src/billing",
        "gitRoot": "/src/billing",
        "repository": f"{BILLED_OWNER}/{BILLED_REPOSITORY}",
        "repositoryHost": "github.com",
        "branch": "main",
    }
    for event in log.raw:  # their model's prompt limit, as the CLI writes it
        if event["type"] == "session.usage_record":
            event["data"]["usage"]["maxPromptTokens"] = 128_000
    # resumed once more, a task still open: its context (78% full) is a running-now series
    # of the repository
    log.add("session.resume", selectedModel="gpt-4.1", context=start["context"])
    log.user(interaction="i3")
    log.turn("0", interaction="i3")
    log.usage("u5", inputTokens=100_000, maxPromptTokens=128_000)
    return log.jsonl()


def start_bridge(state: Path, port: int, workdir: Path) -> subprocess.Popen[bytes]:
    env = processes.bridge_env(
        {
            "OTEL_TRACES_EXPORTER": "otlp",  # to a port nobody listens on: failures, drops
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{free_port()}/v1/traces",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "0.5",  # fail at once instead of backing off
            "OTEL_SERVICE_NAME": "e2e",
        }
    )
    return processes.start_bridge(
        [
            "run",
            "--session-state",
            str(state),
            "--prometheus-port",
            str(port),
            # the released GenAI names and the previous ones: every dashboard query works
            # with each (`<released> or <previous>`), and each selector is checked alone
            "--semconv",
            "both",
            "--poll-interval",
            "0.1",
            "--no-checkpoints",
            "--export-timeout",
            "1",
            "--rescan-interval",
            "0.3",
            "--traces-file",
            str(workdir / "traces.jsonl"),
        ],
        env=env,
        log=workdir / "bridge.err",
        stdout=workdir / "bridge.out",
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    terminate(process, 20)


def fetch_metrics(
    process: subprocess.Popen[bytes], port: int, workdir: Path, timeout: float = 15.0
) -> str:
    """The bridge's /metrics text, once it serves it."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            err = (workdir / "bridge.err").read_text(errors="replace")
            pytest.fail(
                f"otel-bridge run exited with {process.returncode}:\n{err[-3000:]}", pytrace=False
            )
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
                return resp.read().decode()
        except (OSError, urllib.error.URLError):
            if time.monotonic() > deadline:
                pytest.fail(
                    f"nothing serves http://127.0.0.1:{port}/metrics after {timeout}s",
                    pytrace=False,
                )
            time.sleep(0.1)


@pytest.fixture
def scraped_bridge(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Prometheus, subprocess.Popen[bytes], int, Path]]:
    """The bridge following the captures, and a Prometheus scraping it and loading alerts.yml."""
    start_prometheus: Callable[..., Prometheus] = request.getfixturevalue("prometheus_factory")
    state = tmp_path / "session-state"
    state.mkdir()
    port = free_port()
    bridge = start_bridge(state, port, tmp_path)
    try:
        fetch_metrics(bridge, port, tmp_path)
        prometheus = start_prometheus([f"127.0.0.1:{port}"], rule_files=[ALERTS])
        # Each log starts with its first line; the rest is appended once the bridge has read
        # that far, as a live session grows (only events read live count into the lag).
        logs = {
            log.parent.name: log.read_bytes() for log in sorted(FIXTURES.glob("*/events.jsonl"))
        }
        logs["bad_input"] = bad_input_log()
        logs["billed"] = billed_log()
        logs["running"] = running_log(str(uuid.uuid4())).jsonl()
        for name, data in logs.items():
            (state / name).mkdir()
            (state / name / "events.jsonl").write_bytes(data[: data.index(b"\n") + 1])
        time.sleep(1.5)
        for name, data in logs.items():
            with (state / name / "events.jsonl").open("ab") as handle:
                handle.write(data[data.index(b"\n") + 1 :])
        yield prometheus, bridge, port, tmp_path
    finally:
        stop(bridge)


def test_every_dashboard_and_alert_query_finds_data(scraped_bridge) -> None:
    prometheus, bridge, _, _ = scraped_bridge
    deadline = time.monotonic() + DEADLINE_S
    prometheus.wait_for("copilot_tasks_total", timeout=DEADLINE_S)

    def remaining() -> float:
        return max(deadline - time.monotonic(), 0.5)

    problems: list[str] = []
    checks = [
        (f"dashboard {where} [{ref}]", expr, True) for where, ref, expr in all_dashboard_queries()
    ]
    checks += [(f"alert {rule['alert']}", rule["expr"], False) for rule in alert_rules()]
    for where, expr, must_have_data in checks:
        promql = grafana_to_promql(expr, "1m")
        core = core_expression(promql)
        try:
            # the signal first (it may need a second scrape), then the query as written
            prometheus.wait_for(core, timeout=remaining())
            if must_have_data:
                prometheus.wait_for(promql, timeout=remaining())
            else:
                prometheus.query(promql)  # an alert condition may well be false: no data
        except TimeoutError:
            problems.append(f"{where}: no data for {' '.join(core.split())}")
        except Exception as exc:
            problems.append(f"{where}: {exc}")
    # every template variable lists values (Grafana's label_values: the label's values among
    # the selected series), and the repository variable the repositories of the logs
    for name in DASHBOARD_FILES:
        for variable, spec in template_variables(name).items():
            if spec["type"] != "query":
                continue
            selector, label = label_values_query(spec["query"])
            promql = f"count by ({label}) ({grafana_to_promql(selector)})"
            try:
                found = prometheus.wait_for(
                    promql,
                    timeout=remaining(),
                    check=lambda result, label=label: any(s["metric"].get(label) for s in result),
                )
            except TimeoutError:
                problems.append(f"{name} variable {variable}: no values for {promql}")
                continue
            values = {series["metric"].get(label, "") for series in found}
            if variable == "repository" and not {"demo-project", BILLED_REPOSITORY} <= values:
                problems.append(f"{name} variable repository lists {sorted(values)}")
    # one repository chosen: the panels by repository show it alone
    by_repository = [
        (where, ref, expr)
        for where, ref, expr in all_dashboard_queries()
        if "vcs_repository_name" in promql_label_names(expr)[1]
    ]
    assert len(by_repository) >= 5  # premium requests (2), lines, tasks, completion rate
    for where, ref, expr in by_repository:
        chosen = grafana_to_promql(expr.replace("$repository", BILLED_REPOSITORY))
        try:
            found = prometheus.wait_for(core_expression(chosen), timeout=remaining())
        except TimeoutError:
            problems.append(f"{where} [{ref}] for repository {BILLED_REPOSITORY}: no data")
            continue
        shown = {series["metric"].get("vcs_repository_name") for series in found}
        if shown != {BILLED_REPOSITORY}:
            problems.append(f"{where} [{ref}] for repository {BILLED_REPOSITORY} shows {shown}")
    # every selector on its own, so that a misspelt label value cannot hide behind `or`
    selectors = {s for _, expr, _ in checks for s in promql_selectors(grafana_to_promql(expr))}
    # the released GenAI names among them, each of which must find data on its own
    released = {s.split("{")[0] for s in selectors if s.startswith("gen_ai_client_inference_")}
    assert {
        "gen_ai_client_inference_duration_seconds_bucket",
        "gen_ai_client_inference_usage_input_tokens_total",
        "gen_ai_client_inference_usage_output_tokens_total",
    } <= released
    for selector in sorted(selectors):
        try:
            prometheus.wait_for(selector, timeout=remaining())
        except TimeoutError:
            problems.append(f"no series match {selector}")
    assert bridge.poll() is None, "the bridge died during the test"
    assert problems == [], "\n".join(problems)


def test_alert_rules_evaluate_without_errors(scraped_bridge) -> None:
    prometheus, _, _, _ = scraped_bridge
    prometheus.wait_for("copilot_tasks_total", timeout=DEADLINE_S)
    deadline = time.monotonic() + 10
    while True:  # until every rule has been evaluated once
        [group] = [g for g in prometheus.api("rules")["groups"] if g["name"] == GROUP]
        if all(r["health"] != "unknown" for r in group["rules"]) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert sorted(r["name"] for r in group["rules"]) == sorted(a["alert"] for a in alert_rules())
    assert [(r["name"], r.get("lastError")) for r in group["rules"] if r["health"] != "ok"] == []


def test_the_alerts_on_the_open_task_fire_in_prometheus(scraped_bridge) -> None:
    """The open task of tests/running_log.py, as Prometheus sees it through the bridge: waiting
    11 minutes for a permission, looping, open an hour. The alerts on it fire, each with the
    task's labels, and the stalled one does not: its silence is a person's wait."""
    prometheus, _, _, _ = scraped_bridge
    expected = {
        ("CopilotAgentWaitingForPerson", "permission"),
        ("CopilotAgentLooping", "repeated_call"),
        ("CopilotAgentLooping", "tool_failures"),
        ("CopilotTaskRunaway", "long_running"),
        ("CopilotRepeatedCompactions", "repeated_compactions"),
    }

    def alerts(result: list[dict[str, Any]]) -> set[tuple[str, str]]:
        return {
            (
                series["metric"]["alertname"],
                series["metric"].get("copilot_wait_kind")
                or series["metric"].get("copilot_trouble_signal", ""),
            )
            for series in result
            if series["metric"].get("vcs_repository_name") == RUNNING_REPOSITORY
        }

    found = prometheus.wait_for(
        'ALERTS{alertstate="firing"}',
        timeout=DEADLINE_S,
        check=lambda result: expected <= alerts(result),
    )
    assert alerts(found) == expected
    for series in found:
        if series["metric"]["alertname"] in {name for name, _ in expected}:
            labels = series["metric"]
            assert labels["vcs_owner_name"] == RUNNING_OWNER, labels
            assert (labels["copilot_mode"], labels["gen_ai_agent_name"]) == (
                "interactive",
                "copilot",
            )
    # the silence is over the stalled threshold, and the bridge said so; the rule leaves it out
    silent = prometheus.query(
        f'copilot_tasks_open_silence_seconds{{vcs_repository_name="{RUNNING_REPOSITORY}"}} > 600'
    )
    assert len(silent) == 1


def test_metrics_endpoint_passes_promtool_lint(scraped_bridge) -> None:
    prometheus, bridge, port, workdir = scraped_bridge
    prometheus.wait_for("copilot_tasks_total", timeout=DEADLINE_S)
    text = fetch_metrics(bridge, port, workdir)
    result = subprocess.run(
        [find_binary("promtool"), "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    up = prometheus.wait_for('up{job="otel-bridge"} == 1', timeout=10)
    assert up[0]["metric"]["instance"] == f"127.0.0.1:{port}"


#: The overview's panels on the counters it divides by: none says "No data" on a fresh bridge.
FRESH_PANELS = (
    "Tasks",
    "Task completion rate by mode",
    "Task completion rate by mode (rolling 1h)",
    "Tool error rate",
    "Tasks by outcome",
    # the Running now row: 0 before the first task opens, not "No data"
    "Tasks open now by mode",
    "Oldest open task",
    "Waiting for a person by kind",
    "Longest wait for a person by kind",
    "Tasks in trouble by signal",
    "Sub-agents and shells running",
    "Open tasks by mode",
)


def test_a_fresh_bridge_gives_the_rate_panels_something_to_show(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Before any log is read, copilot_tasks_total and copilot_tool_calls_total exist at 0 for
    the label sets the bridge knows, so the panels that count or divide them show 0, or a
    rate of no task at all (NaN, which the dashboard says as "no tasks yet"), not "No data"."""
    state = tmp_path / "session-state"
    state.mkdir()
    port = free_port()
    bridge = start_bridge(state, port, tmp_path)
    try:
        text = fetch_metrics(bridge, port, tmp_path)
        assert 'copilot_task_outcome="no_signal"' in text
        assert "otel_scope_" not in text  # turned off: one meter, and a version would split series
        start_prometheus: Callable[..., Prometheus] = request.getfixturevalue("prometheus_factory")
        prometheus = start_prometheus([f"127.0.0.1:{port}"])
        prometheus.wait_for("copilot_tasks_total", timeout=DEADLINE_S)
        queries = {
            where.split(": ", 1)[1]: expr
            for where, _, expr in all_dashboard_queries()
            if where.startswith("copilot-overview.json: ")
        }
        for title in FRESH_PANELS:
            result = prometheus.wait_for(grafana_to_promql(queries[title], "1m"), timeout=20)
            values = {series["value"][1] for series in result}
            assert values <= {"0", "NaN"}, (title, values)
        modes = prometheus.query(grafana_to_promql(queries["Task completion rate by mode"], "1m"))
        assert {s["metric"]["copilot_mode"] for s in modes} == {"interactive", "plan", "autopilot"}
    finally:
        stop(bridge)
