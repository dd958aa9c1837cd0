"""What a bridge wrote: its OTLP JSON Lines traces file (`--traces-file`), read with the
official protobuf JSON mapping or as plain JSON, never through the bridge's own code; and whether
its checkpoint says which spans it already delivered."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_bridge import semconv as sc


def read_traces_file(path: Path) -> list[dict]:
    """Decode an OTLP JSON Lines file with the official protobuf JSON mapping."""
    spans = []
    for line in path.read_text().splitlines():
        request = json_format.Parse(line, ExportTraceServiceRequest())
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                        }
                    )
    return spans


def spans_in_file(path: Path) -> list[dict[str, Any]]:
    """Every span the traces file holds, as OTLP JSON, in the order written (a span written
    twice appears twice); none when the file is not there yet."""
    if not path.exists():
        return []
    spans: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        for resource_spans in json.loads(line)["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                spans += scope_spans["spans"]
    return spans


def attribute(span: dict[str, Any], key: str) -> Any:
    """The value of the OTLP JSON span's attribute `key`, or None."""
    for item in span.get("attributes", []):
        if item["key"] == key:
            value = item["value"]
            return next(iter(value.values())) if value else None
    return None


def span_kinds(spans: list[dict[str, Any]]) -> Counter[str]:
    """What kinds of spans: the root (no parent), turns by index, LLM calls, tools by call id."""
    out: Counter[str] = Counter()
    for span in spans:
        if not span.get("parentSpanId"):
            out["root"] += 1
        elif span["name"] == sc.SPAN_TURN:
            out[f"turn {attribute(span, sc.COPILOT_TURN_INDEX)}"] += 1
        elif attribute(span, sc.GEN_AI_TOOL_CALL_ID) is not None:
            out[f"tool {attribute(span, sc.GEN_AI_TOOL_CALL_ID)}"] += 1
        elif attribute(span, sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT:
            out["chat"] += 1
    return out


def checkpoint_names_sent(state_dir: Path, log: Path, spans: list[dict[str, Any]]) -> bool:
    """The checkpoint of `log` in `state_dir` names every span of `spans` (OTLP JSON, as the
    traces file has them) as delivered after its safe place: a SIGKILL now must not make a
    restart send them again. (The checkpoint is saved right after each delivery: until it names
    them all, a kill may repeat the latest.)"""
    path = state_dir / "checkpoints.jsonl"
    if not spans or not path.exists():
        return False
    named: set[int] = set()
    for line in path.read_text().splitlines()[1:]:  # a journal: the latest entry of a log holds
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:  # the line being written now
            continue
        if Path(entry.get("path", "")).resolve() == log.resolve():
            named = set(entry.get("sent") or ())
    return {int(span["spanId"], 16) for span in spans} <= named
