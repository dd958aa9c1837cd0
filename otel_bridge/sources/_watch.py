"""Where the tailer's hints come from: inotify on Linux, watchdog elsewhere, or nothing.

A `Watcher` watches the session-state directories (for sessions that appear) and, with inotify,
each session directory (for its log). It only ever records paths in the tailer's `Hints`; what
it cannot watch (a limit reached, no notifications on this platform) it reports, once, counted,
and says so in `degraded`, for the tailer to poll instead. Watchdog's recursive observer is the
fallback where inotify cannot be had: it is asked for growth, creation, removal and renames only
(not opens or reads, which the bridge's own reading would cause).
See https://python-watchdog.readthedocs.io/ and inotify(7).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from . import _inotify

__all__ = ["Hints", "Watcher"]

logger = logging.getLogger(__name__)

_WATCHDOG_EVENTS = [
    FileModifiedEvent,
    FileCreatedEvent,
    DirCreatedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
    DirMovedEvent,
    FileDeletedEvent,
    DirDeletedEvent,
]

_LIMITS = (
    "raise the fs.inotify.max_user_watches / max_user_instances sysctls and restart to watch it"
)


class Watcher:
    """Turns file-system notifications into hints.

    Args:
        roots: the session-state directories.
        hints: where paths go.
        wake: set when the kernel dropped notifications (an overflow).
        on_problem: called with ("unavailable" or "overflow") each time one happens, for the
            health metric.
        rescan_seconds: for the line that says how often what cannot be watched is polled.
        enabled: False: watch nothing (poll only).
        backend: "inotify", "watchdog" or None to choose (inotify where there is one).
    """

    def __init__(
        self,
        roots: Sequence[Path],
        hints: Hints,
        wake: threading.Event,
        on_problem: Callable[[str], None],
        *,
        rescan_seconds: float,
        enabled: bool = True,
        backend: str | None = None,
    ) -> None:
        self._roots = list(roots)
        self._hints = hints
        self._wake = wake
        self._on_problem = on_problem
        self._rescan = rescan_seconds
        self.enabled = enabled
        self.backend = backend or ("inotify" if _inotify.available() else "watchdog")
        self._inotify: _inotify.Inotify | None = None
        self._observers: dict[Path, BaseObserver] = {}
        self._unwatchable: set[Path] = set()  # roots that could not be watched
        self._missed = 0  # session directories that could not be watched
        self._overflowed = False
        self._filter = _OverflowFilter(self._overflow)
        self.problems: Counter[str] = Counter()

    @property
    def degraded(self) -> bool:
        """Something is not watched: the tailer should look at every log at every rescan."""
        return not self.enabled or bool(self._unwatchable) or self._missed > 0

    def watch_roots(self) -> None:
        """Watch the roots that exist and are not watched yet (called at every rescan: a root
        may appear, or be removed and made again)."""
        if not self.enabled:
            return
        for root in self._roots:
            if root in self._unwatchable or not root.is_dir():
                continue
            if self.backend == "inotify":
                self._inotify_root(root)
            elif root not in self._observers:
                self._watchdog_root(root)

    def watch_directory(self, directory: Path) -> None:
        """Watch a session directory for its log (inotify; watchdog's recursive watch of the
        root covers it already)."""
        if not self.enabled or self.backend != "inotify" or self._inotify is None:
            return
        try:
            self._inotify.watch(str(directory))  # (nothing done if it is watched already)
        except OSError as exc:
            if exc.errno == 28:  # ENOSPC: max_user_watches reached
                self._missed += 1
                self.problem(
                    "unavailable",
                    f"cannot watch {directory} ({exc.strerror}); the logs that cannot be "
                    f"watched are polled every {self._rescan:g}s ({_LIMITS})",
                )
            return  # otherwise gone meanwhile: nothing to watch

    def forget_directory(self, directory: Path) -> None:
        if self._inotify is not None:
            self._inotify.unwatch(str(directory))

    def overflowed(self) -> bool:
        """Did the kernel drop notifications since the last call?"""
        overflowed, self._overflowed = self._overflowed, False
        return overflowed

    def close(self) -> None:
        for observer in self._observers.values():
            observer.stop()
        for observer in self._observers.values():
            observer.join(timeout=5)
        self._observers.clear()
        self._filter.detach()
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None

    # --- internals -------------------------------------------------------------------------

    def _overflow(self) -> None:
        self._overflowed = True
        self._wake.set()

    def problem(self, reason: str, message: str) -> None:
        """Say it (once per reason; the rest at DEBUG) and count it."""
        if not self.problems[reason]:
            logger.warning("%s", message)
        else:
            logger.debug("%s", message)
        self.problems[reason] += 1
        self._on_problem(reason)

    def _inotify_root(self, root: Path) -> None:
        if self._inotify is None:
            try:
                self._inotify = _inotify.Inotify(self._hints.add, self._overflow)
            except OSError as exc:  # EMFILE: max_user_instances reached
                self._unwatchable.update(self._roots)
                self.problem(
                    "unavailable",
                    f"cannot use inotify ({exc.strerror or exc}); polling every "
                    f"{self._rescan:g}s instead ({_LIMITS})",
                )
                return
        if self._inotify.watching(str(root)):
            return
        try:
            self._inotify.watch(str(root))
        except OSError as exc:
            if exc.errno == 28:
                self._unwatchable.add(root)
                self.problem(
                    "unavailable",
                    f"cannot watch {root} ({exc.strerror}); polling it every "
                    f"{self._rescan:g}s instead ({_LIMITS})",
                )

    def _watchdog_root(self, root: Path) -> None:
        observer = Observer()
        try:
            observer.schedule(self._hints, str(root), recursive=True, event_filter=_WATCHDOG_EVENTS)
            observer.start()
        except OSError as exc:  # e.g. inotify watch or instance limit reached
            observer.stop()
            # Not tried again: a recursive watch that fails part-way has walked the whole
            # tree first, too costly to repeat every rescan.
            self._unwatchable.add(root)
            self.problem(
                "unavailable",
                f"cannot watch {root} ({exc.strerror or exc}); polling it every "
                f"{self._rescan:g}s instead ({_LIMITS})",
            )
            return
        self._filter.attach()
        self._observers[root] = observer


class _OverflowFilter(logging.Filter):
    """Watchdog's only report of an inotify queue overflow is a warning on its logger: this
    turns it into the watcher's overflow (and keeps the line off the terminal; the tailer says
    it in its own words)."""

    _LOGGERS = ("watchdog.observers.inotify_c", "watchdog.observers.inotify")

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__()
        self._on_overflow = on_overflow
        self._attached = False

    def filter(self, record: logging.LogRecord) -> bool:
        if "overflow" in str(record.msg):
            self._on_overflow()
            return False
        return True

    def attach(self) -> None:
        if not self._attached:
            for name in self._LOGGERS:
                logging.getLogger(name).addFilter(self)
            self._attached = True

    def detach(self) -> None:
        if self._attached:
            for name in self._LOGGERS:
                logging.getLogger(name).removeFilter(self)
            self._attached = False


class Hints(FileSystemEventHandler):
    """Collects changed paths from watchdog's thread; never reads files itself."""

    def __init__(self, wake: threading.Event) -> None:
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self._wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path:
                self.add(os.fsdecode(path))

    def add(self, path: str) -> None:
        """One changed path (from the watcher's thread)."""
        with self._lock:
            self._paths.add(path)
        self._wake.set()

    def take(self) -> set[str]:
        with self._lock:
            paths, self._paths = self._paths, set()
        return paths
