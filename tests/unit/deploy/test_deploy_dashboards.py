"""The dashboards' trace links work with Jaeger as well as Tempo.

A Grafana datasource variable lists the data sources of one plugin type only, and a TraceQL
query means nothing to Jaeger, so each "Explore traces" link (Tempo, through the
`traces_datasource` variable) has a twin right after it that opens the same traces in Jaeger
(through `jaeger_datasource`): a Jaeger search (Grafana's Jaeger query model: queryType
"search", service, operation, logfmt tags; https://grafana.com/docs/grafana/latest/datasources/jaeger/)
for the service of the `traces_service` variable. Jaeger's search matches a tag's value exactly
(no negation, no regular expressions, no "or"), and its `error=true` finds nothing in Jaeger
v1.76.0's memory store (the `error` filter is read as a boolean, and Grafana sends the string
"true"), so the twins search for attributes the bridge writes: "outcome != completed" is
copilot.task.failed=true (the tasks that failed: tests/integration/test_jaeger.py checks that the
real Jaeger gives exactly those), failed tool calls copilot.tool.outcome=error, traces with errors
(a panel about session errors) copilot.task.outcome=error. None names an operation: the root
is `invoke_agent <agent>`, another name with `--agent`; every trace is one task.
The compose stack (deploy/compose/) provisions a Jaeger data source, which the variable picks.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest

from otel_bridge import semconv
from otel_bridge.export._otel import DEFAULT_SERVICE_NAME
from tests.unit.deploy.test_dashboards import DASHBOARD_FILES, iter_panels, load_dashboard


def explore_query(url: str) -> dict[str, Any]:
    """The traces pane of a Grafana /explore URL: its datasource and one query."""
    panes = json.loads(urllib.parse.unquote(url.split("panes=", 1)[1]))
    pane: dict[str, Any] = panes["traces"]
    assert len(pane["queries"]) == 1
    return pane


def link_lists(dashboard: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The dashboard's links and each panel's, as lists."""
    lists = [dashboard["links"]]
    lists += [panel["links"] for panel in iter_panels(dashboard["panels"]) if panel.get("links")]
    return lists


@pytest.fixture(params=DASHBOARD_FILES)
def dashboard(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load_dashboard(request.param)


def test_the_trace_variables_select_tempo_jaeger_and_the_service(
    dashboard: dict[str, Any],
) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert (variables["traces_datasource"]["type"], variables["traces_datasource"]["query"]) == (
        "datasource",
        "tempo",
    )
    assert (variables["jaeger_datasource"]["type"], variables["jaeger_datasource"]["query"]) == (
        "datasource",
        "jaeger",
    )
    service = variables["traces_service"]
    assert service["type"] == "textbox"
    assert service["query"] == service["current"]["value"] == DEFAULT_SERVICE_NAME


def test_every_tempo_link_has_a_jaeger_twin(dashboard: dict[str, Any]) -> None:
    twins = 0
    for links in link_lists(dashboard):
        trace_links = [link for link in links if "/explore?" in link.get("url", "")]
        assert len(trace_links) % 2 == 0
        for tempo, jaeger in zip(trace_links[::2], trace_links[1::2], strict=True):
            assert tempo["title"].endswith(" (Tempo)") and jaeger["title"].endswith(" (Jaeger)")
            assert tempo["title"][: -len("(Tempo)")] == jaeger["title"][: -len("(Jaeger)")]
            tempo_pane, jaeger_pane = explore_query(tempo["url"]), explore_query(jaeger["url"])
            assert tempo_pane["datasource"] == "${traces_datasource}"
            assert tempo_pane["queries"][0]["datasource"]["type"] == "tempo"
            assert jaeger_pane["datasource"] == "${jaeger_datasource}"
            query = jaeger_pane["queries"][0]
            assert query["datasource"] == {"type": "jaeger", "uid": "${jaeger_datasource}"}
            assert query["queryType"] == "search"
            assert query["service"] == "${traces_service}", "a Jaeger search needs a service"
            assert jaeger_pane["range"] == tempo_pane["range"]
            assert jaeger.get("targetBlank") == tempo.get("targetBlank")
            _check_jaeger_search(tempo_pane["queries"][0]["query"], query)
            twins += 1
    assert twins >= 2


def _check_jaeger_search(traceql: str, query: dict[str, Any]) -> None:
    """The Jaeger search asks for what the TraceQL asks, as near as Jaeger can."""
    tags = dict(pair.split("=", 1) for pair in query.get("tags", "").split())
    assert (
        "operation" not in query
    )  # names vary (--agent); tests/integration/test_jaeger.py runs them
    assert "error" not in tags  # finds nothing in Jaeger v1.76.0 (the module's docstring)
    if "outcome!=" in traceql:
        assert tags == {semconv.COPILOT_TASK_FAILED: "true"}
    elif "execute_tool" in traceql and "status=error" in traceql:
        assert tags == {semconv.COPILOT_TOOL_OUTCOME: semconv.TOOL_OUTCOME_ERROR}
    elif "status=error" in traceql:
        assert tags == {semconv.COPILOT_TASK_OUTCOME: semconv.OUTCOME_ERROR}
    elif "copilot.task.compactions>0" in traceql:
        # no "greater than" in a Jaeger search: the tasks of the signal (3 compactions), whose
        # span event carries it
        assert tags == {semconv.COPILOT_TROUBLE_SIGNAL: semconv.TROUBLE_COMPACTIONS}
    else:
        assert tags == {}
