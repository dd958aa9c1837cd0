"""What the tailer needs of what it feeds: events go in, nothing comes back but whether a
task is open. The tailer knows nothing of spans; `feed.StreamFeeder` is what `run` passes
(decode -> feed -> emit -> count, safe places, delivered spans, eviction).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ...decode._events import Event
from ...metrics._recorder import MetricsRecorder

__all__ = ["Downstream", "StreamLedger"]


class StreamLedger(Protocol):
    """What the feeder keeps of one log (`feed.Ledger`): the tailer holds it with the log,
    turns it into checkpoints, and asks it whether the log may sleep."""

    def advance(self, watermark: int | None) -> None: ...

    def named(
        self, watermark: int | None
    ) -> tuple[int, dict[str, Any], tuple[int, ...], tuple[int, ...]]: ...

    def moved(self, watermark: int | None) -> bool: ...

    @property
    def settled(self) -> bool: ...

    def at_rest(self, read_pos: int) -> bool: ...


class Downstream(Protocol):
    """Where the tailer's events go (`feed.StreamFeeder`)."""

    @property
    def metrics(self) -> MetricsRecorder: ...

    @property
    def resident(self) -> int: ...

    def note_safe_places(self, on_moved: Callable[[str], None]) -> None: ...

    def count_read(self, events: int) -> None: ...

    def new_ledger(self, offset: int = 0) -> Any: ...

    def restarted_ledger(self, old: Any) -> Any: ...

    def resumed_ledger(
        self, offset: int, session: Mapping[str, Any], sent: Sequence[int], blocks: Sequence[int]
    ) -> Any: ...

    def feed_positions(
        self, stream: str, hint: str | None, ledger: Any, positions: Iterable[tuple[Event, int]]
    ) -> bool: ...

    def end(self, stream: str) -> None: ...

    def waiting(self, stream: str) -> bool: ...

    def asks_person(self, stream: str) -> bool: ...

    def expire(self, stream: str, ledger: Any, offset: int, now: float) -> bool: ...

    def close(self, stream: str, ledger: Any, offset: int) -> None: ...

    def streams(self) -> list[str]: ...

    def evict(self, stream: str, ledger: Any) -> None: ...

    def background_wait(self, stream: str, ledger: Any, now: float) -> str | None: ...
