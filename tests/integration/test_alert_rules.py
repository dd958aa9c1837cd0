"""The Prometheus alerting rules (deploy/prometheus/alerts.yml): valid for promtool, unit-tested
by promtool (a firing and a quiet case for every alert), and documented in docs/alerts.md."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
import yaml

from tests import paths
from tests.prometheus import find_binary

ROOT = paths.REPO
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
ALERTS = PROMETHEUS_DIR / "alerts.yml"
ALERT_TESTS = PROMETHEUS_DIR / "alerts.test.yml"
EXAMPLE_CONFIG = PROMETHEUS_DIR / "prometheus.yml"
ALERTS_DOC = ROOT / "docs" / "alerts.md"
GROUP = "otel-bridge"
SEVERITIES = {"critical", "warning", "info"}


def alert_rules() -> list[dict[str, Any]]:
    """Every alerting rule of the `otel-bridge` group, as loaded from alerts.yml."""
    document = yaml.safe_load(ALERTS.read_text())
    groups = [g for g in document["groups"] if g["name"] == GROUP]
    assert len(groups) == 1, f"alerts.yml must hold exactly one rule group named {GROUP!r}"
    return [rule for rule in groups[0]["rules"] if "alert" in rule]


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


def doc_sections() -> dict[str, str]:
    """docs/alerts.md level-2 sections: anchor -> text of the section."""
    sections: dict[str, str] = {}
    anchor = None
    for line in ALERTS_DOC.read_text().splitlines():
        if line.startswith("## "):
            anchor = github_anchor(line[3:])
            sections[anchor] = ""
        elif anchor is not None:
            sections[anchor] += line + "\n"
    return sections


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [find_binary("promtool"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_promtool_check_rules() -> None:
    result = promtool("check", "rules", str(ALERTS.relative_to(ROOT)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout


def test_promtool_rule_unit_tests() -> None:
    result = promtool("test", "rules", str(ALERT_TESTS.relative_to(ROOT)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_check_example_config() -> None:
    result = promtool("check", "config", str(EXAMPLE_CONFIG.relative_to(ROOT)))
    assert result.returncode == 0, result.stdout + result.stderr
    config = yaml.safe_load(EXAMPLE_CONFIG.read_text())
    assert config["rule_files"] == ["alerts.yml"]
    [job] = config["scrape_configs"]
    assert job["job_name"] == GROUP
    assert job["static_configs"] == [{"targets": ["127.0.0.1:9464"]}]


def test_the_expected_alerts_exist() -> None:
    names = [rule["alert"] for rule in alert_rules()]
    assert len(names) == len(set(names)), "alert names must be unique"
    assert set(names) == {
        "CopilotTaskCompletionRateLow",
        "CopilotToolErrorRateHigh",
        "CopilotRunawayAgentLoops",
        "CopilotSessionErrorsSpike",
        "CopilotAgentWaitingForPerson",
        "CopilotAgentLooping",
        "CopilotAgentStalled",
        "CopilotTaskRunaway",
        "CopilotContextWindowFull",
        "CopilotRepeatedCompactions",
        "CopilotPremiumRequestsSpendHigh",
        "OtelBridgeDown",
        "OtelBridgeLagging",
        "OtelBridgeDroppingSpans",
        "OtelBridgeExportFailures",
        "OtelBridgeCheckpointsFailing",
    }


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: rule["alert"])
def test_every_alert_has_severity_annotations_and_a_duration(rule: dict[str, Any]) -> None:
    assert rule["labels"]["severity"] in SEVERITIES
    annotations = rule["annotations"]
    for key in ("summary", "description", "runbook_url"):
        assert annotations.get(key, "").strip(), f"{rule['alert']}: annotations.{key} missing"
    assert annotations["runbook_url"] == f"docs/alerts.md#{github_anchor(rule['alert'])}"
    assert re.fullmatch(r"\d+[smh]", str(rule.get("for", ""))), "use a `for:` duration"


def test_every_alert_fires_and_stays_quiet_in_the_unit_tests() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    suite = yaml.safe_load(ALERT_TESTS.read_text())
    assert suite["rule_files"] == ["alerts.yml"]
    for case in suite["tests"]:
        jobs = {
            re.search(r'job="([^"]*)"', series["series"]).group(1)  # type: ignore[union-attr]
            for series in case["input_series"]
            if "job=" in series["series"]
        }
        assert jobs, f"{case['name']}: give the series a job label, as scraped series have"
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert names - firing == set(), "alerts without a case where they fire"
    assert names - quiet == set(), "alerts without a case where they stay quiet"
    assert (firing | quiet) - names == set(), "unit tests of alerts that do not exist"


def test_every_alert_has_a_runbook_section() -> None:
    sections = doc_sections()
    for rule in alert_rules():
        anchor = rule["annotations"]["runbook_url"].split("#", 1)[1]
        assert anchor in sections, f"docs/alerts.md has no section for {rule['alert']}"
        text = sections[anchor].lower()
        for word in ("threshold", "runbook"):
            assert word in text, f"docs/alerts.md#{anchor} does not say its {word}"
        # the documented defaults are those of the rule: every threshold and the `for:`
        thresholds = re.findall(r"(?m)(?:[<>]=?|==)\s*([\d.]+)\s*$", rule["expr"])
        assert thresholds, f"{rule['alert']}: end a line with the threshold comparison"
        for value in [*thresholds, rule["for"]]:
            assert f"`{value}`" in text, f"docs/alerts.md#{anchor} does not give `{value}`"
