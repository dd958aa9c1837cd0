"""Ctrl-C while tasks are open: 5 open tasks printed 11 "unfinished" lines, one per span
already exported. Now the console says how many tasks are open in one line, and the stop line
that they resume at the next start (run keeps its checkpoint before them)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from tests.builder import GrowingLog
from tests.processes import start_bridge, terminate


def _open_tasks(state: Path, count: int) -> None:
    """`count` sessions, each with a task whose two first turns are done and third is not."""
    for number in range(count):
        log = GrowingLog(state)
        log.log.start()
        log.log.user()
        log.log.simple_turn("0", f"u{number}a", tools=[("c1", "bash")])
        log.log.simple_turn("1", f"u{number}b")
        log.log.turn("2")
        log.log.usage(f"u{number}c")
        log.write()


def _wait_for(path: Path, text: str, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while text not in (said := path.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"no {text!r} in:\n{said}"
        time.sleep(0.05)
    return said


def test_ctrl_c_with_open_tasks_says_so_once(tmp_path: Path) -> None:
    state = tmp_path / "session-state"
    state.mkdir()
    _open_tasks(state, 5)
    err, out = tmp_path / "err.log", tmp_path / "out.txt"
    process = start_bridge(
        [
            "run",
            "--session-state",
            str(state),
            "--state-dir",
            str(tmp_path / "state"),
            "--no-prometheus",
            "--console-format",
            "summary",
        ],
        log=err,
        stdout=out,
        sigint="default",
    )
    try:
        _wait_for(err, "following 5 session logs")
        # every log read to its end (a line for each task that ended before the open one);
        # the open tasks' finished spans are queued by then, and delivered first at the stop
        deadline = time.monotonic() + 60
        while out.read_text().count(" done ") < 5:
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        terminate(process)
        raise
    finally:
        terminate(process)
    printed = out.read_text().splitlines()
    assert not [line for line in printed if "unfinished" in line], printed
    assert printed[-1] == (
        "5 tasks still open at the stop, not printed: a task's line is printed when it ends"
    )
    stopped = [line for line in err.read_text().splitlines() if "stopped:" in line]
    assert len(stopped) == 1
    assert stopped[0].endswith("; 5 tasks still open, resumed at the next start"), stopped
