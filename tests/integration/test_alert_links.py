"""The alerts on running tasks link to the task's spans in Jaeger (deploy/prometheus/alerts.yml,
annotation `traces_url`, docs/alerts.md "Links to the task"), and the link finds them.

The gauges the alerts read carry no session id, but `run` exports an open task's turns as they
end, each with the session's repository (vcs.repository.name, vcs.owner.name): the link is a
Jaeger search of the service for that repository over the last hours. Here `run` follows a log
of now whose task is still open (tests/running_log.py) and exports to a real Jaeger, beside a
finished task of the same repository from 12 hours ago and one of another repository; the
link, as promtool renders it for the alert's labels (alerts.test.yml holds the rendering and
`promtool test rules` checks it), is sent to Jaeger's query API as Jaeger's UI sends the
parameters of its /search page (service, tags as JSON, lookback, limit) to /api/traces.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_bridge.export._otel import DEFAULT_SERVICE_NAME
from tests import processes
from tests.builder import Log
from tests.goparts import Jaeger, jaeger_binary
from tests.integration.test_alert_rules import ALERT_TESTS, alert_rules
from tests.processes import terminate
from tests.running_log import OWNER, REPOSITORY, running_log
from tests.traces_file import spans_in_file

DEADLINE_S = 30.0
#: The address the rules give (the compose stack's Jaeger), to be replaced by the user's.
JAEGER_PLACEHOLDER = "http://127.0.0.1:16686"
#: How far back the link searches (`lookback=6h`, and `start` six hours before the alert).
LOOKBACK_S = 6 * 3600


def rendered_links() -> set[str]:
    """Every `traces_url` promtool is told to expect in alerts.test.yml."""
    links = set()
    for case in yaml.safe_load(ALERT_TESTS.read_text())["tests"]:
        for check in case.get("alert_rule_test", []):
            for alert in check.get("exp_alerts") or []:
                if "traces_url" in alert.get("exp_annotations", {}):
                    links.add(alert["exp_annotations"]["traces_url"])
    return links


def test_the_alerts_on_running_tasks_give_one_link() -> None:
    with_link = {r["alert"]: r["annotations"].get("traces_url") for r in alert_rules()}
    running = {name for name, link in with_link.items() if link}
    assert running == {
        "CopilotAgentWaitingForPerson",
        "CopilotAgentLooping",
        "CopilotAgentStalled",
        "CopilotTaskRunaway",
        "CopilotContextWindowFull",
        "CopilotRepeatedCompactions",
    }
    assert len({with_link[name] for name in running}) == 1, "the same link in each"
    links = rendered_links()
    # two repositories, and a task outside a git checkout
    assert len({re.sub(r"&start=[^&]*", "", link) for link in links}) == 3
    for link in links:
        parts = urllib.parse.urlsplit(link)
        assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{JAEGER_PLACEHOLDER}/search"
        query = urllib.parse.parse_qs(parts.query, strict_parsing=True)
        assert query["service"] == [DEFAULT_SERVICE_NAME]
        assert query["lookback"] == ["6h"]
        assert re.fullmatch(r"-?\d+000000", query["start"][0])  # seconds, as microseconds
        tags = json.loads(query.get("tags", ["{}"])[0])
        # attributes every span of a session carries (not the root's alone: the root of an
        # open task is not exported yet)
        assert set(tags) <= {"vcs.repository.name", "vcs.owner.name"}


def as_of_now(link: str) -> str:
    """`link` with the `start` Prometheus gives it when it renders it now: `time() - 21600`
    seconds, in microseconds."""
    start = (int(time.time()) - LOOKBACK_S) * 10**6
    return re.sub(r"&start=-?\d+&", f"&start={start}&", link)


def spans_by_trace(path: Path) -> dict[str, list[dict[str, Any]]]:
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans_in_file(path):
        traces.setdefault(span["traceId"].lower(), []).append(span)
    return traces


def finished_task(session: str, repository: str, ago_ns: int) -> Log:
    """One task that ended `ago_ns` ago, in a git checkout of `repository`."""
    log = Log(session)
    log.now = time.time_ns() - ago_ns
    log.start(context={"cwd": "/src", "gitRoot": "/src", "repository": repository})
    log.user()
    log.simple_turn("0", "u0", [("c1", "bash")])
    log.simple_turn("1", "u1")
    return log


@pytest.fixture
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Any:
    jaeger_binary()  # skip, saying how to build it, when it is not built
    with Jaeger(tmp_path_factory.mktemp("jaeger")) as server:
        yield server


def test_the_link_finds_the_open_task_in_a_real_jaeger(jaeger: Jaeger, tmp_path: Path) -> None:
    state = tmp_path / "session-state"
    logs = {
        "running": running_log(str(uuid.uuid4())),
        "earlier": finished_task(str(uuid.uuid4()), f"{OWNER}/{REPOSITORY}", 12 * 3600 * 10**9),
        "other": finished_task(str(uuid.uuid4()), f"{OWNER}/billing", 60 * 10**9),
    }
    for name, log in logs.items():
        (state / name).mkdir(parents=True)
        (state / name / "events.jsonl").write_bytes(log.jsonl())
    traces_file = tmp_path / "traces.jsonl"
    bridge = processes.start_bridge(
        [
            "run",
            "--session-state",
            str(state),
            "--no-prometheus",
            "--no-checkpoints",
            "--poll-interval",
            "0.1",
            "--traces-file",
            str(traces_file),
        ],
        env=processes.bridge_env({"OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_http_url}),
        log=tmp_path / "bridge.err",
    )
    try:
        deadline = time.monotonic() + DEADLINE_S
        while True:  # the two finished tasks, and the open one's two finished turns
            traces = spans_by_trace(traces_file)
            open_ = [t for t, s in traces.items() if all(x.get("parentSpanId") for x in s)]
            turns = [s for t in open_ for s in traces[t] if s["name"] == "turn"]
            if (len(traces) == 3 and len(turns) == 2) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert len(traces) == 3 and len(turns) == 2, processes.log_tail(tmp_path / "bridge.err")
        for trace_id, spans in traces.items():
            jaeger.wait_for_trace(trace_id, len(spans))
    finally:
        terminate(bridge, 20)
    (running,) = open_
    repository = {
        trace_id: {
            item["value"]["stringValue"]
            for span in spans
            for item in span["attributes"]
            if item["key"] == "vcs.repository.name"
        }
        for trace_id, spans in traces.items()
    }
    # the link as Prometheus renders it now (promtool's clock starts at 0): its `start` six
    # hours ago, in microseconds; Jaeger's API reads `start` (not `lookback`, which only sets
    # the UI's form: without `start` it searched its default range, the 12-hour-old task too)
    [link] = {as_of_now(link) for link in rendered_links() if f"%22{REPOSITORY}%22" in link}
    answer = jaeger.api("/api/traces?" + urllib.parse.urlsplit(link).query)
    found = {trace["traceID"] for trace in answer["data"]}
    assert running in found
    assert found == {running}, {t: repository.get(t) for t in found}
    assert repository[running] == {REPOSITORY}
