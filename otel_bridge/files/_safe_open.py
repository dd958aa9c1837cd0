"""Opening files other users control: regular files only, and never a link out of the tree.

Every path under a session-state directory belongs to whoever runs the session, and on a shared
host that is another user. Opening such a path the ordinary way can hang the daemon for good:
`open()` of a FIFO waits for a writer, on the thread that reads every other log too, and
SIGTERM cannot interrupt it. And a path checked once (at discovery) can be swapped afterwards
for a symbolic link to any file the daemon may read. So every file the bridge reads but did not
create is opened here:

- with `O_NONBLOCK`, so that opening a FIFO or a device returns at once, then `fstat` of what
  was opened: anything but a regular file is refused (`UnsafeFile`) before a byte is read, and
  the flag is cleared for the reads that follow;
- below a `root` (the directory the log was found in), one component at a time from a
  descriptor of that directory, each with `O_NOFOLLOW` (and `O_DIRECTORY` for directories), so
  that no symbolic link is followed at any level and nothing outside `root` can be reached,
  whatever was swapped in since the path was found. Where `openat` is not available
  (Windows), each component is checked with `lstat` and the file's resolved path must lie
  inside `root`: the same rule, with a race window.

`O_CLOEXEC` keeps the descriptors out of the worker processes `replay --jobs` starts. See
open(2) (O_NOFOLLOW, O_NONBLOCK and FIFOs, O_DIRECTORY) and fifo(7).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["RegularFile", "UnsafeFile", "open_regular"]

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
_FILE_FLAGS = os.O_RDONLY | _NONBLOCK | _CLOEXEC | _BINARY
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NONBLOCK | _CLOEXEC
_PREAD = hasattr(os, "pread")
#: Walk below a root with openat(2): POSIX systems.
_AT = bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd
#: What open(2) with O_NOFOLLOW says of a symbolic link: ELOOP (Linux, macOS), EMLINK (FreeBSD),
#: and with O_DIRECTORY, ENOTDIR for a link or a file where a directory was expected.
_LINK_ERRORS = (errno.ELOOP, getattr(errno, "EMLINK", errno.ELOOP), errno.ENOTDIR)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class UnsafeFile(OSError):
    """The path is there but is not to be read: not a regular file, or reached through a
    symbolic link (or leading) out of the directory it must stay in. `strerror` says which, in
    words a log line can use."""


class RegularFile:
    """A regular file opened for reading, with the `fstat` taken when it was opened (`stat`:
    its device, inode and size at that moment). A context manager; reads never block on
    anything but the disk. Reads go straight to the descriptor (`pread` where there is one):
    a tailer reads a few hundred bytes at a time, and a buffered file object would cost more
    than the read."""

    __slots__ = ("_fd", "stat")

    def __init__(self, fd: int, st: os.stat_result) -> None:
        self._fd = fd
        self.stat = st

    def read(self, size: int) -> bytes:
        """Up to `size` bytes from the current position (fewer only at the end of the file)."""
        return _read_fully(lambda n: os.read(self._fd, n), size)

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to `size` bytes from `offset` (fewer only at the end of the file)."""
        if _PREAD:
            done = 0

            def at(n: int) -> bytes:
                nonlocal done
                chunk = os.pread(self._fd, n, offset + done)
                done += len(chunk)
                return chunk

            return _read_fully(at, size)
        os.lseek(self._fd, offset, os.SEEK_SET)
        return self.read(size)

    def fileno(self) -> int:
        """The descriptor (for `flock`): the file's until `close`."""
        return self._fd

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RegularFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_regular(
    path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
) -> RegularFile:
    """Open `path` for reading if it is a regular file; below `root` without following a link.

    Args:
        path: the file.
        root: the directory `path` must stay inside (a session-state directory, or the session
            directory the user named): every component of `path` below it is opened without
            following a symbolic link. `root` itself may be one (the user chose it). None: a
            file the user named, opened as named (links followed), but still a regular file
            only.

    Raises:
        UnsafeFile: not a regular file (a FIFO, a device, a directory...), a symbolic link
            below `root`, or `path` not below `root`.
        OSError: it cannot be opened (FileNotFoundError when it is gone).
    """
    fd = _open(os.fspath(path), None if root is None else os.fspath(root))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(errno.EINVAL, f"not a regular file ({kind(st.st_mode)})", str(path))
        if _NONBLOCK:
            os.set_blocking(fd, True)  # reads of a regular file: as any other reader's
        return RegularFile(fd, st)
    except BaseException:
        os.close(fd)
        raise


def kind(mode: int) -> str:
    """What a file of this mode is, in words: "a FIFO", "a directory"..."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a special file"


def _open(path: str, root: str | None) -> int:
    if root is None:
        return os.open(path, _FILE_FLAGS)
    parts = _below(path, root)
    if not parts or ".." in parts:
        raise UnsafeFile(errno.EXDEV, f"not inside {root}", path)
    if not _AT:
        return _open_checked(path, root, parts)
    directory = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            below = _at(part, _DIR_FLAGS | _NOFOLLOW, directory, path, root)
            os.close(directory)
            directory = below
        return _at(parts[-1], _FILE_FLAGS | _NOFOLLOW, directory, path, root)
    finally:
        os.close(directory)


def _below(path: str, root: str) -> tuple[str, ...]:
    """The names of `path` below `root`; () if it is not below it. By its text first (paths the
    bridge makes are `root` joined with names), by `pathlib` otherwise."""
    prefix = root.rstrip(os.sep) + os.sep
    if path.startswith(prefix) and (os.altsep is None or os.altsep not in path):
        return tuple(name for name in path[len(prefix) :].split(os.sep) if name not in ("", "."))
    try:
        return Path(path).relative_to(root).parts
    except ValueError:
        return ()


def _at(name: str, flags: int, directory: int, path: str, root: str) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        if exc.errno not in _LINK_ERRORS:
            raise
        try:
            st = os.lstat(name, dir_fd=directory)
        except OSError:
            raise exc from None
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeFile(
                exc.errno, f"a symbolic link (none is followed inside {root})", path
            ) from None
        raise UnsafeFile(
            exc.errno, f"{name} is not a directory ({kind(st.st_mode)})", path
        ) from None


def _open_checked(path: str, root: str, parts: tuple[str, ...]) -> int:
    """Without openat: no component below `root` may be a link, and the file opened must
    resolve inside `root`."""
    place = Path(root)
    for part in parts:
        place = place / part
        if place.is_symlink():
            raise UnsafeFile(errno.ELOOP, f"a symbolic link (none is followed inside {root})", path)
    fd = os.open(path, _FILE_FLAGS)
    if not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root)):
        os.close(fd)
        raise UnsafeFile(errno.EXDEV, f"leads out of {root}", path)
    return fd


def _read_fully(read: Callable[[int], bytes], size: int) -> bytes:
    """`size` bytes, or fewer at the end of the file (a read may return less than asked)."""
    chunk = read(size)
    if len(chunk) == size or not chunk:
        return chunk
    chunks = [chunk]
    size -= len(chunk)
    while size > 0 and (chunk := read(size)):
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
