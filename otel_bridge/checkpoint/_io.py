"""The checkpoint files on disk: read, appended to, replaced, set aside.

Kept apart from the journal's logic (`checkpoint/_store.py`) because each of these is about what the
file system can do to a file: a leftover temporary file of a crash, a link planted where a
file goes, a failed write that must leave nothing half-written behind, a damaged file that
must not be written over. Files are opened without following links (`O_NOFOLLOW`), created
only afresh (`O_EXCL`, mode 0600), and a replacement is fsynced before the rename and the
directory after it (as Vector's checkpointer does). A file is read only if it is a regular
file, opened without blocking (`_safe_open`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from datetime import datetime, timezone
from pathlib import Path

from ..files._safe_open import open_regular

__all__ = ["append_file", "read_file", "replace_file", "set_aside"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_ASIDE = ".damaged-"


def read_file(path: Path) -> bytes:
    """A checkpoint file's bytes, opened as the logs are (`open_regular` below its directory:
    not through a symbolic link, and a FIFO or a device put in its place is refused at once
    instead of blocking the start, where SIGTERM could not stop it).

    Raises:
        OSError: it cannot be read (a link, or not a regular file: `UnsafeFile`).
    """
    with open_regular(path, path.parent) as handle:
        size = handle.stat.st_size
        data = handle.read(size)
        while len(chunk := handle.read(1 << 16)) > 0:  # grown since (not by the bridge)
            data += chunk
        return data


def append_file(path: Path, data: bytes) -> None:
    """Append `data` to the existing file at `path` (not through a link), then fsync.

    Raises:
        OSError: it cannot be written.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes) -> None:
    """Put `data` at `path` whole or not at all: written to `<name>.tmp`, fsynced, renamed
    over `path`, the directory fsynced. The temporary file is created afresh, mode 0600: a
    leftover (or a link planted in its place) is removed first, and O_EXCL | O_NOFOLLOW fail
    rather than follow one that comes back in between. A failure removes it.

    Raises:
        OSError: it cannot be written; `path` is as it was.
    """
    temp = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(path.parent)


def set_aside(path: Path, keep: int) -> Path | None:
    """Rename the file at `path` to `<name>.damaged-<UTC time>`, mode 0600, so that it is
    never written over, and remove the oldest such files beyond the last `keep`. None when
    there is no regular file there (a directory, a link: left as they are).

    Raises:
        OSError: it could not be renamed.
    """
    if not stat.S_ISREG(os.lstat(path).st_mode):
        return None
    # to the microsecond: names sort by time, and a later one never takes an earlier's name
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    target = path.with_name(f"{path.name}{_ASIDE}{stamp}")
    number = 0
    while os.path.lexists(target):
        number += 1
        target = path.with_name(f"{path.name}{_ASIDE}{stamp}-{number}")
    os.rename(path, target)
    with contextlib.suppress(OSError):
        os.chmod(target, 0o600)
    for old in sorted(path.parent.glob(f"{path.name}{_ASIDE}*"))[:-keep]:
        with contextlib.suppress(OSError):
            old.unlink()
    return target


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
