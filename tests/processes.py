"""Stopping the servers and bridges the tests start, and reading what they logged."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path


def terminate(
    process: subprocess.Popen | None, timeout: float = 10.0, *, group: bool = False
) -> None:
    """SIGTERM, wait up to `timeout`, then SIGKILL. With `group`, signal the process group the
    process leads (its pid), so that children it left behind go too."""
    if process is None:
        return
    kill = os.killpg if group else os.kill
    if process.poll() is None or group:
        with contextlib.suppress(ProcessLookupError):
            kill(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
        with contextlib.suppress(ProcessLookupError):
            if group or process.poll() is None:
                kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def log_tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file, for a failure message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
