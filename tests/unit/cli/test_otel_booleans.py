"""The OpenTelemetry booleans (OTEL_SDK_DISABLED...) by the specification's rule, as the SDK
reads them, and a value outside it said rather than silently false."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_bridge.cli import main
from tests import paths

LOG = paths.FIXTURES / "mcp_tools" / "events.jsonl"


@pytest.mark.parametrize("value", ["yes", "1", "on"])
def test_an_otel_boolean_outside_the_rule_is_false_and_said(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    value: str,
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", value)
    traces = tmp_path / "t.jsonl"
    assert main(["replay", "--no-progress", "--traces-file", str(traces), str(LOG)]) == 0
    assert traces.stat().st_size > 0  # false, as the SDK takes it: spans are written
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"OTEL_SDK_DISABLED={value!r} is taken as false" in " ".join(warned)


@pytest.mark.parametrize("value", ["TRUE", " true ", "false", ""])
def test_an_otel_boolean_by_the_rule_is_not_warned_about(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    value: str,
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", value)
    traces = tmp_path / "t.jsonl"
    assert main(["replay", "--no-progress", "--traces-file", str(traces), str(LOG)]) == 0
    disabled = value.strip().lower() == "true"
    assert (not traces.exists() or traces.stat().st_size == 0) == disabled
    assert not [r for r in caplog.records if "is taken as false" in r.getMessage()]
