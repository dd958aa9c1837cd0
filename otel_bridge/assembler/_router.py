"""`Assembler`: routes the events of many streams to one `SessionAssembler` each."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator
from typing import Any, TypeVar

from .._records import SpanRecord
from ..decode._events import Event
from ..metrics._recorder import MetricsRecorder, NullRecorder
from ._config import AssemblerConfig, AssemblerStats
from ._in_flight import Glance, InFlight, OpenTask, glance, in_flight, waits
from ._session import SessionAssembler

_T = TypeVar("_T")

__all__ = ["Assembler"]


class Assembler:
    """Routes events of many streams (one per session log or live session) to their sessions.

    Args:
        config: what the spans carry.
        metrics: where metric observations go (none by default).
    """

    def __init__(
        self, config: AssemblerConfig | None = None, metrics: MetricsRecorder | None = None
    ) -> None:
        self.config = config or AssemblerConfig()
        self.stats = AssemblerStats()
        self.metrics: MetricsRecorder = metrics or NullRecorder()
        self._sessions: dict[str, SessionAssembler] = {}

    def session(self, stream: str, session_id: str | None = None) -> SessionAssembler:
        """The assembler of `stream`, created on first use with `session_id` (default: stream)."""
        session = self._sessions.get(stream)
        if session is None:
            session = SessionAssembler(
                session_id or stream, self.config, self.stats, self.metrics, stream=stream
            )
            self._sessions[stream] = session
        return session

    def feed(
        self, stream: str, events: Iterable[Event], session_id: str | None = None
    ) -> list[SpanRecord]:
        """Feed events of one stream in order; return the spans they finished."""
        session = self.session(stream, session_id)
        out: list[SpanRecord] = []
        for event in events:
            out.extend(session.feed(event))
        return out

    def end_stream(self, stream: str) -> list[SpanRecord]:
        """The stream ended for good (replay at end of file, a deleted log): close and forget."""
        session = self._sessions.pop(stream, None)
        return session.end_of_input() if session is not None else []

    def close_stream(self, stream: str) -> list[SpanRecord]:
        """Close the stream's open interaction but keep the session (it may go on later).

        The daemon calls this when a log has been quiet for its idle timeout: on disk nothing
        says a loop has stopped for good (`session.idle` is live-only), so a long silence has to.
        """
        session = self._sessions.get(stream)
        return session.end_of_input() if session is not None else []

    def evict(self, stream: str) -> dict[str, Any] | None:
        """Take a quiet stream's session out of memory; returns its `snapshot()` to give back
        to `session(...).restore()` when the stream goes on (the state a checkpoint keeps), or
        None when it had none or has an interaction open (then it stays)."""
        session = self._sessions.get(stream)
        if session is None or session.has_open_interaction:
            return None
        del self._sessions[stream]
        return session.snapshot()

    @property
    def resident(self) -> int:
        """Sessions held in memory."""
        return len(self._sessions)

    def streams(self) -> list[str]:
        """The streams whose sessions are held in memory."""
        return list(self._sessions)

    def has_open_interaction(self, stream: str) -> bool:
        """True when the stream has an interaction still open."""
        session = self._sessions.get(stream)
        return session is not None and session.has_open_interaction

    def close_all(self) -> list[SpanRecord]:
        """Close every open interaction (shutdown), keeping the sessions' identities."""
        out: list[SpanRecord] = []
        for session in self._sessions.values():
            out.extend(session.end_of_input())
        return out

    @property
    def open_interactions(self) -> int:
        """How many interactions are open across all streams."""
        return sum(1 for s in self._sessions.values() if s.has_open_interaction)

    def in_flight(self, now_ns: int, skip: Container[str] = frozenset()) -> InFlight:
        """The running-now gauges' values (`_in_flight.in_flight`) at `now_ns`, leaving out
        the streams in `skip` (logs still being caught up: a task read half-way is not
        running now, its next events are on disk). O(open tasks)."""
        return self._read_open(lambda tasks: in_flight(tasks, now_ns), skip, {})

    def glance(self, skip: Container[str] = frozenset()) -> Glance:
        """How many tasks are open, wait for a person, raised a signal (`_in_flight.glance`),
        leaving out the streams in `skip`: for run's status line."""
        return self._read_open(glance, skip, Glance(0, 0, 0))

    def _read_open(
        self, compute: Callable[[Iterator[OpenTask]], _T], skip: Container[str], empty: _T
    ) -> _T:
        """`compute` over the open tasks. Safe to call from another thread than the one
        feeding (a scrape's): it walks copies of the containers, and tries again if one
        changed under it."""
        for _ in range(3):
            try:
                return compute(
                    (s.facts, interaction, s.permissions)
                    for stream, s in list(self._sessions.items())
                    if (interaction := s.lifecycle.interaction) is not None and stream not in skip
                )
            except RuntimeError:  # a dict changed size while copied: the feeding thread
                continue
        return empty

    def quiet_facts(self, stream: str, now_ns: int) -> tuple[bool, bool, float] | None:
        """What the stream's open task is doing, for the quiet-task policy (`feed._quiet`):
        whether it waits for a person (`_in_flight.waits`), whether its loop has stopped to
        wait for work it left running, and the seconds since its last event at `now_ns`;
        None when no task is open."""
        session = self._sessions.get(stream)
        interaction = session.lifecycle.interaction if session is not None else None
        if session is None or interaction is None:
            return None
        return (
            bool(waits(interaction, session.permissions)),
            interaction.awaiting_continuation,
            (now_ns - interaction.last_ns) / 1e9,
        )

    def watch(
        self, now_ns: int, stalled: Callable[[str, float], float] = lambda _stream, _silent: 0.0
    ) -> None:
        """Raise the signals only a clock tells (`SessionAssembler.watch`) of every open task;
        `stalled` gives, of a stream and the seconds since its task's last event, the stall
        threshold in force if the quiet-task policy says its task is stalled now, else 0 (the
        core keeps no policy of its own)."""
        for stream, session in list(self._sessions.items()):
            interaction = session.lifecycle.interaction
            if interaction is not None:
                silent = (now_ns - interaction.last_ns) / 1e9
                session.watch(now_ns, stalled(stream, silent))
