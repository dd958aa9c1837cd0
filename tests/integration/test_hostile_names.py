"""Names from files never reach the terminal or the log raw: a session directory, a working
directory or a model holding a newline, an escape sequence or a bidirectional override is
printed escaped, so that it cannot forge a log line, clear the screen or reorder text."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from otel_bridge._progress import ProgressBar, printable
from otel_bridge.cli import OneLineFormatter
from tests.builder import Log

#: A name meant to forge a log line and clear the screen (ESC [2J), with a right-to-left
#: override and a C1 "next line" for good measure.
HOSTILE = "x\n2026-01-01 00:00:00,000 ERROR otel_bridge: forged\x1b[2J\r\u202eevil\x85end"
LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) ")
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env["OTEL_TRACES_EXPORTER"] = "none"
    return subprocess.run(
        [sys.executable, "-m", "otel_bridge", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line_each(stderr: str) -> None:
    for line in stderr.splitlines():
        assert LINE.match(line), f"a line that is not a record: {line!r}"
    assert RAW.search(stderr) is None, repr(stderr)
    assert "forged" in stderr  # there, escaped, inside the record that quoted it


def test_printable_escapes_what_a_terminal_acts_on() -> None:
    assert printable(HOSTILE) == (
        "x\\n2026-01-01 00:00:00,000 ERROR otel_bridge: forged\\x1b[2J\\r\\u202eevil\\x85end"
    )
    assert printable("plain /home/alice/src, ünïcödé ✓") == "plain /home/alice/src, ünïcödé ✓"
    assert printable("a\nb\x1b", newlines=True) == "a\nb\\x1b"


def test_a_log_record_is_one_line_whatever_its_arguments_hold() -> None:
    formatter = OneLineFormatter("%(levelname)s %(message)s")
    record = logging.LogRecord(
        "otel_bridge", logging.WARNING, __file__, 1, "%s: empty", (HOSTILE,), None
    )
    assert "\n" not in formatter.format(record)
    try:
        raise ValueError(HOSTILE)
    except ValueError:
        record = logging.LogRecord(
            "otel_bridge", logging.DEBUG, __file__, 1, "raised", (), sys.exc_info()
        )
    text = formatter.format(record)
    assert text.startswith("DEBUG raised\nTraceback")  # a traceback keeps its lines
    assert RAW.search(text) is None


def test_replay_logs_a_hostile_directory_name_escaped(tmp_path: Path) -> None:
    session = tmp_path / "session-state" / HOSTILE.replace("/", "_")
    session.mkdir(parents=True)
    (session / "events.jsonl").write_bytes(b"")  # "<path>: empty", at INFO
    # Found in a session-state directory, such a directory is not read, said in one line.
    done = cli("replay", str(tmp_path / "session-state"), "--no-progress", "--log-level", "INFO")
    assert done.returncode == 2, done.stderr  # no session log left to read
    assert "not printable" in done.stderr
    assert_one_line_each(done.stderr)
    # Named on the command line, it is read; its name is shown escaped.
    done = cli("replay", str(session / "events.jsonl"), "--no-progress", "--log-level", "INFO")
    assert done.returncode == 0, done.stderr
    assert "empty" in done.stderr
    assert_one_line_each(done.stderr)


def test_stats_prints_hostile_names_from_a_log_escaped(tmp_path: Path) -> None:
    log = Log(session="sess-hostile")
    log.start(context={"cwd": f"/home/alice/{HOSTILE}", "repository": "acme/app", "branch": "m"})
    log.add("session.model_change", newModel=f"gpt-{HOSTILE}")
    log.user(interaction="i1")
    log.simple_turn("0", "u1", interaction="i1")
    path = tmp_path / "session-state" / "sess-hostile" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(log.jsonl())
    done = cli("stats", str(path))
    assert done.returncode == 0, done.stderr
    assert RAW.search(done.stdout) is None, repr(done.stdout)
    lines = done.stdout.splitlines()
    assert len(lines) == 6  # heading, header, rule, the session, rule, the total
    assert "forged" in lines[3]
    as_json = json.loads(cli("stats", "--json", str(path)).stdout)  # JSON escapes by itself
    assert HOSTILE in as_json["sessions"][0]["directory"]


def test_doctor_prints_a_hostile_path_escaped(tmp_path: Path) -> None:
    done = cli("doctor", "--session-state", str(tmp_path / HOSTILE.replace("/", "_")))
    assert done.returncode == 1  # it does not exist
    assert "does not exist" in done.stdout
    assert RAW.search(done.stdout) is None, repr(done.stdout)
    for line in done.stdout.splitlines():  # the version, then a line per check
        assert line.startswith(("otel-bridge ", "  [")), repr(line)


def test_the_progress_bar_label_is_escaped() -> None:
    stream = io.StringIO()
    bar = ProgressBar(100, f"replaying {HOSTILE}", stream=stream, enabled=True)
    bar.advance(100)
    bar.close()
    assert RAW.search(stream.getvalue().replace("\r", "")) is None
