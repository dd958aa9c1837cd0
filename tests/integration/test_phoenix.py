"""End to end in a real trace viewer: `otel-bridge replay` to Arize Phoenix over OTLP/HTTP, and
the trace read back through Phoenix's own APIs is the one the bridge built.

The log is a real Copilot CLI 1.0.102 session in which the main agent's `task` call starts a
general-purpose sub-agent that itself starts another. The same replay also writes its spans with
`--traces-file` (the OpenTelemetry file exporter's OTLP JSON Lines): what Phoenix shows is
compared with that, span by span, and the shape of the tree is checked on its own.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests import paths
from tests.phoenix_server import PhoenixServer, phoenix_fixture  # noqa: F401  (fixture `phoenix`)

ROOT = paths.REPO
LOG = Path("tests/fixtures/subagent_nested/events.jsonl")
PROJECT = "otel-bridge-test"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_ID_KEYS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}  # their length in hex

# One span as a viewer draws it: (trace id, span id, parent span id or None, name,
# start and end in microseconds since the epoch (Phoenix keeps microseconds), status code).
Row = tuple[str, str, str | None, str, int, int, str]


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping of `bytes`
    (what json_format reads) expects base64: recode them, and only them."""
    if isinstance(node, list):
        return [_hex_ids_to_base64(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if (
            key in _ID_KEYS
            and isinstance(value, str)
            and len(value) == _ID_KEYS[key]
            and all(c in "0123456789abcdefABCDEF" for c in value)
        ):
            value = base64.b64encode(bytes.fromhex(value)).decode()
        out[key] = _hex_ids_to_base64(value)
    return out


def bridge_rows(traces_file: Path) -> set[Row]:
    """The spans the bridge wrote to its OTLP JSON Lines file."""
    rows: set[Row] = set()
    for line in traces_file.read_text().splitlines():
        request = json_format.ParseDict(
            _hex_ids_to_base64(json.loads(line)), ExportTraceServiceRequest()
        )
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    rows.add(
                        (
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            span.parent_span_id.hex() or None,
                            span.name,
                            span.start_time_unix_nano // 1000,
                            span.end_time_unix_nano // 1000,
                            _STATUS[span.status.code],
                        )
                    )
    return rows


def _micros(iso: str) -> int:
    return (datetime.fromisoformat(iso) - _EPOCH) // timedelta(microseconds=1)


def phoenix_rows(spans: list[dict[str, Any]]) -> set[Row]:
    """The spans as GET /v1/projects/{project}/spans gives them."""
    return {
        (
            s["context"]["trace_id"],
            s["context"]["span_id"],
            s["parent_id"],
            s["name"],
            _micros(s["start_time"]),
            _micros(s["end_time"]),
            s["status_code"],
        )
        for s in spans
    }


_TRACE_QUERY = """
query ($traceId: ID!) {
  projects { edges { node { name
    trace(traceId: $traceId) {
      traceId numSpans
      rootSpan { spanId name }
      spans(first: 1000) { edges { node { spanId parentId name } } }
    }
  } } }
}
"""


def test_phoenix_shows_the_tree_the_bridge_built(phoenix: PhoenixServer, tmp_path: Path) -> None:
    traces_file = tmp_path / "bridge.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env.update(
        {
            # no OTEL_TRACES_EXPORTER: an endpoint means OTLP, and the file is one more destination
            "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}",
        }
    )
    result = phoenix.run(
        [
            sys.executable,
            "-m",
            "otel_bridge",
            "replay",
            str(LOG),
            "--no-progress",
            "--traces-file",
            str(traces_file),
        ],
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr

    expected = bridge_rows(traces_file)
    assert len(expected) >= 7, expected
    spans = phoenix.wait_for_spans(PROJECT, len(expected))
    seen = phoenix_rows(spans)

    # Span for span: ids, parents, names, times and status as the bridge wrote them.
    assert seen == expected, (
        f"only in Phoenix: {sorted(seen - expected)}\nonly in the file: {sorted(expected - seen)}"
    )
    assert len(spans) == len(expected)  # and no duplicates

    # One trace in the project, the one of the file.
    (trace_id,) = {row[0] for row in expected}
    traces = phoenix.get(f"/v1/projects/{PROJECT}/traces", limit=100)["data"]
    assert [t["trace_id"] for t in traces] == [trace_id]

    # The trace view of the UI (GraphQL) draws the same tree.
    projects = phoenix.graphql(_TRACE_QUERY, traceId=trace_id)["projects"]["edges"]
    (trace,) = [p["node"]["trace"] for p in projects if p["node"]["name"] == PROJECT]
    assert trace["traceId"] == trace_id
    assert trace["numSpans"] == len(expected)
    drawn = {
        (e["node"]["spanId"], e["node"]["parentId"], e["node"]["name"])
        for e in trace["spans"]["edges"]
    }
    assert drawn == {(row[1], row[2], row[3]) for row in expected}

    # On its own: one root, `invoke_agent copilot`, and the sub-agent chain two levels deep.
    by_id = {row[1]: row for row in seen}
    roots = [row for row in seen if row[2] is None]
    assert [row[3] for row in roots] == ["invoke_agent copilot"]
    assert trace["rootSpan"] == {"spanId": roots[0][1], "name": "invoke_agent copilot"}

    def path_to_root(row: Row) -> list[str]:
        names = [row[3]]
        while row[2] is not None:
            row = by_id[row[2]]  # a missing parent would be a KeyError: an orphan
            names.append(row[3])
        return names

    sub_agents = [row for row in seen if row[3] == "invoke_agent general-purpose"]
    assert len(sub_agents) == 2
    deepest = max((path_to_root(row) for row in sub_agents), key=len)
    assert deepest == [
        "invoke_agent general-purpose",
        "execute_tool task",
        "turn",
        "invoke_agent general-purpose",
        "execute_tool task",
        "turn",
        "invoke_agent copilot",
    ]
    for row in sub_agents:
        assert by_id[row[2]][3] == "execute_tool task"


# --- what a viewer shows of a task: its input, output, kinds and title (docs/viewers.md) ------

_VIEW_QUERY = """
query ($traceId: ID!) {
  projects { edges { node { name
    trace(traceId: $traceId) {
      rootSpan { name input { value mimeType } output { value mimeType } attributes }
      spans(first: 1000) { edges { node {
        name spanKind attributes input { value mimeType } output { value mimeType }
      } } }
    }
  } } }
}
"""
_SESSION_NAME = "Nested delegation, as the CLI lists it"


def _log_copy(directory: Path, session_id: str) -> Path:
    """The fixture under another session id (its trace and span ids are derived from it: the
    same ids sent to a second project would be taken for the first project's spans), beside a
    workspace.yaml that names the session as the CLI does."""
    original = json.loads(LOG.read_text().splitlines()[0])["data"]["sessionId"]
    directory.mkdir()
    log = directory / "events.jsonl"
    log.write_text(LOG.read_text().replace(original, session_id))
    (directory / "workspace.yaml").write_text(
        f"id: {session_id}\nclient_name: github/cli\nname: '{_SESSION_NAME}'\n"
    )
    return log


def _first_and_last(log: Path) -> tuple[str, str]:
    """The log's user message and the main agent's last answer (sub-agents' events name their
    parent call or come from `agent-...`)."""
    events = [json.loads(line) for line in log.read_text().splitlines()]
    main = [
        e
        for e in events
        if not e["data"].get("parentToolCallId")
        and not str(e["data"].get("source", "")).startswith("agent-")
    ]
    prompt = next(e["data"]["content"] for e in main if e["type"] == "user.message")
    answers = [
        e["data"]["content"]
        for e in main
        if e["type"] == "assistant.message" and e["data"].get("content")
    ]
    return prompt, answers[-1]


@pytest.mark.parametrize("capture", [True, False], ids=["content-on", "content-off"])
def test_phoenix_shows_the_task_input_output_and_one_kind_of_turn(
    phoenix: PhoenixServer, tmp_path: Path, capture: bool
) -> None:
    """As a new user sees a replay in Phoenix: with --capture-content the trace's input and
    output columns (the root span's input.value / output.value, as the API gives them) are the
    user's message and the final answer, and the root carries a title; without it, none of
    that text. Either way every turn is one kind, CHAIN, and the root stays an AGENT named
    `invoke_agent copilot`."""
    project = f"otel-bridge-viewers-{'on' if capture else 'off'}"
    session_id = f"00000000-0000-4000-8000-00000000000{1 if capture else 2}"
    log = _log_copy(tmp_path / session_id, session_id)
    prompt, answer = _first_and_last(log)
    assert answer == "Nested delegation finished. Done."
    traces_file = tmp_path / "bridge.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        }
    )
    command = [sys.executable, "-m", "otel_bridge", "replay", str(log), "--no-progress"]
    command += ["--traces-file", str(traces_file)] + (["--capture-content"] if capture else [])
    result = phoenix.run(command, env=env, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr

    expected = bridge_rows(traces_file)
    phoenix.wait_for_spans(project, len(expected))
    (trace_id,) = {row[0] for row in expected}
    projects = phoenix.graphql(_VIEW_QUERY, traceId=trace_id)["projects"]["edges"]
    (trace,) = [p["node"]["trace"] for p in projects if p["node"]["name"] == project]
    spans = [edge["node"] for edge in trace["spans"]["edges"]]
    assert len(spans) == len(expected)
    root = trace["rootSpan"]
    root_attributes = json.loads(root["attributes"])
    assert root["name"] == "invoke_agent copilot"

    kinds: dict[str, set[str]] = {}
    for span in spans:
        kinds.setdefault(span["name"].split(" ")[0], set()).add(span["spanKind"])
    assert kinds == {
        "invoke_agent": {"agent"},
        "turn": {"chain"},
        "chat": {"llm"},
        "execute_tool": {"tool"},
    }

    everything = json.dumps(trace)
    if capture:
        assert root["input"] == {"value": prompt, "mimeType": "text"}
        assert root["output"] == {"value": answer, "mimeType": "text"}
        copilot = root_attributes["copilot"]
        assert copilot["task"]["title"] == "MAIN-TASK: delegate to an agent that delegates again."
        assert copilot["session"]["name"] == _SESSION_NAME
        # every LLM call and sub-agent shows what its agent was asked
        asked = sorted(s["input"]["value"] for s in spans if s["name"].startswith("chat "))
        outer = "SUB-OUTER: delegate `echo deep` to another agent."
        inner = "SUB-INNER: run `echo deep` and report."
        assert asked == sorted([prompt, outer, inner] * 2)  # two turns each
        sub_agents = [s for s in spans if s["name"] == "invoke_agent general-purpose"]
        assert {s["input"]["value"] for s in sub_agents} == {outer, inner}
    else:
        assert root["input"] is None and root["output"] is None
        copilot = root_attributes["copilot"]
        assert "title" not in copilot["task"] and "name" not in copilot.get("session", {})
        for text in (prompt, answer, _SESSION_NAME, "MAIN-TASK", "Inner agent"):
            assert text not in everything
