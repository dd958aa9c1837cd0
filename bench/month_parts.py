"""The moving parts of `bench/month.py`: a collector that can be taken away (a TCP forwarder in
front of the OTLP receiver), a writer that starts sessions with fresh ids and cleans old ones
away as people clean ~/.copilot/session-state, and what is sampled of the daemon.

Why a forwarder: the test receiver binds a new port each time it starts, and the daemon must
find its collector where it left it. Closing the forwarder's listening socket (and every
connection through it) is what the daemon sees when a collector goes away: connections
refused, until it comes back on the same port.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from .corpus import SessionCopy, Template

__all__ = ["Forwarder", "MonthWriter", "dir_bytes", "metric_series", "proc_figures"]


class Forwarder:
    """Listens on 127.0.0.1:`port` and forwards each connection to `target_port`; `down()`
    refuses connections and cuts those open, `up()` listens again on the same port."""

    def __init__(self, port: int, target_port: int) -> None:
        self.port, self.target_port = port, target_port
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            conns, self._conns = self._conns, set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    @property
    def is_up(self) -> bool:
        return self._listener is not None

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed: down
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._conns.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._conns.discard(source)
                self._conns.discard(sink)
            source.close()


class _Growing:
    """A session being written: its copy, its log, the next line."""

    def __init__(self, root: Path, copy: SessionCopy) -> None:
        self.copy = copy
        self.directory = root / copy.session_id
        self.directory.mkdir(parents=True)
        self.log = self.directory / "events.jsonl"
        self.next = 0
        self.finished_at = 0.0


class MonthWriter(threading.Thread):
    """Appends `rate` lines a second in all to `active` sessions at a time, each a real
    fixture log with fresh ids (times from now), a third of the lines in two pieces. A session
    written to its end is replaced by a new one; once more than `keep` finished sessions are
    there, the oldest finished over `retire_s` seconds ago is copied to `archive` and deleted
    (its log as written stays there, for the replay that says which spans there should be)."""

    def __init__(
        self,
        root: Path,
        archive: Path,
        templates: Sequence[Template],
        *,
        rate: float,
        active: int,
        keep: int,
        retire_s: float = 60.0,
        seed: int = 28,
    ) -> None:
        super().__init__(daemon=True, name="month-writer")
        self.root, self.archive, self.templates = root, archive, templates
        self.rate, self.active, self.keep, self.retire_s = rate, active, keep, retire_s
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.finished: deque[_Growing] = deque()
        self.lines = 0
        self.sessions = 0
        self.deleted = 0

    def _new(self) -> _Growing:
        template = self.templates[self.sessions % len(self.templates)]
        self.sessions += 1
        copy = SessionCopy(template, self.rng)
        copy.shift_ms = round(time.time() * 1000) - template.first_ms
        return _Growing(self.root, copy)

    def _write(self, session: _Growing) -> None:
        line = session.copy.render_line(session.next)
        pieces = [line]
        if self.rng.random() < 1 / 3:
            half = self.rng.randrange(1, len(line))
            pieces = [line[:half], line[half:]]
        for piece in pieces:
            with session.log.open("a", encoding="utf-8") as handle:
                handle.write(piece)
        session.next += 1
        self.lines += 1

    def _retire(self, now: float) -> None:
        while len(self.finished) > self.keep and now - self.finished[0].finished_at > self.retire_s:
            session = self.finished.popleft()
            shutil.copytree(session.directory, self.archive / session.directory.name)
            shutil.rmtree(session.directory)
            self.deleted += 1

    def run(self) -> None:
        pool = [self._new() for _ in range(self.active)]
        step = 1.0 / self.rate
        due = time.monotonic()
        while not self.stop_event.is_set():
            index = self.rng.randrange(len(pool))
            self._write(pool[index])
            if pool[index].next >= len(pool[index].copy):
                pool[index].finished_at = time.monotonic()
                self.finished.append(pool[index])
                pool[index] = self._new()
            self._retire(time.monotonic())
            due += step
            delay = due - time.monotonic()
            if delay > 0:
                self.stop_event.wait(delay)
            else:
                due = time.monotonic()  # behind: no burst to catch up
        for session in pool:  # every log written to its end: all its spans can be exported
            while session.next < len(session.copy):
                self._write(session)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=60)


def proc_figures(pid: int) -> dict[str, float]:
    """RSS (MB), threads and open fds of a process, from /proc."""
    rss = threads = 0.0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("Threads:"):
                threads = float(line.split()[1])
    return {"rss_mb": round(rss, 1), "threads": threads, "fds": len(os.listdir(f"/proc/{pid}/fd"))}


def dir_bytes(directory: Path) -> int:
    """Bytes of the regular files under `directory` (what it takes, as `du -b` adds it)."""
    total = 0
    for folder, _, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def metric_series(port: int) -> int | None:
    """How many series /metrics exposes (sample lines), None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError):
        return None
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))
