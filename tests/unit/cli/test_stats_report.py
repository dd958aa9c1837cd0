"""`stats` as a report: the trouble of old sessions under its table, not as log lines that
push the table away, and turns per message kept at 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_bridge.cli import main
from tests import paths
from tests.builder import Log


@pytest.fixture
def troubled(tmp_path: Path) -> Path:
    """A session whose task calls one tool with the same arguments 7 times (threshold 5)."""
    log = Log.asked("5e551011-trouble")
    for turn in range(7):
        log.simple_turn(str(turn), f"u{turn}", tools=[(f"c{turn}", "bash")])
    (tmp_path / log.session).mkdir()
    (tmp_path / log.session / "events.jsonl").write_bytes(log.jsonl())
    return tmp_path


def test_trouble_is_in_the_report_not_in_log_lines(
    troubled: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["stats", str(troubled), str(paths.FIXTURES / "abort")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(map(len, out)) <= 80
    notes = out.index("trouble signals (copilot.task.trouble): 1 raised, in 1 of 2 sessions")
    assert out[notes + 1] == "  5e551011  repeated_call"
    # the table's notes, before the table of context windows, if there is one
    assert all(not line.startswith("context window") for line in out[:notes])
    assert not [r for r in caplog.records if "may be in trouble" in r.getMessage()]


def test_the_json_report_counts_trouble_by_signal(
    troubled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--json", str(troubled)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sessions"][0]["trouble"] == {"repeated_call": 1}
    assert report["total"]["trouble"] == {"repeated_call": 1}


def test_no_trouble_no_notes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(paths.FIXTURES / "abort")]) == 0
    assert "trouble" not in capsys.readouterr().out


def test_at_80_columns_turns_per_message_stays(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["stats", str(paths.FIXTURES)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80
    header = lines[0].split()
    assert header[:3] == ["session", "started", "model"]  # the date, model and dir stay whole
    at = header.index("t/msg")
    (total,) = [line for line in lines if line.startswith("total")]  # the table's last row
    assert main(["stats", "--json", str(paths.FIXTURES)]) == 0
    per_message = json.loads(capsys.readouterr().out)["total"]["turns_per_message"]
    assert header[at - 1] == "turns" and total.split()[at - 3] == f"{per_message:.2f}"
