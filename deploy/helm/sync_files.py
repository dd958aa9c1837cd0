"""Copy the files the chart ships from their one source into deploy/helm/otel-bridge/files/,
and write the values table of its README.md from the comments of values.yaml.

`helm` reads only the files inside a chart's directory, so the alert rules
(deploy/prometheus/alerts.yml, which promtool tests and docs/alerts.md documents) and the
Grafana dashboards (dashboards/*.json) are copied there byte for byte: the PrometheusRule and
the dashboard ConfigMaps are made from the copies. tests/unit/deploy/test_helm_chart.py fails
when a copy differs from its source, and when the README's table is not the one made from
values.yaml; run this after editing any of them.

    python deploy/helm/sync_files.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
CHART = ROOT / "deploy" / "helm" / "otel-bridge"
FILES = CHART / "files"
BEGIN, END = (
    "<!-- values table: begin (deploy/helm/sync_files.py) -->",
    "<!-- values table: end -->",
)
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.-]+):")
_DOC = re.compile(r"^ *# -- ?(?P<text>.*)$")
_MORE = re.compile(r"^ *#(?: (?P<text>.*))?$")


class UndocumentedValue(ValueError):
    """A key of values.yaml with no `# --` comment, which is not a section of documented ones."""


def documented_values(text: str) -> list[tuple[str, str]]:
    """(dotted path, description) of each value of values.yaml, in file order.

    A value is a key with a comment that starts `# --` right above it (continued by the
    comment lines below that one); what is under it is part of the value. A key without one
    must be a section: a mapping whose keys are all documented, else UndocumentedValue.
    """
    found: list[tuple[str, str]] = []
    stack: list[tuple[int, str]] = []  # (indent, key) of the sections above
    comment: list[str] | None = None
    skip_below: int | None = None  # indent of a documented value whose lines are skipped
    for number, line in enumerate(text.splitlines(), 1):
        if skip_below is not None:
            inside = line.startswith(" " * (skip_below + 1)) or line.lstrip().startswith("- ")
            if not line.strip() or inside:
                continue
            skip_below = None
        doc, more, key = _DOC.match(line), _MORE.match(line), _KEY.match(line)
        if doc:
            comment = [doc.group("text")]
        elif more:
            if comment is not None:
                comment.append(more.group("text") or "")
        elif key:
            indent = len(key.group("indent"))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = ".".join([k for _, k in stack] + [key.group("key")])
            if comment is not None:
                found.append((path, " ".join(comment).strip()))
                skip_below = indent
            elif line.rstrip().endswith(":"):
                stack.append((indent, key.group("key")))
            else:
                raise UndocumentedValue(f"values.yaml line {number}: {path} has no `# --` comment")
            comment = None
        else:
            comment = None
    return found


def _lookup(values: dict[str, Any], path: str) -> Any:
    node: Any = values
    for key in path.split("."):
        node = node[key]
    return node


def values_table(text: str) -> str:
    """README.md's table: each value, its default (JSON) and its description."""
    values = yaml.safe_load(text)
    rows = ["| value | default | description |", "|---|---|---|"]
    for path, description in documented_values(text):
        default = json.dumps(_lookup(values, path)).replace("|", "\\|")
        description = description.replace("|", "\\|")
        rows.append(f"| `{path}` | `{default}` | {description} |")
    return "\n".join(rows) + "\n"


def readme_with_table(readme: str, values_text: str) -> str:
    """README.md with the text between its table markers replaced by values_table()."""
    head, _, rest = readme.partition(BEGIN + "\n")
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{values_table(values_text)}{END}{tail}"


def sources() -> dict[Path, Path]:
    """Each copy in the chart -> its source in the repository."""
    pairs = {FILES / "alerts.yml": ROOT / "deploy" / "prometheus" / "alerts.yml"}
    for dashboard in sorted((ROOT / "dashboards").glob("*.json")):
        pairs[FILES / "dashboards" / dashboard.name] = dashboard
    return pairs


def main() -> int:
    wanted = sources()
    for stale in (FILES / "dashboards").glob("*.json"):
        if stale not in wanted:
            stale.unlink()
    for copy, source in wanted.items():
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(source.read_bytes())
        print(f"wrote {copy.relative_to(ROOT)}", file=sys.stderr)
    readme = CHART / "README.md"
    readme.write_text(readme_with_table(readme.read_text(), (CHART / "values.yaml").read_text()))
    print(f"wrote {readme.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
