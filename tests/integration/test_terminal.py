"""What a person sees: real `otel-bridge` processes on a pseudo-terminal, and in pipes.

The output of a process on a pty is what a terminal receives; `screen()` plays it back the way a
terminal shows it (a carriage return goes back to the start of the line, later characters
overwrite earlier ones), so a log record glued to the progress bar, or overwritten by it, shows
up as a garbled line.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from otel_bridge._version import __version__
from otel_bridge.cli._parser import build_parser
from tests import paths
from tests.processes import terminate

FIXTURES = paths.FIXTURES
LOGS = sorted(FIXTURES.glob("*/events.jsonl"))
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TIMESTAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
# time, session, outcome in words, tools, tokens, duration, [why, sub-agents,] model[, context]
SUMMARY = re.compile(
    r"^\d\d:\d\d  [0-9a-f]{8}  [a-z]+ +\d+ tools?.*  \d+\.\ds(?:  .+)?  gpt-4\.1"
    r"(?:  ctx \d+% of \d+k)?$"
)
BAR = re.compile(r"^replaying \d+ logs \[[#-]+\] +\d+\.\d% \S+ \S+/\S+ \S+$")


def environment(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "COPILOT_")) and k not in ("COLUMNS", "NO_COLOR")
    }
    env.update(TERM="xterm", **extra)
    return env


def run_on_pty(
    argv: list[str], env: dict[str, str], columns: int = 200, timeout: float = 120.0
) -> tuple[int, str]:
    """Run `otel-bridge argv` with stdin, stdout and stderr on a pseudo-terminal; return its
    exit status and everything it wrote to the terminal."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "otel_bridge", *argv],
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError as exc:  # EIO: the last holder of the terminal's other end closed it
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        terminate(process)
        os.close(master)
    return process.returncode, b"".join(chunks).decode("utf-8", "replace")


def screen(raw: str) -> list[str]:
    """The lines a terminal shows for `raw` (colours dropped)."""
    lines: list[str] = []
    line: list[str] = []
    cursor = 0
    for char in ANSI.sub("", raw):
        if char == "\r":
            cursor = 0
        elif char == "\n":
            lines.append("".join(line).rstrip())
            line, cursor = [], 0
        else:
            if cursor < len(line):
                line[cursor] = char
            else:
                line.append(char)
            cursor += 1
    if line:
        lines.append("".join(line).rstrip())
    return lines


def traces_in(paths: list[Path]) -> int:
    """How many tasks (root spans) a replay of `paths` gives, from its JSON output."""
    result = subprocess.run(
        [sys.executable, "-m", "otel_bridge", "replay", *map(str, paths)],
        env=environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    spans = [json.loads(line) for line in result.stdout.splitlines()]
    return sum(1 for span in spans if span["parent_id"] is None)


def test_replay_on_a_terminal_prints_a_line_per_task(tmp_path) -> None:
    code, raw = run_on_pty(["replay", str(FIXTURES)], environment())
    lines = screen(raw)
    assert code == 0, raw
    tasks = [line for line in lines if SUMMARY.match(line)]
    # one task per top-level user message of the fixtures (autopilot nudges join their task,
    # and so do steering messages)
    messages = [
        event
        for path in LOGS
        for event in map(json.loads, path.read_text().splitlines())
        if event["type"] == "user.message"
        and "agentId" not in event
        and not event["data"].get("isAutopilotContinuation")
        and event["data"].get("delivery") != "steering"
    ]
    assert len(tasks) == traces_in(LOGS) == len(messages)
    assert not any(line.lstrip().startswith("{") for line in lines)  # no JSON
    assert "\x1b[32mcompleted" in raw  # colours, on a terminal


def test_no_color_turns_the_colours_off() -> None:
    code, raw = run_on_pty(
        ["replay", str(FIXTURES / "run3_cli_autopilot"), "--no-progress"], environment(NO_COLOR="1")
    )
    assert code == 0, raw
    assert "completed" in raw and "\x1b[" not in raw


def test_replay_into_a_pipe_prints_json() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "otel_bridge", "replay", str(FIXTURES / "abort")],
        env=environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    spans = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(spans) == 4 and {s["name"] for s in spans} >= {"invoke_agent copilot"}


def test_tree_format_on_a_terminal() -> None:
    code, raw = run_on_pty(
        ["replay", str(FIXTURES / "subagent"), "--no-progress", "--console-format", "tree"],
        environment(NO_COLOR="1"),
    )
    lines = screen(raw)
    assert code == 0, raw
    assert sum(1 for line in lines if SUMMARY.match(line)) == 1
    assert any(re.match(r"^│  +└─ invoke_agent \S+ ", line) for line in lines), lines


def test_progress_bar_warnings_and_task_lines_do_not_garble_each_other(tmp_path) -> None:
    """Warnings (malformed lines) and task lines land while the bar is drawn: each must stay
    on a line of its own, whole, and the bar must end whole on its own line."""
    state = tmp_path / "session-state"
    names = ["run1_cli_prompt_basic", "subagent_parallel", "parallel_tools", "abort"]
    for index, name in enumerate(names):
        lines = (FIXTURES / name / "events.jsonl").read_bytes().splitlines(keepends=True)
        if index:  # after the first log, whose reading draws the bar: a bad line in each
            lines.insert(3, b'{"type": "assistant.message", "data": {broken\n')
        target = state / f"{index}-{name}" / "events.jsonl"
        target.parent.mkdir(parents=True)
        target.write_bytes(b"".join(lines))
    code, raw = run_on_pty(["replay", str(state)], environment(NO_COLOR="1"))
    assert code == 0, raw
    assert "\r" in raw and "[#" in raw  # the bar was drawn
    lines = screen(raw)
    warnings = [line for line in lines if "WARNING" in line]
    assert len(warnings) == 3, lines
    for warning in warnings:
        assert re.match(
            rf"^{TIMESTAMP} WARNING otel_bridge\.\S+: \S+events\.jsonl:4 "
            r"\(byte \d+\): malformed line skipped: .+$",
            warning,
        ), warning
    tasks = [line for line in lines if re.match(r"^\d\d:\d\d  ", line)]
    assert len(tasks) == 4 and all(SUMMARY.match(line) for line in tasks), lines
    days = [line for line in lines if re.match(r"^-- \d{4}-\d\d-\d\d \w{3} --$", line)]
    bars = [line for line in lines if "replaying" in line and "[" in line]
    assert bars and all(BAR.match(line) for line in bars), bars
    assert "100.0%" in bars[-1]
    summary = [line for line in lines if "INFO otel_bridge: replayed 4 logs" in line]
    assert len(summary) == 1 and re.match(rf"^{TIMESTAMP} INFO ", summary[0])
    # nothing else: every line is a warning, a date, a task, the bar or the final summary
    assert len(lines) == len(warnings) + len(days) + len(tasks) + len(bars) + len(summary), lines


def test_log_level_is_taken_before_and_after_the_command() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "--log-level", "DEBUG"]).log_level == "DEBUG"
    assert parser.parse_args(["--log-level", "ERROR", "stats", "x"]).log_level == "ERROR"
    assert (
        parser.parse_args(["--log-level", "ERROR", "replay", "x", "--log-level", "DEBUG"]).log_level
        == "DEBUG"
    )
    assert parser.parse_args(["doctor"]).log_level == "INFO"
    assert parser.parse_args(["stats", "x", "--log-level", "WARNING"]).log_level == "WARNING"


# --- run: the start-up ---------------------------------------------------------------------


def session_state(tmp_path: Path, old: int, fresh: int) -> Path:
    """A session-state directory with `old` logs last written two hours ago and `fresh` ones
    written now."""
    state = tmp_path / "session-state"
    two_hours_ago = time.time() - 7200
    for index in range(old + fresh):
        source = LOGS[index]
        target = state / source.parent.name / "events.jsonl"
        target.parent.mkdir(parents=True)
        shutil.copyfile(source, target)
        if index < old:
            os.utime(target, (two_hours_ago, two_hours_ago))
    return state


def run_until(
    state: Path, tmp_path: Path, extra: list[str], wanted: str, timeout: float = 60.0
) -> str:
    """Start `otel-bridge run` on `state`, read its stderr until `wanted` appears, stop it with
    SIGTERM; return everything it logged."""
    checkpoints = [] if "--state-dir" in extra else ["--no-checkpoints"]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "otel_bridge",
            "run",
            "--session-state",
            str(state),
            "--no-prometheus",
            *checkpoints,
            *extra,
        ],
        env=environment(OTEL_TRACES_EXPORTER="none"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    seen = b""
    try:
        deadline = time.monotonic() + timeout
        while wanted.encode() not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stderr], [], [], 1.0)
            if ready:
                chunk = os.read(process.stderr.fileno(), 65536)
                if not chunk:
                    break
                seen += chunk
    finally:
        terminate(process)
        with contextlib.suppress(ValueError, OSError):
            seen += process.stderr.read()
        process.stderr.close()
    assert process.returncode == 0, seen.decode()
    return seen.decode()


def test_run_sums_up_the_start_in_one_line_and_says_why_old_logs_give_nothing(tmp_path) -> None:
    state = session_state(tmp_path, old=3, fresh=1)
    stderr = run_until(state, tmp_path, ["--log-level", "INFO"], "following")
    following = [line for line in stderr.splitlines() if "following" in line]
    assert following == [
        line
        for line in stderr.splitlines()
        if line.endswith(
            "INFO otel_bridge.sources._tail: following 4 session logs: "
            "1 read from its beginning (modified in the last 60 "
            "min); 3 older logs are followed from their end; `--backfill` or "
            "`otel-bridge replay` reads them"
        )
    ], stderr
    assert len(following) == 1
    assert "from byte" not in stderr
    # where: said once, as run starts, not again in this line
    assert [line for line in stderr.splitlines() if str(state) in line] == [
        line
        for line in stderr.splitlines()
        if f": otel-bridge {__version__} watching {state}" in line
    ]


def test_run_with_debug_after_the_command_lists_each_log(tmp_path) -> None:
    state = session_state(tmp_path, old=2, fresh=0)
    stderr = run_until(state, tmp_path, ["--log-level", "DEBUG"], "older logs are followed")
    per_file = [
        line
        for line in stderr.splitlines()
        if re.search(
            r"DEBUG otel_bridge\.sources\._tail: following \S+events\.jsonl "
            r"from byte [1-9]\d* \(end\)$",
            line,
        )
    ]
    assert len(per_file) == 2, stderr
    assert "2 older logs are followed from their end" in stderr


@pytest.mark.parametrize("extra", [["--backfill"], ["--catch-up-minutes", "1000"]])
def test_run_says_nothing_of_older_logs_when_it_reads_them(tmp_path, extra) -> None:
    state = session_state(tmp_path, old=2, fresh=0)
    stderr = run_until(state, tmp_path, extra, "following")
    line = next(line for line in stderr.splitlines() if "following" in line)
    why = "" if extra == ["--backfill"] else " (modified in the last 1000 min)"
    assert line.endswith(f"following 2 session logs: 2 read from their beginning{why}"), line
    assert "older log" not in stderr and "from their end" not in stderr


def test_a_restart_says_the_logs_resume_from_their_checkpoints(tmp_path) -> None:
    state = session_state(tmp_path, old=2, fresh=1)
    options = ["--state-dir", str(tmp_path / "bridge-state")]
    first = run_until(state, tmp_path, options, "following")
    assert "2 older logs are followed from their end" in first
    second = run_until(state, tmp_path, options, "following")
    line = next(line for line in second.splitlines() if "following" in line)
    assert line.endswith("following 3 session logs: 3 resumed from their checkpoint"), line
    assert "resuming" not in second  # said once, in that line
