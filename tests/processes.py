"""Starting and stopping the servers and bridges the tests start, and reading what they
logged."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

# A child inherits an ignored signal across exec (POSIX exec(3): "Signals set to be ignored
# by the calling process image shall be set to be ignored by the new process image"), and a
# shell starts a script's background job (`bash scripts/test.sh &`) with SIGINT ignored
# (bash(1), "SIGNALS": "background commands ... ignore SIGINT and SIGQUIT"), which Python
# then leaves ignored (the signal module installs its KeyboardInterrupt handler only "if
# the parent process has not changed it"). So a test that sends SIGINT to a child, or that
# needs it ignored, sets the disposition in the child itself, through this small exec: it
# holds whatever way pytest was started. Not `preexec_fn`, which is unsafe in a process with
# threads (the receivers and servers of a test run on threads).
_EXEC_WITH = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.{}); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def sigint_default(command: Sequence[str]) -> list[str]:
    """`command`, started with SIGINT at its default (Ctrl-C stops it), as from a terminal."""
    return [sys.executable, "-c", _EXEC_WITH.format("SIG_DFL"), *command]


def sigint_ignored(command: Sequence[str]) -> list[str]:
    """`command`, started with SIGINT ignored, as a script's background job is."""
    return [sys.executable, "-c", _EXEC_WITH.format("SIG_IGN"), *command]


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
