"""Linux inotify, directly: one file descriptor, one thread, only the directories that matter.

Why not watchdog's recursive observer on Linux: it watches every directory of the tree (session
directories have subdirectories the bridge never reads), asks for more than growth by default,
and passes each notification through three threads (reader, emitter, dispatcher) before the
tailer sees it: at a thousand appends a second that was a third of `run`'s CPU. Here the tailer
watches each session-state directory (for sessions that appear) and each session directory (for
its log), with a mask of growth, creation, removal and renames; a single thread reads the
descriptor and records paths as hints. Watchdog stays the watcher elsewhere (macOS, BSD,
Windows), and where inotify cannot be had.

See inotify(7): the event layout (`struct inotify_event`), IN_Q_OVERFLOW and the limits
(`/proc/sys/fs/inotify/max_user_watches`, `max_user_instances`, `max_queued_events`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import struct
import sys
import threading
from collections.abc import Callable

__all__ = ["Inotify", "available"]

IN_MODIFY = 0x00000002
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_CLOEXEC = 0o2000000
IN_NONBLOCK = 0o4000

#: What the bridge needs to know about a directory: a file in it grew (a log), appeared,
#: vanished or was renamed (a session directory or a log), or the directory itself went.
MASK = IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_ONLYDIR

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of NUL-padded name)
_READ_SIZE = 256 * 1024


def available() -> bool:
    """Is inotify there to be used (Linux, with a C library that has it)?"""
    return _libc() is not None


_LIBC: ctypes.CDLL | None = None
_LIBC_LOOKED = False


def _libc() -> ctypes.CDLL | None:
    global _LIBC, _LIBC_LOOKED
    if not _LIBC_LOOKED:
        _LIBC_LOOKED = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                libc.inotify_init1.argtypes = [ctypes.c_int]
                libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
                libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
                _LIBC = libc
            except (OSError, AttributeError):
                _LIBC = None
    return _LIBC


class Inotify:
    """An inotify instance and the thread that turns its events into `on_path(path)` calls.

    Args:
        on_path: called from the reading thread with each path an event names (the
            directory's path joined with the file name, or the directory itself): must be quick
            and thread-safe (the tailer's `Hints.add`).
        on_overflow: called from the reading thread when the kernel's queue overflowed.

    Raises:
        OSError: inotify cannot be had (EMFILE: `max_user_instances` reached).
    """

    def __init__(self, on_path: Callable[[str], None], on_overflow: Callable[[], None]) -> None:
        libc = _libc()
        if libc is None:
            raise OSError(errno.ENOSYS, "inotify is not available on this system")
        self._libc = libc
        fd = libc.inotify_init1(IN_CLOEXEC | IN_NONBLOCK)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self._fd = fd
        self._on_path = on_path
        self._on_overflow = on_overflow
        self._lock = threading.Lock()
        self._paths: dict[int, str] = {}  # watch descriptor -> directory
        self._wds: dict[str, int] = {}
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="inotify", daemon=True)
        self._thread.start()

    def watch(self, directory: str) -> None:
        """Watch a directory (again: a no-op).

        Raises:
            OSError: ENOSPC when `max_user_watches` is reached; ENOENT/ENOTDIR when it is gone.
        """
        with self._lock:
            if directory in self._wds:
                return
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(directory), MASK)
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), directory)
        with self._lock:
            self._paths[wd] = directory
            self._wds[directory] = wd

    def unwatch(self, directory: str) -> None:
        """Stop watching a directory (one that is not watched: a no-op)."""
        with self._lock:
            wd = self._wds.pop(directory, None)
            if wd is not None:
                self._paths.pop(wd, None)
        if wd is not None:
            self._libc.inotify_rm_watch(self._fd, wd)  # fails harmlessly if already gone

    def watching(self, directory: str) -> bool:
        with self._lock:
            return directory in self._wds

    @property
    def watches(self) -> int:
        with self._lock:
            return len(self._wds)

    def close(self) -> None:
        """Stop the thread and release the descriptor. Idempotent."""
        if self._stop_w < 0:
            return
        os.write(self._stop_w, b"x")
        self._thread.join(timeout=5)
        for fd in (self._stop_r, self._stop_w, self._fd):
            os.close(fd)
        self._stop_w = -1

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if self._stop_r in ready:
                return
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except OSError:
                return  # closed under us
            self._dispatch(data)

    def _dispatch(self, data: bytes) -> None:
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            name = data[offset + _HEADER.size : offset + _HEADER.size + length].rstrip(b"\0")
            offset += _HEADER.size + length
            if mask & IN_Q_OVERFLOW:
                self._on_overflow()
                continue
            with self._lock:
                directory = self._paths.get(wd)
                if mask & IN_IGNORED and directory is not None:  # removed, or gone
                    del self._paths[wd]
                    self._wds.pop(directory, None)
            if directory is None:
                continue
            self._on_path(os.path.join(directory, os.fsdecode(name)) if name else directory)
