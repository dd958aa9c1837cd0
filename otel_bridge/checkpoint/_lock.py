"""One `run` per state directory: a lock that a crash cannot leave behind.

Two daemons on one state directory (an installed service and a run started by hand, say) would
both write `checkpoints.jsonl`, each over the other's resume points, with no word said. So `run`
takes an exclusive `flock` on `run.lock` in the state directory for as long as it runs. The
kernel releases it when the process ends, however it ends (SIGKILL, a crash, a reboot): there is
nothing stale to clean up, unlike a pid file. The file holds a line about its holder (pid, host,
start time, command) so that the second `run` can say which one holds it.
"""

from __future__ import annotations

import datetime
import fcntl
import os
import socket
import stat
from pathlib import Path

from .._exceptions import ConfigError
from ..files._safe_open import kind

__all__ = ["LOCK_NAME", "StateLock"]

LOCK_NAME = "run.lock"
_HOLDER_MAX = 512  # bytes of the holder's line read back (it is ours, but the file is not)
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class StateLock:
    """The exclusive lock of a state directory, taken by `acquire`, released by `release`
    (or by the end of the process).

    Raises:
        ConfigError: another process holds it (the message names it and says what to do), or
            the lock file cannot be opened.
    """

    def __init__(self, directory: Path, command: str = "otel-bridge run") -> None:
        self.path = directory / LOCK_NAME
        self._fd: int | None = None
        try:
            # O_NOFOLLOW: a link planted in the state directory does not make us open (and
            # write into) another file; O_CLOEXEC: children do not inherit the lock;
            # O_NONBLOCK, then fstat: a FIFO or a device there is refused at once, as
            # `_safe_open` refuses one (open(2) of a FIFO can wait for good, SIGTERM too).
            fd = os.open(self.path, _FLAGS, 0o600)
        except OSError as exc:
            raise ConfigError(
                f"cannot open the lock file {self.path}: {exc.strerror or exc}; choose another "
                "state directory with --state-dir"
            ) from exc
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise ConfigError(
                f"cannot use the lock file {self.path}: not a regular file ({kind(mode)}); "
                "remove it, or choose another state directory with --state-dir"
            )
        os.set_blocking(fd, True)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            raise ConfigError(
                f"another otel-bridge run uses the state directory {directory} "
                f"({holder or 'its holder could not be read'}): two would overwrite each "
                "other's checkpoints; stop it first, or give this one another --state-dir"
            ) from exc
        self._fd = fd
        started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = f"pid {os.getpid()} on {socket.gethostname()}, started {started}: {command}\n"
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, line.encode("utf-8", "replace")[:_HOLDER_MAX], 0)
        except OSError:
            pass  # the lock holds without its description (a full disk)

    def release(self) -> None:
        """Let the next `run` take the directory. Idempotent."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor releases the flock


def _read_holder(fd: int) -> str:
    """The holder's line, printable and short (the file could hold anything)."""
    try:
        data = os.pread(fd, _HOLDER_MAX, 0)
    except OSError:
        return ""
    text = data.decode("utf-8", "replace").strip()
    return "".join(c if c.isprintable() else "?" for c in text)[:200]
