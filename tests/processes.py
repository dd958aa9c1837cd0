"""Starting and stopping the servers and bridges the tests start, and reading what they
logged."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

# A child inherits an ignored signal across exec (POSIX exec(3): "Signals set to be ignored
# by the calling process image shall be set to be ignored by the new process image"), and a
# shell starts a script's background job (`bash scripts/test.sh &`) with SIGINT ignored
# (bash(1), "SIGNALS": "background commands ... ignore SIGINT and SIGQUIT"), which Python
# then leaves ignored (the signal module installs its KeyboardInterrupt handler only "if
# the parent process has not changed it"). So a test that sends SIGINT to a child, or that
# needs it ignored, sets the disposition in the child itself, through this small exec: it
# holds whatever way pytest was started. Not `preexec_fn`, which is unsafe in a process with
# threads (the receivers and servers of a test run on threads). SIGHUP is set to its default
# there too, as a terminal's child has it: under `nohup` it is ignored, and the tests that
# send it (test_signals.py) would see the child ignore it, as the bridge is meant to.
_EXEC_WITH = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.{}); "
    "signal.signal(signal.SIGHUP, signal.SIG_DFL); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def sigint_default(command: Sequence[str]) -> list[str]:
    """`command`, started with SIGINT at its default (Ctrl-C stops it), as from a terminal."""
    return [sys.executable, "-c", _EXEC_WITH.format("SIG_DFL"), *command]


def sigint_ignored(command: Sequence[str]) -> list[str]:
    """`command`, started with SIGINT ignored, as a script's background job is."""
    return [sys.executable, "-c", _EXEC_WITH.format("SIG_IGN"), *command]


def bridge_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without OTEL_* and COPILOT_* (a developer's collector setting
    must not change a result), and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env.update(extra or {})
    return env


def run_probe(code: str, extra: Mapping[str, str] | None = None) -> str:
    """Run `code` in a fresh Python process with this checkout on its path (what a fresh
    process loads is often the point), and return its output; its failure fails the test."""
    from tests import paths

    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=bridge_env({"PYTHONPATH": str(paths.REPO), **(extra or {})}),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Warning" not in done.stderr, done.stderr[-2000:]
    return done.stdout


def start_bridge(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    log: Path | int | None = None,
    stdout: Path | int = subprocess.DEVNULL,
    sigint: Literal["default", "ignored"] | None = None,
    new_session: bool = False,
    text: bool = False,
    append: bool = False,
    cwd: Path | None = None,
) -> subprocess.Popen:
    """`python -m otel_bridge argv...` in the background, the one way tests and bench/ start a
    bridge. `env`: bridge_env() unless given. stderr: to the file `log` (emptied first, unless
    `append`), or a subprocess constant (DEVNULL...), else a pipe to read. stdout: a file,
    DEVNULL or PIPE. `sigint`: SIGINT in the child at its default or ignored (see _EXEC_WITH),
    else inherited. `new_session`: its own process group, for terminate(group=True). stdin is
    /dev/null. The caller stops it (terminate())."""
    command = [sys.executable, "-m", "otel_bridge", *argv]
    if sigint == "default":
        command = sigint_default(command)
    elif sigint == "ignored":
        command = sigint_ignored(command)
    with contextlib.ExitStack() as files:
        mode = "ab" if append else "wb"
        err = subprocess.PIPE if log is None else log
        if isinstance(log, Path):
            err = files.enter_context(log.open(mode))
        out = files.enter_context(stdout.open(mode)) if isinstance(stdout, Path) else stdout
        return subprocess.Popen(
            command,
            env=dict(bridge_env() if env is None else env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            text=text,
            start_new_session=new_session,
            cwd=cwd,
        )


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
