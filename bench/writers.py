"""Threads that grow session logs the way running agents do, line by line.

Why here and not in the sections: the live, soak and kill measurements all need sessions that
appear, grow and go quiet while the bridge watches, each with a different pace. Every line
written is a real fixture line with fresh ids (see corpus.py).
"""

from __future__ import annotations

import heapq
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from .corpus import SessionCopy, Template

__all__ = ["KillWriter", "LiveWriter", "SoakWriter", "prewrite"]


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


class _Session:
    """A session being written: its copy, its log, the next line to write."""

    def __init__(self, root: Path, copy: SessionCopy) -> None:
        self.copy = copy
        self.log = root / copy.session_id / "events.jsonl"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.next = 0

    @property
    def done(self) -> bool:
        return self.next >= len(self.copy)

    def write_next(self, stamp: bool) -> None:
        """Write the next line; with `stamp`, its event time is now (to measure latency)."""
        at_ms = round(time.time() * 1000) if stamp else None
        _append(self.log, self.copy.render_line(self.next, at_ms))
        self.next += 1


def prewrite(session: _Session, rng: random.Random) -> None:
    """Write a random beginning of the session before the bridge starts, stamped a little in
    the past, so that at any rate some sessions end soon (agents were already at work)."""
    count = rng.randrange(1, len(session.copy))  # at least one: every log is on disk
    base = round(time.time() * 1000) - 60_000
    for index in range(count):
        _append(session.log, session.copy.render_line(index, base + index * 100))
    session.next = count


class LiveWriter:
    """`threads` threads appending, all together, `rate` lines per second to about `sessions`
    sessions; a session written to its end is replaced by a new one."""

    def __init__(
        self,
        root: Path,
        templates: Sequence[Template],
        *,
        rate: float,
        sessions: int = 200,
        threads: int = 4,
        seed: int = 3,
    ) -> None:
        self.root, self.templates, self.rate = root, templates, rate
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.written = 0
        #: session id -> when each of its lines was written (epoch seconds, in order)
        self.writes: dict[str, list[float]] = {}
        self.stop_event = threading.Event()
        per_thread = max(1, sessions // threads)
        self.pools = [
            [self._new_session(prewritten=True) for _ in range(per_thread)] for _ in range(threads)
        ]
        self.sessions = sum(len(pool) for pool in self.pools)
        self.threads = [
            threading.Thread(target=self._loop, args=(pool,), daemon=True) for pool in self.pools
        ]

    def _new_session(self, *, prewritten: bool = False) -> _Session:
        with self.lock:
            template = self.rng.choice(self.templates)
            session = _Session(self.root, SessionCopy(template, self.rng))
            if prewritten:
                prewrite(session, self.rng)
        return session

    def _loop(self, pool: list[_Session]) -> None:
        interval = len(self.threads) / self.rate
        rng = random.Random(id(pool))
        due = time.monotonic()
        while not self.stop_event.is_set():
            due += interval
            delay = due - time.monotonic()
            if delay > 0:
                self.stop_event.wait(delay)
            index = rng.randrange(len(pool))
            session = pool[index]
            session.write_next(stamp=True)
            self.writes.setdefault(session.copy.session_id, []).append(time.time())
            with self.lock:
                self.written += 1
            if pool[index].done:
                pool[index] = self._new_session()

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> int:
        """Stop writing; the number of lines written by the threads."""
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=30)
        return self.written


class SoakWriter(threading.Thread):
    """`n` sessions started evenly over `seconds`; each writes its lines evenly over `grow_s`
    seconds, then goes quiet for good."""

    def __init__(
        self,
        root: Path,
        templates: Sequence[Template],
        *,
        n: int,
        seconds: float,
        grow_s: float = 20.0,
        seed: int = 5,
    ) -> None:
        super().__init__(daemon=True)
        self.root, self.templates, self.n = root, templates, n
        self.seconds, self.grow_s = seconds, grow_s
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.written = 0
        self.started_sessions = 0

    def run(self) -> None:
        start = time.monotonic()
        queue: list[tuple[float, int, _Session | None]] = [
            (start + i * self.seconds / self.n, i, None) for i in range(self.n)
        ]
        heapq.heapify(queue)
        counter = self.n
        while queue and not self.stop_event.is_set():
            due, _, session = heapq.heappop(queue)
            delay = due - time.monotonic()
            if delay > 0 and self.stop_event.wait(delay):
                break
            if session is None:
                template = self.templates[self.started_sessions % len(self.templates)]
                session = _Session(self.root, SessionCopy(template, self.rng))
                self.started_sessions += 1
            session.write_next(stamp=True)
            self.written += 1
            if not session.done:
                counter += 1
                step = self.grow_s / len(session.copy)
                heapq.heappush(queue, (due + step, counter, session))

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=30)


class KillWriter(threading.Thread):
    """Grows `active` logs at a time, interleaved, sometimes half a line at a time (as in the
    crash-restart test), until stopped; then writes every started log to its end."""

    def __init__(
        self, root: Path, templates: Sequence[Template], *, active: int = 8, seed: int = 7
    ) -> None:
        super().__init__(daemon=True)
        self.root, self.templates, self.active = root, templates, active
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.sessions: list[_Session] = []
        self.written = 0

    def _new(self) -> _Session:
        template = self.templates[len(self.sessions) % len(self.templates)]
        session = _Session(self.root, SessionCopy(template, self.rng))
        # times start now, so the logs look like sessions at work
        session.copy.shift_ms = round(time.time() * 1000) - template.first_ms
        self.sessions.append(session)
        return session

    def _write(self, session: _Session) -> None:
        line = session.copy.render_line(session.next)
        if self.rng.random() < 0.3:
            half = len(line) // 2
            _append(session.log, line[:half])
            time.sleep(0.005)
            _append(session.log, line[half:])
        else:
            _append(session.log, line)
        session.next += 1
        self.written += 1

    def run(self) -> None:
        pool = [self._new() for _ in range(self.active)]
        while not self.stop_event.is_set():
            index = self.rng.randrange(len(pool))
            self._write(pool[index])
            if pool[index].done:
                pool[index] = self._new()
            time.sleep(self.rng.uniform(0.0, 0.02))
        for session in pool:
            while not session.done:
                self._write(session)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=60)
