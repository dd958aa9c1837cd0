"""A session-state tree made of the real fixture logs, and the readers of what a replay wrote.

Each fixture log is copied into a directory of its own with a fresh name (a UUID derived from
the fixture's name, so the same on every run): the name a session-state directory gives a
session, and the one shards are chosen by.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def session_state(root: Path) -> Path:
    """`root`, filled with one `<uuid>/events.jsonl` per fixture log."""
    for fixture in sorted(FIXTURES.glob("*/events.jsonl")):
        session = root / str(uuid.uuid5(uuid.NAMESPACE_URL, fixture.parent.name))
        session.mkdir(parents=True)
        shutil.copyfile(fixture, session / "events.jsonl")
    return root


def spans_in_order(traces_file: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP JSON Lines traces file, in the order written."""
    spans = []
    for line in traces_file.read_text().splitlines():
        for resource_spans in json.loads(line)["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                spans.extend(scope_spans["spans"])
    return spans


def metric_points(metrics_file: Path) -> dict[str, list[str]]:
    """The last export of a metrics file: each metric's points without their times (the
    export's, not the logs'), as sorted JSON, by metric name."""
    last = json.loads(metrics_file.read_text().splitlines()[-1])
    points: dict[str, list[str]] = {}
    for resource_metrics in last["resourceMetrics"]:
        for scope_metrics in resource_metrics["scopeMetrics"]:
            for metric in scope_metrics["metrics"]:
                for kind in ("sum", "histogram", "gauge"):
                    for point in metric.get(kind, {}).get("dataPoints", []):
                        point.pop("startTimeUnixNano", None)
                        point.pop("timeUnixNano", None)
                        points.setdefault(metric["name"], []).append(
                            json.dumps(point, sort_keys=True)
                        )
    return {name: sorted(values) for name, values in points.items()}
