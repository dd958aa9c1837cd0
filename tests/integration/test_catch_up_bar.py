"""`run`'s catch-up at start shows its progress on a terminal, as `replay` does, and nowhere
else; `--no-progress` hides it."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests import paths
from tests.corpus import session_state
from tests.processes import bridge_env, start_bridge, terminate

ROOT = paths.REPO


def _pty_run(state: Path, tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[bytes], int]:
    """`run` with its stderr on a pseudo-terminal, as in a terminal window."""
    parent, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env.update(PYTHONPATH=str(ROOT), OTEL_TRACES_EXPORTER="none", COLUMNS="100")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "otel_bridge",
            "run",
            "--session-state",
            str(state),
            "--state-dir",
            str(tmp_path / "bridge-state"),
            "--prometheus-port",
            "0",
            *extra,
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=child,
    )
    os.close(child)
    return process, parent


def _wait_ready(port: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail("run did not catch up")
            time.sleep(0.05)


def _read_until(fd: int, marker: bytes, seconds: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the other end closed
                break
    return seen


@pytest.mark.parametrize("extra", [(), ("--no-progress",)])
def test_run_s_catch_up_shows_progress_on_a_terminal(tmp_path: Path, extra: tuple[str]) -> None:
    state = session_state(tmp_path / "session-state")
    logs = len(list(state.iterdir()))
    process, terminal = _pty_run(state, tmp_path, "--backfill", *extra)
    try:
        seen = _read_until(terminal, b"following", 60)
        port = re.search(rb"serving http://127\.0\.0\.1:(\d+)/metrics", seen)
        assert port is not None, seen
        _wait_ready(int(port[1]))  # /readyz: every log was read to its end once
        seen += _read_until(terminal, b"\n", 1)
        process.send_signal(signal.SIGTERM)
        seen += _read_until(terminal, b"stopped:", 30)
        process.wait(timeout=30)
    finally:
        terminate(process)
        os.close(terminal)
    text = seen.decode(errors="replace")
    bar = f"catching up {logs} logs ["
    if extra:
        assert bar not in text
    else:
        assert bar in text and "100.0%" in text
        # the bar is finished on its own line: no log line is glued to it
        assert all(line.startswith(("\r", "20")) or not line for line in text.split("\n"))


def test_run_draws_no_bar_off_a_terminal(tmp_path: Path) -> None:
    state = session_state(tmp_path / "session-state")
    env = bridge_env({"PYTHONPATH": str(ROOT), "OTEL_TRACES_EXPORTER": "none"})
    log = tmp_path / "run.log"
    process = start_bridge(
        [
            *("run", "--session-state", str(state), "--no-checkpoints", "--backfill"),
            *("--prometheus-port", "0"),
        ],
        env=env,
        log=log,
    )
    try:
        deadline = time.monotonic() + 60
        while "following" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    finally:
        terminate(process)
    assert "catching up" not in log.read_text() and "\r" not in log.read_text()
