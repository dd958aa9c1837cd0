"""`doctor`'s checks of what `run` itself needs on this machine: logs it can read, a state
directory it can use, a port it can serve.

Each is checked the way `run` would meet it, so that `[ok]` means `run` will not stumble
there: every log opened as the tailer opens it (a log of mode 000 is seen, not counted), the
port bound as the /metrics server binds it, the state directory's lock tried without taking
it (a `run` already there holds it, and says who it is).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ..checkpoint._lock import LOCK_NAME
from ..export import cannot_serve
from ..files._safe_open import UnsafeFile, open_regular
from ..sources import LogFile, Refused, session_log, shown

__all__ = ["Check", "check_port", "check_state_dir", "session_logs"]

_HOLDER_MAX = 512
#: run's checkpoint journal (`checkpoint/_store.py`, not imported: doctor loads no store).
CHECKPOINTS_NAME = "checkpoints.jsonl"
_SHOWN = 3  # logs that cannot be read named in the line; the rest are counted


@dataclass(frozen=True, slots=True)
class Check:
    """One finding: ok or not, and a line a person can act on.

    `warning` marks something that works but is probably not what the user wants (it does not
    change the exit status).
    """

    ok: bool
    message: str
    warning: bool = False


def session_logs(root: Path) -> tuple[list[LogFile], Check | None]:
    """The logs under `root` that `run` would read, and a check naming those it would not:
    refused as they are (a link, a FIFO, a name that is not printable) or that this user
    cannot open (permissions: a log of mode 000, another user's log). None when there are
    none such. Each log is opened as the tailer opens it."""
    try:
        with os.scandir(root) as entries:
            directories = sorted(Path(entry.path) for entry in entries)
    except OSError:
        return [], None
    logs: list[LogFile] = []
    failed: list[str] = []
    denied = False
    for directory in directories:
        found = session_log(root, directory)
        if isinstance(found, Refused):
            failed.append(f"{shown(found.path.parent.name)}: {found.why}")
            denied = denied or found.reason == "denied"
            continue
        if found is None:
            continue
        try:
            with open_regular(found.path, found.root):
                logs.append(found)
        except OSError as exc:
            failed.append(f"{shown(directory.name)}: {exc.strerror or exc}")
            denied = denied or isinstance(exc, PermissionError)
    if not failed:
        return logs, None
    listed = "; ".join(failed[:_SHOWN]) + ("; ..." if len(failed) > _SHOWN else "")
    return logs, Check(
        False,
        f"{root}: {len(failed)} of {len(failed) + len(logs)} session logs cannot be read "
        f"({listed}): run says so once for each, and reads it once it can"
        + (" (a log this user may not read: its owner can make it readable)" if denied else ""),
    )


def lock_holder(state_dir: Path) -> str | None:
    """Who holds the state directory's lock (a `run` is using it), or None. Tried, never
    taken: the file is not created, not written. Opened as `open_regular` opens (a FIFO
    there would block doctor; `special_files` reports one)."""
    try:
        handle = open_regular(state_dir / LOCK_NAME, state_dir)
    except OSError:
        return None  # no lock file: no run has used it, or it cannot be looked at
    fd = handle.fileno()
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            data = os.pread(fd, _HOLDER_MAX, 0)
            holder = data.decode("utf-8", "replace").strip()
            return holder if holder.isprintable() else "its holder could not be read"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        handle.close()


def special_files(state_dir: Path) -> str | None:
    """The files of the state directory that run reads but could not use, in words: its
    lock or checkpoints replaced by a FIFO, a device, a link or a directory. None: all
    well (or not there yet)."""
    problems = []
    for name in (LOCK_NAME, CHECKPOINTS_NAME):
        if not os.path.lexists(state_dir / name):
            continue
        try:
            open_regular(state_dir / name, state_dir).close()
        except UnsafeFile as exc:
            problems.append(f"{name} is {exc.strerror}")
        except OSError:
            continue  # unreadable: the writable check says what matters
    return "; ".join(problems) or None


def check_state_dir(state_dir: Path) -> tuple[Check, str | None]:
    """Whether `run` can keep its checkpoints in `state_dir` (it creates the directory if
    need be), and who holds its lock if a run is using it."""
    if state_dir.exists():
        if not state_dir.is_dir():
            return Check(
                False,
                f"state directory {state_dir} is not a directory: give run another --state-dir",
            ), None
        if not os.access(state_dir, os.W_OK | os.X_OK):
            return Check(
                False,
                f"state directory {state_dir}: not writable by this user: "
                "give run another --state-dir",
            ), None
        special = special_files(state_dir)
        if special is not None:
            return Check(
                False,
                f"state directory {state_dir}: {special}: run refuses such a lock file, and "
                "uses no such checkpoints (it reads every log from its start); remove it",
            ), None
        holder = lock_holder(state_dir)
        if holder is not None:
            return Check(
                True,
                f"state directory {state_dir}: a run is using it ({holder}); a second run "
                "there would refuse to start: give it another --state-dir",
                warning=True,
            ), holder
        journal = state_dir / "checkpoints.jsonl"
        what = "checkpoints kept" if journal.exists() else "no checkpoint yet"
        return Check(True, f"state directory {state_dir}: {what}"), None
    parent = next((p for p in state_dir.parents if p.exists()), None)
    if parent is None or not os.access(parent, os.W_OK | os.X_OK):
        return Check(
            False,
            f"state directory {state_dir} cannot be created ({parent} is not "
            "writable): give run another --state-dir",
        ), None
    return Check(True, f"state directory {state_dir}: made at the first start"), None


def check_port(host: str, port: int, running: str | None) -> Check:
    """Whether `run` could serve /metrics, /healthz and /readyz on host:port, bound as its
    server binds (`export._http.TelemetryServer`); `running`: the run holding the state
    directory, which would explain a port in use."""
    where = f"/metrics, /healthz and /readyz on {host}:{port}"
    if port == 0:
        return Check(True, f"{where.removesuffix(':0')}: a free port, picked at start")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
    except (OSError, OverflowError) as exc:
        in_use = isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE
        if in_use and running is not None:
            return Check(
                True,
                f"{where}: the port is in use, presumably by the run above; a second run "
                "needs another --prometheus-port (0: any free port) or --no-prometheus",
                warning=True,
            )
        return Check(False, f"run {cannot_serve(host, port, exc)}")
    finally:
        with contextlib.suppress(OSError):
            listener.close()
    return Check(True, f"{where}: the port is free")
