"""What run's /readyz and /healthz answer: verdicts computed from the daemon's parts, so that
they can be asked in a test without a port or a process."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol

from .._words import plural

__all__ = ["LoopLiveness", "Readiness"]


class _RootsState(Protocol):
    @property
    def unreadable(self) -> list[tuple[Path, str]]: ...


class _TailerState(Protocol):
    @property
    def started(self) -> bool: ...
    @property
    def root_health(self) -> _RootsState: ...
    @property
    def catching_up(self) -> int: ...


class _SinkState(Protocol):
    @property
    def queued(self) -> int: ...
    def failing(self) -> tuple[str, float] | None: ...


class _CheckpointState(Protocol):
    @property
    def failing(self) -> str | None: ...


class Readiness:
    """/readyz: ready once the logs are listed and caught up, while every session-state root
    can be listed, checkpoints can be saved and no exporter has failed on a batch for
    `unready_after` seconds. A callable returning
    (ready, why), as the server takes it."""

    def __init__(
        self,
        tailer: _TailerState,
        sink: _SinkState,
        checkpointing: _CheckpointState,
        unready_after: float,
    ) -> None:
        self._tailer, self._sink, self._checkpointing = tailer, sink, checkpointing
        self._unready_after = unready_after

    def __call__(self) -> tuple[bool, str]:
        if not self._tailer.started:
            return False, "starting: listing the session logs"
        unreadable = self._tailer.root_health.unreadable
        if unreadable:  # nothing there can be followed: not ready, whatever else holds
            root, why = unreadable[0]
            return False, f"{root} {why}"
        if self._tailer.catching_up:
            return False, f"catching up {plural(self._tailer.catching_up, 'log')}"
        if self._checkpointing.failing is not None:
            return False, f"checkpoints cannot be saved: {self._checkpointing.failing}"
        failing = self._sink.failing()
        if failing is not None and failing[1] >= self._unready_after:
            return False, (
                f"{failing[0]} failing for {failing[1]:.0f}s, "
                f"{plural(self._sink.queued, 'span')} queued"
            )
        return True, "ok"


class LoopLiveness:
    """/healthz: alive while the main loop turns. A daemon whose loop is stuck (a write that
    never returns, a bug that loops) still serves its port from other threads, so "the
    process answers" says nothing; this says whether it still reads logs.

    The loop notes each turn (`turned`, after every poll) and the tailer each read of a log
    inside a poll (`Tailer.heartbeat`, as a read begins), so a long catch-up poll, which reads
    at most 8 MiB of a log at a time, keeps proving progress. Stuck means neither for
    `stuck_after` seconds beyond the longest wait between polls.
    """

    def __init__(self, tailer: object, stuck_after: float, poll_interval: float) -> None:
        self._tailer = tailer
        self._stuck_after = stuck_after
        self._limit = stuck_after + poll_interval
        self._turned = time.monotonic()  # from the start: a listing that hangs is stuck too

    def turned(self) -> None:
        """The main loop went round once."""
        self._turned = time.monotonic()

    def __call__(self) -> tuple[bool, str]:
        # the tailer's heartbeat exists once it has read a log (read on the server's thread)
        last = max(self._turned, getattr(self._tailer, "heartbeat", self._turned))
        quiet = time.monotonic() - last
        if quiet <= self._limit:
            return True, "ok"
        return False, (
            f"stuck: the main loop has neither finished a poll nor read a log for "
            f"{quiet:.0f}s (--stuck-after {self._stuck_after:g})"
        )
