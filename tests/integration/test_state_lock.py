"""One `run` per state directory: a second one refuses with a line naming the first, and a
first that was killed leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from otel_bridge._exceptions import ConfigError
from otel_bridge.checkpoint._lock import LOCK_NAME, StateLock
from tests.processes import bridge_env, start_bridge, terminate


def _run(tmp_path: Path, state_dir: Path, name: str) -> subprocess.Popen[bytes]:
    """`run` on an empty session-state directory, its log in tmp_path/<name>.log."""
    (tmp_path / "session-state").mkdir(exist_ok=True)
    return start_bridge(
        [
            "run",
            "--session-state",
            str(tmp_path / "session-state"),
            "--state-dir",
            str(state_dir),
            "--no-prometheus",
            "--poll-interval",
            "0.1",
        ],
        env=bridge_env({"OTEL_TRACES_EXPORTER": "none"}),
        log=tmp_path / f"{name}.log",
    )


def _wait_for_lock(
    state_dir: Path, process: subprocess.Popen[bytes], timeout: float = 30.0
) -> None:
    """Until `process` holds the directory (the lock file names it)."""
    deadline = time.monotonic() + timeout
    lock = state_dir / LOCK_NAME
    while time.monotonic() < deadline and process.poll() is None:
        if lock.exists() and lock.read_text().startswith(f"pid {process.pid} "):
            return
        time.sleep(0.05)
    raise AssertionError(f"run (pid {process.pid}) never took the state directory")


def test_a_second_run_on_one_state_directory_refuses_naming_the_first(tmp_path: Path) -> None:
    state_dir = tmp_path / "bridge-state"
    first = _run(tmp_path, state_dir, "first")
    try:
        _wait_for_lock(state_dir, first)
        second = _run(tmp_path, state_dir, "second")
        second.wait(timeout=60)
        stderr = (tmp_path / "second.log").read_text()
        assert second.returncode == 2, stderr
        assert f"pid {first.pid}" in stderr
        assert str(state_dir) in stderr and "--state-dir" in stderr
        assert first.poll() is None  # the first goes on
    finally:
        terminate(first)
    assert first.returncode == 0


def test_a_killed_run_leaves_no_stale_lock(tmp_path: Path) -> None:
    state_dir = tmp_path / "bridge-state"
    first = _run(tmp_path, state_dir, "first")
    try:
        _wait_for_lock(state_dir, first)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        second = _run(tmp_path, state_dir, "second")
        try:
            _wait_for_lock(state_dir, second)  # the killed one's lock went with it
        finally:
            terminate(second)
        assert second.returncode == 0
    finally:
        terminate(first)


def test_the_lock_is_private_and_follows_no_planted_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep me")
    (tmp_path / LOCK_NAME).symlink_to(target)
    with pytest.raises(ConfigError, match="cannot open the lock file"):
        StateLock(tmp_path)
    assert target.read_text() == "keep me"
    (tmp_path / LOCK_NAME).unlink()
    lock = StateLock(tmp_path)
    try:
        assert (tmp_path / LOCK_NAME).stat().st_mode & 0o777 == 0o600
        with pytest.raises(ConfigError, match=f"pid {os.getpid()}"):
            StateLock(tmp_path)  # a second descriptor: flock refuses it too
    finally:
        lock.release()
    StateLock(tmp_path).release()  # released: taken again
