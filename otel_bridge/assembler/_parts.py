"""`Parts`: what a handler works with, handed to it instead of the `SessionAssembler`.

Handlers (`handlers/`) and the session's accounting get the session's parts, not the session:
so they import the parts' modules only, and `_session`, which imports the handlers' table,
is imported by none of them (tests/unit/repo/test_boundaries.py checks that the assembler's modules
import one another without a circle).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..decode._events import Event
from ._config import AssemblerConfig, AssemblerStats
from ._content import ContentPolicy
from ._lifecycle import Lifecycle
from ._meter import SessionMeter
from ._state import Interaction, SessionFacts
from .spans import SpanBuilders

__all__ = ["Parts"]


@dataclass(frozen=True, slots=True)
class Parts:
    """One session's parts, as its `SessionAssembler` made them (the same objects).

    Attributes:
        facts: session id, mode, model, CLI version, the previous interaction.
        lifecycle: the open interaction; opens, reopens and closes it; finds an event's agent.
        spans: the span builders (agent, turn, chat, tool) and their factory.
        content: what text from the log may go on spans.
        meter: metric observations.
        stats: counters of the assembler's own (mismatched sessions, unplaced events...).
        config: the assembler's options (the readers of a session's client name).
        stream: what the session is read from, for log lines (a log's path).
        permissions: open permission requests, by id: when they were asked (ns) and the tool
            call they are for (if the request says).
    """

    facts: SessionFacts
    lifecycle: Lifecycle
    spans: SpanBuilders
    content: ContentPolicy
    meter: SessionMeter
    stats: AssemblerStats
    config: AssemblerConfig
    stream: str
    permissions: dict[str, tuple[int, str | None]]

    @property
    def interaction(self) -> Interaction | None:
        """The open interaction, if any."""
        return self.lifecycle.interaction

    def unplaced(self, event: Event) -> None:
        """Count an event that had nothing to act on (no open interaction, turn, tool...)."""
        self.stats.unplaced[event.type] += 1
