"""What the tailer needs of what it feeds: events go in, nothing comes back but whether a
task is open. The tailer knows nothing of spans; `feed.StreamFeeder` is what `run` passes
(decode -> feed -> emit -> count, safe places, delivered spans, eviction).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ...decode._events import Event
from ...metrics._recorder import MetricsRecorder
from ._options import TailOptions

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
    """Where the tailer's events go (`feed.StreamFeeder`). What a quiet task is, and whether
    it ends, is the downstream's one policy (`feed._quiet`): the tailer tells it how quiet a
    log is and whether it has more to read, never what the task does."""

    @property
    def metrics(self) -> MetricsRecorder: ...

    @property
    def resident(self) -> int: ...

    def follow_logs(self, options: TailOptions, on_moved: Callable[[str], None] | None) -> None: ...

    def count_read(self, events: int) -> None: ...

    def ledger(
        self,
        offset: int = 0,
        *,
        after: Any = None,
        resume: tuple[Mapping[str, Any], Sequence[int], Sequence[int]] | None = None,
    ) -> Any: ...

    def feed_positions(
        self, stream: str, hint: str | None, ledger: Any, positions: Iterable[tuple[Event, int]]
    ) -> bool: ...

    def end(self, stream: str) -> None: ...

    def settle(
        self,
        stream: str,
        ledger: Any,
        offset: int,
        *,
        quiet_seconds: float,
        at_end: bool,
        unread: Callable[[], bool],
        now: float,
    ) -> bool: ...

    def evict(self, stream: str, ledger: Any) -> None: ...

    def background_wait(self, stream: str, ledger: Any, now: float) -> str | None: ...
