"""Finding the logs to follow: the session-state directories listed (at start, and again when
their mtime moves), session directories with no log yet waited for, a hint's path looked at,
the shard's sessions only.

A directory with no log yet is looked at again when its mtime moves: the young ones (made
while `run` runs, or lately) are watched, the CLI writing its log right after making its
directory; the others are looked at in turn, `_WAITING_PER_RESCAN` a rescan.
(The OpenTelemetry Collector's file consumer keeps finding apart from reading too:
pkg/stanza/fileconsumer/matcher.)
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._discovery import EVENTS_FILE, LogFile, Refused, session_log
from .._shard import in_shard
from .._watch import Watcher
from ._options import TailOptions
from ._tracker import Tracker

__all__ = ["Finder"]

#: Session directories with no log yet that get a watch of their own (the newest): beyond,
#: they are polled. A directory the CLI makes gets its log within milliseconds, so the young
#: ones are watched; 100,000 empty folders would otherwise take 100,000 of the user's inotify
#: watches.
_WATCHED_WAITING = 1000
#: Session directories with no log yet looked at (stat) per rescan, in turn: 100,000 of
#: them cost a stat each every 8 minutes or so at the default 5 s, not 20,000 stats a second.
_WAITING_PER_RESCAN = 1000

#: follow(log, at_start=..., now=...): start following a found log; says where from.
Follow = Callable[..., str]


class Finder:
    """Finds session logs under `roots` for `follow`.

    Args:
        roots: the session-state directories.
        options: the shard, the catch-up window.
        tracker: the logs known already (not found again).
        watcher: watches session directories.
        follow: takes a found log.
        clock: wall-clock seconds.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        options: TailOptions,
        tracker: Tracker,
        watcher: Watcher,
        follow: Follow,
        clock: Callable[[], float],
    ) -> None:
        self.roots = list(roots)
        self._options = options
        self._tracker = tracker
        self._watcher = watcher
        self._follow = follow
        self._clock = clock
        self.started = False
        self._root_mtimes: dict[Path, float] = {}
        # Session dirs with no log yet -> mtime, in the order they are looked at in.
        self.waiting_dirs: OrderedDict[str, float] = OrderedDict()
        self._waiting_watched: dict[str, None] = {}  # those watched, oldest first

    def scan(self, root: Path) -> list[LogFile]:
        """List `root` for session logs not followed yet; remember directories that have
        no log yet, to look at again when their mtime moves."""
        try:
            self._root_mtimes[root] = root.stat().st_mtime
        except OSError:
            self._root_mtimes.pop(root, None)
            return []
        listed = _subdirectories(root)
        if listed is None:  # not listable now (permissions): listed again at the next rescan
            self._root_mtimes.pop(root, None)
            return []
        found = []
        shard = self._options.shard
        gate = self._tracker.gate
        refused = gate.refused
        for name, path in listed:  # strings: 10,000 Paths cost 50 ms to make
            log_path = os.path.join(path, EVENTS_FILE)
            if (
                self._tracker.known(log_path)
                or path in self.waiting_dirs
                or log_path in refused
                or not in_shard(name, shard)
            ):
                continue
            directory = Path(path)
            log = session_log(root, directory)
            if isinstance(log, LogFile):
                found.append(log)
            elif isinstance(log, Refused):
                gate.refuse(str(log.path), log.reason, log.why)
            elif not name.startswith("."):
                self._await(directory)
        return sorted(found, key=lambda f: str(f.path))

    def _await(self, directory: Path) -> None:
        """A session directory with no log yet: looked at once more (a log created before
        the watch was there gives no notification), and again whenever its mtime moves. A
        young one (made while `run` runs, or lately) is watched: the CLI writes its log
        right after making it; the others are looked at in turn (`rescan`)."""
        key = str(directory)
        if key in self.waiting_dirs:
            return
        mtime = _mtime(directory)
        self.waiting_dirs[key] = mtime or 0.0
        if self.started or (
            mtime is not None and self._clock() - mtime <= self._options.catch_up_seconds
        ):
            self._watch_waiting(key)
        log = session_log(directory.parent, directory)
        if isinstance(log, LogFile):
            self._stop_waiting(key)
            self._follow(log, at_start=not self.started, now=self._clock())
        elif isinstance(log, Refused):
            self._stop_waiting(key, unwatch=True)
            self._tracker.gate.refuse(str(log.path), log.reason, log.why)

    def _watch_waiting(self, key: str) -> None:
        """Watch a session directory with no log yet, in place of the oldest watched one when
        `_WATCHED_WAITING` are."""
        if key in self._waiting_watched:
            return
        if len(self._waiting_watched) >= _WATCHED_WAITING:
            oldest = next(iter(self._waiting_watched))
            del self._waiting_watched[oldest]
            self._watcher.forget_directory(Path(oldest))
        self._waiting_watched[key] = None
        self._watcher.watch_directory(Path(key))

    def _stop_waiting(self, key: str, *, unwatch: bool = False) -> None:
        """A session directory waits no more: its log is followed (its watch is the log's
        now), refused or gone (`unwatch`)."""
        self.waiting_dirs.pop(key, None)
        if key in self._waiting_watched:
            del self._waiting_watched[key]
            if unwatch:
                self._watcher.forget_directory(Path(key))

    def rescan(self, now: float) -> None:
        """The periodic look without hints: a root whose mtime moved is listed again; session
        directories still without a log are looked at, `_WAITING_PER_RESCAN` at a time in
        turn, and one whose mtime moved is looked into (and watched)."""
        for root in self.roots:
            try:
                mtime = root.stat().st_mtime
            except OSError:
                continue
            if self._root_mtimes.get(root) != mtime:
                for log in self.scan(root):
                    self._follow(log, at_start=False, now=now)
        waiting = self.waiting_dirs
        for _ in range(min(_WAITING_PER_RESCAN, len(waiting))):
            directory, mtime = waiting.popitem(last=False)  # the longest not looked at
            current = _mtime(Path(directory))
            if current is None:
                self._stop_waiting(directory, unwatch=True)
                continue
            waiting[directory] = current  # to the back of the turn
            if current != mtime:
                self._watch_waiting(directory)
                self.consider(directory, now)

    def consider(self, path: str, now: float) -> None:
        """A hint (or a sweep) for a path that is not a followed log: a new session directory
        or log, or a refused log that may be readable now?"""
        candidate = Path(path)
        directory = candidate.parent if candidate.name == EVENTS_FILE else candidate
        root = directory.parent
        if root not in self.roots or not in_shard(directory.name, self._options.shard):
            return  # deeper inside a session directory, elsewhere, or another shard's
        log_path = str(directory / EVENTS_FILE)
        if self._tracker.known(log_path):
            return  # a sleeping log is woken by its own notification or the sweep
        gate = self._tracker.gate
        log = session_log(root, directory)
        if isinstance(log, LogFile):
            self._stop_waiting(str(directory))
            self._follow(log, at_start=False, now=now)
        elif isinstance(log, Refused):
            self._stop_waiting(str(directory), unwatch=True)
            gate.refuse(str(log.path), log.reason, log.why)
        else:
            gate.forget(log_path)  # gone, or not there any more
            if directory.is_dir() and not directory.name.startswith("."):
                self._await(directory)


def _subdirectories(root: Path) -> list[tuple[str, str]] | None:
    """(name, path) of each directory in `root`; None when it cannot be listed."""
    try:
        with os.scandir(root) as entries:
            return [(e.name, e.path) for e in entries if _is_dir(e)]
    except OSError:
        return None


def _is_dir(entry: Any) -> bool:
    try:
        return bool(entry.is_dir(follow_symlinks=False))
    except OSError:
        return False


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
