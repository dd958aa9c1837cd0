"""`run --session-state` given one session's directory or its events.jsonl: watched as given,
it followed nothing and said nothing useful. run refuses it, and says what to pass, in the
words doctor uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_bridge._exceptions import ConfigError
from otel_bridge.cli import main
from otel_bridge.cli._parser import build_parser
from otel_bridge.cli._settings import run_settings


@pytest.fixture
def session(tmp_path: Path) -> Path:
    directory = tmp_path / "session-state" / "0b7c3f5e-session"
    directory.mkdir(parents=True)
    (directory / "events.jsonl").write_text("")
    return directory


def _run_problem(given: Path) -> str:
    args = build_parser().parse_args(["run", "--no-prometheus", "--session-state", str(given)])
    with pytest.raises(ConfigError) as refused:
        run_settings(args, {})
    return str(refused.value)


def test_run_given_a_session_directory_says_to_pass_its_parent(session: Path) -> None:
    said = _run_problem(session)
    assert said.startswith(f"{session} is one session's directory (it holds events.jsonl)")
    assert f"--session-state {session.parent}," in said
    assert f"`otel-bridge replay {session}`" in said


def test_run_given_a_session_log_says_which_directory_to_pass(session: Path) -> None:
    log = session / "events.jsonl"
    said = _run_problem(log)
    assert said.startswith(f"{log} is a file: pass the session-state directory")
    assert f"--session-state {session.parent}, to follow every session there" in said
    assert f"`otel-bridge replay {log}`" in said


def test_run_and_doctor_say_the_same(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = session / "events.jsonl"
    argv = ["--session-state", str(log), "--no-prometheus", "--no-checkpoints"]
    assert main(["doctor", *argv]) == 1
    assert f"[!!] {_run_problem(log)}" in capsys.readouterr().out


def test_a_session_state_directory_is_taken(session: Path) -> None:
    args = build_parser().parse_args(
        ["run", "--no-prometheus", "--session-state", str(session.parent)]
    )
    assert run_settings(args, {}).daemon.roots == (session.parent,)
