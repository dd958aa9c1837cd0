"""Write prometheusrule.yaml (beside this file) from deploy/prometheus/alerts.yml.

The alert rules have one source, deploy/prometheus/alerts.yml, which promtool unit-tests
(alerts.test.yml) and docs/alerts.md documents. The Prometheus Operator's PrometheusRule takes
the same `groups` under `spec`
(https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.PrometheusRuleSpec),
so this copies the file's text, indented, below a PrometheusRule header: the rules keep their
comments and block scalars. tests/integration/deploy/test_deploy_kubernetes.py checks that the
output is up to date and that its `spec` loads to exactly what alerts.yml loads to.

    python deploy/kubernetes/gen_prometheusrule.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALERTS = HERE.parent / "prometheus" / "alerts.yml"
OUTPUT = HERE / "prometheusrule.yaml"

HEADER = """\
# Generated from deploy/prometheus/alerts.yml by deploy/kubernetes/gen_prometheusrule.py: edit
# alerts.yml (and its promtool tests), then run the script. Add the label your Prometheus'
# ruleSelector asks for (often release: <helm release name>).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: otel-bridge
  labels:
    app.kubernetes.io/name: otel-bridge
spec:
"""


def render(alerts_text: str) -> str:
    """The PrometheusRule: alerts.yml from its `groups:` line on, indented under `spec:`."""
    lines = alerts_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("groups:"))
    body = "".join(f"  {line}\n" if line.strip() else "\n" for line in lines[start:])
    return HEADER + body


def main(argv: list[str] | None = None) -> int:
    # Arguments are read, not ignored: `--help` printed nothing and wrote the file.
    parser = argparse.ArgumentParser(
        prog="gen_prometheusrule.py",
        description=f"Write {OUTPUT.name} (beside this script) from "
        "deploy/prometheus/alerts.yml: the same rules, under a PrometheusRule header.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"write nothing; exit 1 if {OUTPUT.name} is not what it would write",
    )
    args = parser.parse_args(argv)
    wanted = render(ALERTS.read_text())
    where = OUTPUT.relative_to(HERE.parent.parent)
    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != wanted:
            print(f"{where} is out of date: run {parser.prog}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(wanted)
    print(f"wrote {where}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
