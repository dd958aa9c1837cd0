"""`otel-bridge stats`: rows a person can tell apart, in the width of their terminal."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from otel_bridge.app._stats import StatsAssembler, StatsCollector
from otel_bridge.app._stats_table import render_table
from otel_bridge.cli import main
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import find_logs, replay_logs
from tests import paths
from tests.builder import Log

FIXTURES = paths.FIXTURES
LOGS = sorted(FIXTURES.glob("*/events.jsonl"))


def stats(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "otel_bridge", "stats", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )


def table(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines of the sessions' table (the context table follows it after a blank line)."""
    return result.stdout.split("\n\n", 1)[0].splitlines()


def test_the_context_table_follows_by_model() -> None:
    for columns in (None, 60):
        text = stats(str(FIXTURES), columns=columns).stdout
        lines = text.split("\n\n", 1)[1].splitlines()
        assert lines[0].startswith("context window")
        assert lines[1].split() == [
            "model", "calls", "p50", "p90", "p99", "max", "tasks", "compact/task"
        ]  # fmt: skip
        assert [line.split()[0] for line in lines[2:]] == ["gpt-4.1"]
        assert columns is None or max(map(len, lines)) <= columns
    report = json.loads(stats("--json", str(FIXTURES)).stdout)
    assert set(report["context"]) == {"gpt-4.1"}
    assert report["context"]["gpt-4.1"]["max"] == 0.14  # compaction_manual: 9000 of 64000


def first_event(path: Path) -> dict:
    return json.loads(path.read_text().splitlines()[0])


def collected(paths: str = "basename") -> StatsCollector:
    collector = StatsCollector(paths=paths)
    replay_logs(
        find_logs([FIXTURES]), StreamFeeder(StatsAssembler(collector), lambda records: None)
    )
    return collector


@pytest.mark.parametrize("columns", [80, 100, 120, 60])
def test_the_table_fits_columns(columns) -> None:
    lines = table(stats(str(FIXTURES), columns=columns))
    assert len(lines) == len(LOGS) + 4  # header, rule, a row per session, rule, total
    assert max(map(len, lines)) <= columns


def test_at_80_columns_a_row_says_which_session_when_where_and_which_model() -> None:
    lines = table(stats(str(FIXTURES), columns=80))
    for path in LOGS:
        start = first_event(path)
        session = start["data"]["sessionId"]
        row = next(line for line in lines if line.startswith(session[:8]))
        date = datetime.fromisoformat(start["data"]["startTime"].replace("Z", "+00:00"))
        assert date.astimezone().strftime("%Y-%m-%d") in row
        assert start["data"]["selectedModel"] in row
        assert Path(start["data"]["context"]["cwd"]).name in row
    assert lines[-1].startswith("total")


def test_piped_without_columns_the_table_is_whole() -> None:
    lines = table(stats(str(FIXTURES)))
    assert "tasks by outcome" in lines[0]
    header = lines[1].split()
    for column in (
        "started",
        "model",
        "directory",
        "messages",
        "turns/msg",
        "completed",
        "aborted",
        "tokens",
    ):
        assert column in header
    sessions = {first_event(p)["data"]["sessionId"] for p in LOGS}
    assert {line.split()[0] for line in lines[3:-2]} == sessions  # whole ids


def test_narrower_tables_keep_the_numbers_they_show_right() -> None:
    collector = collected()
    sessions = sorted(collector.sessions.values(), key=lambda s: s.session)
    total = collector.total()
    wide = render_table(sessions, total)
    assert max(map(len, wide.splitlines())) > 150
    for width in (150, 120, 100, 80, 70, 50):
        assert max(map(len, render_table(sessions, total, width).splitlines())) <= width
    narrow = render_table(sessions, total, 80).splitlines()
    assert narrow[-1].split()[:5] == [
        "total",
        str(total.turns),
        f"{total.turns_per_message:.2f}",  # kept at 80 columns, as t/msg
        str(total.tool_calls),
        str(total.tool_failures),
    ]
    # ok/tasks: those that ended well, with a completion signal or without (interactive)
    ended_well = total.outcomes["completed"] + total.outcomes["no_signal"] - total.unfinished
    assert narrow[-1].split()[5] == f"{ended_well}/{total.tasks}"
    assert 0 < total.unfinished < total.outcomes["no_signal"]


@pytest.mark.parametrize(
    ("mode", "shown"),
    [
        ("keep", lambda cwd: cwd),
        ("basename", lambda cwd: Path(cwd).name),
        ("hash", lambda cwd: "path:" + hashlib.sha256(cwd.encode()).hexdigest()[:16]),
    ],
)
def test_paths_decides_how_the_directory_is_shown(mode, shown, capsys) -> None:
    assert main(["stats", str(FIXTURES), "--json", "--paths", mode]) == 0
    report = json.loads(capsys.readouterr().out)
    by_id = {s["session"]: s for s in report["sessions"]}
    for path in LOGS:
        start = first_event(path)["data"]
        entry = by_id[start["sessionId"]]
        assert entry["directory"] == shown(start["context"]["cwd"])
        assert entry["model"] == start["selectedModel"]
        assert datetime.fromisoformat(entry["started"]) == datetime.fromisoformat(
            start["startTime"].replace("Z", "+00:00")
        )
    assert report["total"]["directory"] is None


def test_sessions_are_listed_by_start(capsys) -> None:
    assert main(["stats", str(FIXTURES), "--json"]) == 0
    started = [s["started"] for s in json.loads(capsys.readouterr().out)["sessions"]]
    assert started == sorted(started) and len(started) == len(LOGS)


def test_a_log_without_its_start_still_gets_a_date(tmp_path) -> None:
    source = FIXTURES / "run1_cli_prompt_basic" / "events.jsonl"
    lines = source.read_text().splitlines(keepends=True)
    log = tmp_path / "d3ebfa08-de8a-4b43-93da-591db8061cb6" / "events.jsonl"
    log.parent.mkdir()
    log.write_text("".join(lines[1:]))  # session.start lost
    collector = StatsCollector()
    replay_logs(find_logs([log]), StreamFeeder(StatsAssembler(collector), lambda records: None))
    (entry,) = collector.sessions.values()
    second = json.loads(lines[1])["timestamp"].replace("Z", "+00:00")
    assert datetime.fromisoformat(entry.started or "") == datetime.fromisoformat(second)
    assert entry.directory is None and entry.model is None


GIT_LOG = FIXTURES / "git_repo" / "events.jsonl"


def test_each_session_shows_its_repository_or_a_dash(capsys) -> None:
    """The repository of the session's context (owner/name), as the metrics' vcs labels;
    "-" in the table and null in --json for a session outside a git checkout."""
    assert main(["stats", str(FIXTURES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    by_id = {s["session"]: s for s in report["sessions"]}
    for path in LOGS:
        start = first_event(path)["data"]
        assert by_id[start["sessionId"]]["repository"] == start["context"].get("repository")
    git_session = first_event(GIT_LOG)["data"]["sessionId"]
    assert by_id[git_session]["repository"] == "octo-org/demo-project"
    assert report["total"]["repository"] is None
    lines = table(stats(str(FIXTURES)))
    at = lines[1].index("repository")  # where the column starts
    for line in lines[3:-2]:
        expected = "octo-org/demo-project" if line.startswith(git_session) else "-"
        assert line[at:].split()[0] == expected, line
    assert "repository" in lines[1] and "octo-org" not in lines[-1]  # the total has none


def test_the_repository_follows_the_session_to_another_checkout() -> None:
    log = Log()
    log.start(context={"cwd": "/src/a", "repository": "o/a", "branch": "main"})
    log.add("session.context_changed", cwd="/src/b", repository="o/b", branch="dev")
    log.user()
    log.simple_turn("0", "u1")
    collector = StatsCollector()
    StatsAssembler(collector).feed("s", log.events())
    (entry,) = collector.sessions.values()
    assert entry.repository == "o/b" and entry.directory == "a"


def test_the_repository_goes_before_the_cost_when_the_table_narrows() -> None:
    collector = collected()
    sessions = sorted(collector.sessions.values(), key=lambda s: s.session)
    total = collector.total()
    with_repository = [
        width
        for width in range(100, 300)
        if "repository" in render_table(sessions, total, width).splitlines()[0]
    ]
    assert with_repository, "no width shows the repository"
    narrower = render_table(sessions, total, with_repository[0] - 1).splitlines()[0]
    assert "repository" not in narrower
    assert "premium req" in narrower and "lines +/-" in narrower


def test_the_help_names_the_cost_lines_and_repository_columns() -> None:
    text = stats("--help").stdout
    for words in ("repository", "premium req", "lines +/-", "n/a (BYOK)"):
        assert words in text, words


def _session(directory: str, model: str, *, session: str) -> Log:
    log = Log()
    log.session = session
    log.start(context={"cwd": directory})
    log.add("session.model_change", newModel=model)
    log.user()
    log.simple_turn("0", "u1")
    return log


def test_at_80_columns_models_that_differ_still_differ(tmp_path) -> None:
    """gpt-4.1 and gpt-4.1-mini: cut from the end, both read `gpt-4...`; long directory
    names give way first, and what is cut keeps both ends of a name."""
    collector = StatsCollector(paths="keep")
    assembler = StatsAssembler(collector)
    models = ["gpt-4.1", "gpt-4.1-mini", "claude-sonnet-4.5", "claude-haiku-4.5"]
    for n, model in enumerate(models * 2):
        directory = f"/home/alice/src/acme-widgets_backend2024/services/invoice-generator-{n}"
        log = _session(directory, model, session=f"{n:08d}-0000-4000-8000-000000000000")
        assembler.feed(f"s{n}", log.events())
        assembler.end_stream(f"s{n}")
    sessions = list(collector.sessions.values())
    for width in (80, 75):
        lines = render_table(sessions, collector.total(), width).splitlines()
        assert max(map(len, lines)) <= width
        at = lines[0].index("model")
        cells = [line[at:].split()[0] for line in lines[2:-2]]
        assert len(set(cells)) == len(models), cells  # four models, four names
        assert all(len(cell) >= 5 for cell in cells)


def test_healthy_interactive_tasks_read_done_not_failed() -> None:
    """In interactive mode the CLI never asks for task_complete: a task that ended normally
    is "done" (no_signal on the metric), and counts as ended well in ok/tasks."""
    log = _session("/src/app", "gpt-4.1", session="11111111-0000-4000-8000-000000000000")
    log.user(interaction="i2")
    log.simple_turn("0", "u2", interaction="i2")
    collector = StatsCollector()
    assembler = StatsAssembler(collector)
    assembler.feed("s", log.events())
    assembler.end_stream("s")
    (entry,) = collector.sessions.values()
    assert entry.outcomes["no_signal"] == entry.tasks == 2 and entry.unfinished == 0
    assert entry.by_word() == {
        "done": 2,
        "completed": 0,
        "failed": 0,
        "error": 0,
        "aborted": 0,
        "unfinished": 0,
    }
    whole = render_table([entry], collector.total()).splitlines()
    header = whole[1].split()
    assert header[header.index("done") : header.index("unfinished") + 1] == [
        "done",
        "completed",
        "failed",
        "error",
        "aborted",
        "unfinished",
    ]
    narrow = render_table([entry], collector.total(), 80).splitlines()
    at = narrow[0].index("ok/tasks")
    assert narrow[2][at:].split()[0] == "2/2"  # 0/2 before: as if both had failed


def test_a_task_whose_end_was_not_seen_is_unfinished(capsys) -> None:
    assert main(["stats", "--json", str(FIXTURES / "crash_resume")]) == 0
    (session,) = json.loads(capsys.readouterr().out)["sessions"]
    assert session["outcomes"]["no_signal"] == session["tasks"] == 2  # as the metric says
    assert session["unfinished"] == 1
