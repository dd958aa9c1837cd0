"""Where the bridge may write: nowhere inside a directory of session logs it reads.

What is under a session-state directory belongs to the Copilot CLI: it reads a session's
`events.jsonl` back when the session resumes, and takes every directory there for a session.
A `--traces-file` that is a followed log gets OTLP lines appended to a live session; a state
directory among the sessions gets `run.lock` and `checkpoints.jsonl` beside them. Neither is
ever what the user meant, and both corrupt what an agent reads. So every path the bridge
would write (the state directory, the traces and metrics files) is refused when it lies inside
a directory it reads, the directory itself included, or is one of the logs it reads.

Paths are compared as the kernel will meet them: resolved real paths (a relative path, a `..`
or a symbolic link that points inside are seen for where they lead; a path that does not exist
yet is resolved as far as it exists), and a file that exists with more than one link is
compared by device and inode with the logs (a hard link to a log is that log, wherever it is).
A path comes here as the command line made it (`~` and `$NAME` already expanded by
`cli._types.path`), and is resolved as it is.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["EVENTS_NAME", "misplaced"]

#: A session's log (as `sources.EVENTS_FILE`, not imported: this module stays light).
EVENTS_NAME = "events.jsonl"


def misplaced(path: Path, roots: Sequence[Path], reads: str) -> str | None:
    """Why `path` may not be written, or None when it may: it lies inside one of `roots` (a
    directory the bridge reads, or the root itself) or is one of their logs. `reads` says what
    a root is to the command ("a session-state directory run watches"). The words name `path`
    as given, the root, and where `path` leads when that is not where it seems."""
    real = Path(os.path.realpath(path))
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if real.is_relative_to(real_root):
            return _said(path, real, root, real_root, reads)
    linked = _hard_linked(path, roots)
    if linked is not None:
        log, root = linked
        return f"{path} is a hard link to the session log {log} (in {root}, {reads})"
    return None


def _said(path: Path, real: Path, root: Path, real_root: Path, reads: str) -> str:
    leads = "" if Path(os.path.abspath(path)) == real else f" (it leads to {real})"
    if real == real_root and os.path.isfile(real_root):
        return f"{path} is the session log {root}, {reads}{leads}"
    if real == real_root:
        return f"{path} is {reads}{leads}" if path == root else f"{path} is {root}, {reads}{leads}"
    return f"{path} is inside {root}, {reads}{leads}"


def _hard_linked(path: Path, roots: Sequence[Path]) -> tuple[Path, Path] | None:
    """A log of `roots` that `path` is another name of (same device and inode), with its
    root. Looked for only when `path` is a regular file with more than one link, which is
    rare: the logs are not listed otherwise."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return None
    for root in roots:
        for log in _logs(root):
            try:
                other = os.stat(log)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return log, root
    return None


def _logs(root: Path) -> Iterator[Path]:
    """The logs a root holds as `find_logs` takes them: itself (a log given), its own
    `events.jsonl` (a session directory) and each `<session>/events.jsonl`."""
    yield root
    yield root / EVENTS_NAME
    try:
        with os.scandir(root) as entries:
            names = [entry.name for entry in entries]
    except OSError:
        return
    for name in names:
        yield root / name / EVENTS_NAME
