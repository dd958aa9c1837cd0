"""Which session logs `run` reads: one path per file, and refusals said once and counted.

A session directory is another user's on a shared host, so what it holds is checked again at
every look, not only when it is first found: a log may become a symbolic link, a FIFO, a
directory, a second name of another session's log (a hard link, which would export that
session twice), or grow past `--max-log-bytes` (a sparse file of a terabyte costs nothing to
make and would keep `run` catching up for good). Such a log is not read; the first time, and
each time the reason changes, one line says why (its path escaped if it is not printable) and
`otel_bridge.files.skipped` counts it by reason. The tailer looks at refused logs again at
every sweep, and at once on a notification: one that has become readable is followed again,
from its start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ._discovery import shown

__all__ = ["Gate", "identity_key"]

logger = logging.getLogger(__name__)


def identity_key(device: int, inode: int) -> int:
    """A file's identity in one int (a dict key that costs less than a tuple)."""
    return (device << 64) | inode


class Gate:
    """The refused logs (path -> reason), and which followed path holds each file.

    Args:
        count: called with the reason of each refusal said (`otel_bridge.files.skipped`).
    """

    def __init__(self, count: Callable[[str], None]) -> None:
        self._count = count
        self.refused: dict[str, str] = {}
        self._owners: dict[int, str] = {}  # identity_key -> the path that reads that file

    def refuse(self, path: str, reason: str, why: str) -> None:
        """Do not read `path`, for `reason` (a metric label; `why` is the line's text): said
        and counted unless it was refused for that reason already."""
        if self.refused.get(path) == reason:
            return
        self.refused[path] = reason
        logger.warning("not reading %s: %s", shown(path), why)
        self._count(reason)

    def admit(self, path: str) -> None:
        """`path` may be read (again)."""
        if self.refused.pop(path, None) is not None:
            logger.info("%s can be read now; following it", shown(path))

    def forget(self, path: str) -> None:
        """`path` is gone: nothing to say about it any more."""
        self.refused.pop(path, None)

    def owner(self, key: int, path: str) -> str | None:
        """The other followed path of the file `key`, if another path holds it."""
        other = self._owners.get(key)
        return other if other is not None and other != path else None

    def claim(self, key: int, path: str) -> None:
        """`path` reads the file `key`."""
        self._owners[key] = path

    def release(self, key: int, path: str) -> None:
        """`path` no longer reads the file `key`."""
        if self._owners.get(key) == path:
            del self._owners[key]
