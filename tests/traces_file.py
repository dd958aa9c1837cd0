"""Reading an OTLP JSON Lines traces file (`--traces-file`) with the official protobuf JSON
mapping, never through the bridge's own code."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


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
