"""End to end in a real Jaeger: `otel-bridge replay` of real Copilot CLI logs to Jaeger v2 over
OTLP, and the traces read back through Jaeger's query API are the ones the bridge built.

Every log under tests/fixtures is replayed once, with `--traces-file` beside the OTLP export:
each trace the file holds is then fetched by its id, from /api/v3/traces/{id} (OTLP JSON,
nanosecond times) and from /api/traces/{id} (what Jaeger's UI reads: references and
microseconds), and must have the same spans: ids, parents, names, times, status.
Jaeger is built by scripts/build_test_parts.sh (tests/goparts.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from otel_bridge.export._otel import DEFAULT_SERVICE_NAME
from tests import paths
from tests.goparts import Jaeger, jaeger_binary
from tests.traces_file import attribute, spans_in_file

ROOT = paths.REPO
FIXTURES = ROOT / "tests" / "fixtures"

# One span: (span id, parent span id or "", name, start ns, end ns, status code 0/1/2)
Span = tuple[str, str, str, int, int, int]
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def _status(span: dict[str, Any]) -> int:
    code = span.get("status", {}).get("code", 0)
    return _STATUS_NAMES[code] if isinstance(code, str) else int(code)


def otlp_span(span: dict[str, Any]) -> Span:
    """One span of OTLP JSON (the traces file, or Jaeger's api/v3), ids in hex."""
    return (
        span["spanId"].lower(),
        span.get("parentSpanId", "").lower(),
        span["name"],
        int(span["startTimeUnixNano"]),
        int(span["endTimeUnixNano"]),
        _status(span),
    )


def as_jaeger_stores(span: Span) -> Span:
    """The span as Jaeger gives it back: a span that does not end after it starts (the bridge's
    zero-length spans: a tool that completed in the same millisecond) ends 1 ns after its start
    (Jaeger v1.76.0, internal/jptrace/sanitizer/negative_duration_santizer.go). Nothing else
    changes."""
    span_id, parent, name, start, end, status = span
    return (span_id, parent, name, start, max(end, start + 1), status)


def traces_in_file(path: Path) -> dict[str, set[Span]]:
    """trace id -> its spans, from an OTLP JSON Lines file (`--traces-file`)."""
    traces: dict[str, set[Span]] = defaultdict(set)
    for span in spans_in_file(path):
        traces[span["traceId"].lower()].add(otlp_span(span))
    return dict(traces)


def replay(paths: list[Path], env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    """`otel-bridge replay` of this checkout (PYTHONPATH), as a user runs it."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    full.update(env)
    full["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "otel_bridge", "replay", "--no-progress", *map(str, paths), *extra],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A Jaeger of its own for each test: the bridge's ids are the same at every replay of a
    log, so two tests sharing one would see each other's spans in the same traces."""
    jaeger_binary()  # skip, saying how to build it, when it is not built
    with Jaeger(tmp_path_factory.mktemp("jaeger")) as server:
        yield server


def _ui_span(span: dict[str, Any]) -> tuple[str, str, str, int, int, bool]:
    """One span of /api/traces/{id}: (span id, CHILD_OF parent or "", operation name,
    start µs, duration µs, error tag)."""
    parents = [r["spanID"] for r in span.get("references", []) if r["refType"] == "CHILD_OF"]
    tags = {t["key"]: t["value"] for t in span.get("tags", [])}
    return (
        span["spanID"],
        parents[0] if parents else "",
        span["operationName"],
        span["startTime"],
        span["duration"],
        tags.get("error") is True or tags.get("otel.status_code") == "ERROR",
    )


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_jaeger_holds_the_traces_the_bridge_built(
    jaeger: Jaeger, tmp_path: Path, protocol: str
) -> None:
    traces_file = tmp_path / "bridge.jsonl"
    endpoint = f"http://{jaeger.otlp_grpc}" if protocol == "grpc" else jaeger.otlp_http_url
    done = replay(
        [FIXTURES],
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        },
        "--traces-file",
        str(traces_file),
    )
    assert done.returncode == 0, done.stderr
    expected = traces_in_file(traces_file)
    logs = len(list(FIXTURES.glob("*/events.jsonl")))
    assert len(expected) >= logs  # every log gave at least one trace
    errors = 0
    for trace_id, spans in expected.items():
        stored = jaeger.wait_for_trace(trace_id, len(spans))
        assert {otlp_span(s) for s in stored} == {as_jaeger_stores(s) for s in spans}, trace_id
        errors += any(span[5] == 2 for span in spans)
        # the UI's own API: the same tree, in microseconds, errors tagged
        ui = {_ui_span(s) for s in jaeger.trace(trace_id)}
        assert ui == {
            (sid, parent, name, start // 1000, (end - start) // 1000, status == 2)
            for sid, parent, name, start, end, status in map(as_jaeger_stores, spans)
        }, trace_id
    assert errors > 0  # the fixtures have failed tools and sessions: ERROR reached Jaeger too


def test_jaeger_lists_the_service_and_its_operations(jaeger: Jaeger, tmp_path: Path) -> None:
    """What the UI's search form offers comes from the stored spans: the service name set with
    OTEL_SERVICE_NAME, and the span names as operations."""
    traces_file = tmp_path / "bridge.jsonl"
    done = replay(
        [FIXTURES / "subagent_nested"],
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_http_url,
            "OTEL_SERVICE_NAME": "otel-bridge-services-test",
        },
        "--traces-file",
        str(traces_file),
    )
    assert done.returncode == 0, done.stderr
    expected = traces_in_file(traces_file)
    for trace_id, spans in expected.items():
        jaeger.wait_for_trace(trace_id, len(spans))
    assert "otel-bridge-services-test" in jaeger.api("/api/services")["data"]
    operations = set(jaeger.api("/api/services/otel-bridge-services-test/operations")["data"])
    assert operations == {span[2] for spans in expected.values() for span in spans}


# --- what a person finds in Jaeger: operations, searches, the trace list ------------------------

#: Every span name the fixture logs give: a fixed set, whatever their length (a turn's index is
#: its copilot.turn.index, not part of its name: tests/integration/test_span_names.py).
FIXTURE_OPERATIONS = {
    "invoke_agent copilot",
    "invoke_agent explore",
    "invoke_agent general-purpose",
    "invoke_agent reviewer",
    "turn",
    "chat gpt-4.1",
    "execute_tool bash",
    "execute_tool create",
    "execute_tool demo-crash",
    "execute_tool demo-lookup",
    "execute_tool edit",
    "execute_tool read_agent",
    "execute_tool read_bash",
    "execute_tool skill",
    "execute_tool task",
    "execute_tool task_complete",
    "execute_tool view",
}


class Replayed:
    """Every fixture log replayed into one Jaeger under the dashboards' default service, and
    what the bridge sent (its --traces-file): read-only for the tests that use it."""

    def __init__(self, jaeger: Jaeger, traces_file: Path) -> None:
        self.jaeger = jaeger
        self.service = DEFAULT_SERVICE_NAME
        self.spans: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for span in spans_in_file(traces_file):
            self.spans[span["traceId"].lower()].append(span)

    def roots(self) -> dict[str, dict[str, Any]]:
        """trace id -> its root span (OTLP JSON)."""
        return {
            trace_id: next(s for s in spans if not s.get("parentSpanId"))
            for trace_id, spans in self.spans.items()
        }

    def search(self, **params: str) -> list[dict[str, Any]]:
        """GET /api/traces (the search Jaeger's UI and Grafana's Jaeger data source make), over
        all time, with room for every trace: the traces found, as the UI's list gets them."""
        query = {"service": self.service, "limit": "1000", "start": "0"}
        query["end"] = str(9 * 10**15)  # microseconds: far ahead, and within int64 nanoseconds
        query.update(params)
        answer = self.jaeger.api("/api/traces?" + urllib.parse.urlencode(query))
        return list(answer["data"]) if answer else []

    def found(self, **params: str) -> set[str]:
        return {trace["traceID"] for trace in self.search(**params)}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    jaeger_binary()
    work = tmp_path_factory.mktemp("replayed")
    with Jaeger(work) as server:
        traces_file = work / "bridge.jsonl"
        done = replay(
            [FIXTURES],
            {"OTEL_EXPORTER_OTLP_ENDPOINT": server.otlp_http_url},
            "--traces-file",
            str(traces_file),
        )
        assert done.returncode == 0, done.stderr
        result = Replayed(server, traces_file)
        for trace_id, spans in result.spans.items():
            server.wait_for_trace(trace_id, len(spans))
        yield result


def test_the_fixtures_give_jaeger_a_small_fixed_set_of_operations(replayed: Replayed) -> None:
    operations = replayed.jaeger.api(f"/api/services/{replayed.service}/operations")["data"]
    assert set(operations) == FIXTURE_OPERATIONS


#: The outcomes of a failed task (docs/metrics.md, copilot.tasks): what copilot.task.failed says.
FAILED_OUTCOMES = {"failed", "error", "aborted"}


def test_jaeger_finds_the_failed_tasks(replayed: Replayed) -> None:
    """The search the dashboards' Jaeger links and the docs give for failed tasks returns
    exactly the fixtures' failed tasks (4 aborted, 1 ended by a session error)."""
    roots = replayed.roots()
    failed = {
        t for t, root in roots.items() if attribute(root, "copilot.task.outcome") in FAILED_OUTCOMES
    }
    assert len(failed) == 5
    assert replayed.found(tags=json.dumps({"copilot.task.failed": "true"})) == failed
    assert replayed.found(tags=json.dumps({"copilot.task.failed": "false"})) == set(roots) - failed


def _grafana_search(query: dict[str, Any]) -> dict[str, str]:
    """A Grafana Jaeger search (queryType search: service, operation, logfmt tags) as the
    /api/traces parameters Grafana's data source sends (tags as a JSON object)."""
    params = {}
    if query.get("operation"):
        params["operation"] = query["operation"]
    if query.get("tags"):
        tags = dict(pair.split("=", 1) for pair in query["tags"].split())
        params["tags"] = json.dumps(tags)
    return params


def _jaeger_links() -> list[tuple[str, dict[str, Any]]]:
    # Imported here: they need the Grafana SDK (a test extra), which the rest of this module
    # does not (scripts/test_oldest.sh runs it without, deselecting the dashboards' test).
    from tests.unit.deploy.test_dashboards import DASHBOARD_FILES, load_dashboard
    from tests.unit.deploy.test_deploy_dashboards import explore_query, link_lists

    links = []
    for name in DASHBOARD_FILES:
        for group in link_lists(load_dashboard(name)):
            for link in group:
                if link.get("title", "").endswith(" (Jaeger)"):
                    links.append((link["title"], explore_query(link["url"])["queries"][0]))
    return links


@pytest.mark.grafana  # conftest.EXTRAS: the rest of the module runs without it
def test_every_jaeger_link_of_the_dashboards_finds_what_it_says(replayed: Replayed) -> None:
    """Each Jaeger search of the dashboards, run against the real Jaeger, finds traces, and
    only traces of the kind its title names."""
    roots = replayed.roots()

    def failed_tool(trace_id: str) -> bool:
        return any(
            attribute(s, "gen_ai.operation.name") == "execute_tool"
            and _status(s) == 2
            and attribute(s, "error.type") != "aborted"
            for s in replayed.spans[trace_id]
        )

    meaning = {
        "Explore traces (Jaeger)": lambda t: True,
        "Explore traces of tasks that did not complete (Jaeger)": lambda t: (
            attribute(roots[t], "copilot.task.outcome") in FAILED_OUTCOMES
        ),
        "Explore traces of failed tool calls (Jaeger)": failed_tool,
        "Explore traces with errors (Jaeger)": lambda t: any(
            _status(s) == 2 for s in replayed.spans[t]
        ),
        # no recorded task compacts (test_jaeger_finds_the_tasks_that_compacted_their_context)
        COMPACTED: lambda t: False,
    }
    links = _jaeger_links()
    assert {title for title, _ in links} == set(meaning)
    for title, query in links:
        assert query["service"] == "${traces_service}"
        found = replayed.found(**_grafana_search(query))
        expected = {t for t in roots if meaning[title](t)}
        assert found or title == COMPACTED, (title, query)
        assert found <= expected, (title, query)
        if title != "Explore traces with errors (Jaeger)":  # the session errors among them
            assert found == expected, (title, query)


COMPACTED = "Explore traces of tasks that compacted their context (Jaeger)"


@pytest.mark.grafana  # reads the dashboards' links through the Grafana SDK (a test extra)
def test_jaeger_finds_the_tasks_that_compacted_their_context(tmp_path: Path) -> None:
    """The dashboards' Jaeger link for compactions searches the repeated_compactions signal,
    a field of a span event on the task's root: Jaeger finds the task that compacted 3 times,
    not the one that compacted twice. Built from the CLI schema's fields (no recorded task
    compacts: tests/fixtures/compaction_manual compacts between tasks)."""
    from tests.builder import Log

    jaeger_binary()
    log = Log("5e551011-0000-4000-8000-00000000c0de")
    log.start()
    for interaction, times in (("i1", 3), ("i2", 2)):
        log.user(interaction=interaction)
        log.turn("0", interaction)
        log.usage(f"u-{interaction}", inputTokens=100_000, maxPromptTokens=128_000)
        for _ in range(times):
            log.add("session.compaction_start", currentTokens=110_000, tokenLimit=128_000)
            log.add(
                "session.compaction_complete",
                success=True,
                preCompactionTokens=110_000,
                postCompactionTokens=30_000,
                tokensRemoved=80_000,
            )
        log.message([], turn="0")
        log.turn_end("0")
    session = tmp_path / "session-state" / log.session
    session.mkdir(parents=True)
    (session / "events.jsonl").write_bytes(log.jsonl())
    (tmp_path / "jaeger").mkdir()
    with Jaeger(tmp_path / "jaeger") as server:
        traces_file = tmp_path / "bridge.jsonl"
        done = replay(
            [tmp_path / "session-state"],
            {"OTEL_EXPORTER_OTLP_ENDPOINT": server.otlp_http_url},
            "--traces-file",
            str(traces_file),
        )
        assert done.returncode == 0, done.stderr
        result = Replayed(server, traces_file)
        for trace_id, spans in result.spans.items():
            server.wait_for_trace(trace_id, len(spans))
        roots = result.roots()
        compacted = {
            # OTLP JSON writes an intValue as a string
            t
            for t, root in roots.items()
            if attribute(root, "copilot.task.compactions") == "3"
        }
        assert len(roots) == 2 and len(compacted) == 1
        (query,) = [query for title, query in _jaeger_links() if title == COMPACTED]
        assert result.found(**_grafana_search(query)) == compacted


def _list_title(trace: dict[str, Any]) -> str:
    """What Jaeger's trace list shows a trace as (jaeger-ui's getTraceName): the service and
    operation of its span with no parent in the trace."""
    ids = {span["spanID"] for span in trace["spans"]}
    (root,) = [
        span
        for span in trace["spans"]
        if not any(r["spanID"] in ids for r in span.get("references", []))
    ]
    return f"{trace['processes'][root['processID']]['serviceName']}: {root['operationName']}"


def test_jaeger_lists_the_fixtures_as_two_names(replayed: Replayed) -> None:
    """Without --root-name every task of the default agent reads the same in the list."""
    titles = [_list_title(trace) for trace in replayed.search()]
    assert len(titles) == len(replayed.spans)
    assert set(titles) == {
        "github-copilot: invoke_agent copilot",
        "github-copilot: invoke_agent reviewer",
    }


ROOT_NAME = "invoke_agent {agent} · {repository} · {mode} · {outcome}"


def test_with_root_name_jaeger_lists_tasks_told_apart(jaeger: Jaeger, tmp_path: Path) -> None:
    traces_file = tmp_path / "bridge.jsonl"
    done = replay(
        [FIXTURES],
        {"OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_http_url},
        "--root-name",
        ROOT_NAME,
        "--traces-file",
        str(traces_file),
    )
    assert done.returncode == 0, done.stderr
    replayed = Replayed(jaeger, traces_file)
    for trace_id, spans in replayed.spans.items():
        jaeger.wait_for_trace(trace_id, len(spans))
    expected = {}
    for trace_id, root in replayed.roots().items():
        facts = [
            attribute(root, key) or "-"
            for key in ("gen_ai.agent.name", "copilot.repository", "copilot.mode")
        ]
        facts.append(attribute(root, "copilot.task.outcome"))
        expected[trace_id] = "github-copilot: invoke_agent " + " · ".join(facts)
    listed = {trace["traceID"]: _list_title(trace) for trace in replayed.search()}
    assert listed == expected
    titles = set(listed.values())
    assert (
        "github-copilot: invoke_agent copilot · octo-org/demo-project · interactive · no_signal"
        in titles
    )
    assert "github-copilot: invoke_agent copilot · - · autopilot · completed" in titles
    assert "github-copilot: invoke_agent copilot · - · interactive · aborted" in titles
    assert "github-copilot: invoke_agent copilot · - · interactive · error" in titles
    # still a small, fixed set of operations: the root names are the facts' combinations
    operations = set(jaeger.api(f"/api/services/{replayed.service}/operations")["data"])
    root_names = {title.split(": ", 1)[1] for title in titles}
    assert (
        operations
        == (FIXTURE_OPERATIONS - {"invoke_agent copilot", "invoke_agent reviewer"}) | root_names
    )
    assert len(root_names) == 7  # 43 tasks
