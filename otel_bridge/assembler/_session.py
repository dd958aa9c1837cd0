"""`SessionAssembler`: the events of one session in, finished span records out.

It owns one session's parts (facts, open state, span builders, lifecycle, content policy,
metrics) and hands each event to the handler registered for its type in `handlers.HANDLERS`.
Handlers are plain functions `(parts, event) -> None` that get those parts (`_parts.Parts`),
not the session.

One event never ends a session: a handler that raises (a bug met by an unusual log) is logged
once per session, counted (`otel_bridge.events.failed`), and the session goes on with the next
event; so do closing and checkpoint steps (docs/architecture.md, "When handling an event
fails").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .. import semconv as sc
from .._records import AttributeValue, SpanEventRecord, SpanRecord
from ..decode._event_types import KNOWN_EVENT_TYPES
from ..decode._events import Event, printable_type
from ..metrics._recorder import MetricsRecorder, NullRecorder, UnknownMetric
from ..semconv import TROUBLE_LONG
from ._config import AssemblerConfig, AssemblerStats
from ._content import ContentPolicy, as_json
from ._in_flight import check_clock, check_length
from ._lifecycle import Lifecycle
from ._meter import SessionMeter
from ._parts import Parts
from ._snapshot import restore, snapshot
from ._state import Interaction, SeenSet, SessionFacts
from .handlers import AFTER_RESUME, HANDLERS, KEEP_DANGLING_TOOLS, OBSERVERS
from .spans import SpanBuilders, SpanFactory

__all__ = ["SessionAssembler"]

logger = logging.getLogger(__name__)

#: The recorder of sessions given none: one for all, it keeps nothing.
_NO_METRICS = NullRecorder()


class SessionAssembler:
    """Turns the events of one session, in log order, into finished span records.

    Not thread-safe; call from one thread. Every method returns the spans it finished.

    Args:
        session_id: the session id to use until a `session.start` names it (sources pass the
            session directory name, which the CLI makes equal to the session id).
        config: what the spans carry.
        stats: counters to add to.
        metrics: where metric observations go (none by default).
        stream: what the session is read from, for log lines (a log's path); the session id
            by default.

    Attributes (the session's parts; handlers get them as `parts`):
        facts: session id, mode, model, CLI version, the previous interaction.
        lifecycle: the open interaction; opens, reopens and closes it; finds an event's agent.
        spans: the span builders (agent, turn, chat, tool) and their factory.
        content: what text from the log may go on spans.
        meter: metric observations.
        permissions: open permission requests, by id: when they were asked (ns) and the tool
            call they are for (if the request says).
    """

    __slots__ = (
        "_failure_logged",
        "_seen_events",
        "_wait_ns",
        "config",
        "content",
        "facts",
        "lifecycle",
        "meter",
        "metrics",
        "parts",
        "permissions",
        "spans",
        "stats",
        "stream",
    )

    def __init__(
        self,
        session_id: str,
        config: AssemblerConfig | None = None,
        stats: AssemblerStats | None = None,
        metrics: MetricsRecorder | None = None,
        stream: str | None = None,
    ) -> None:
        self.stream = stream or session_id
        self.config = config or AssemblerConfig()
        self.stats = stats if stats is not None else AssemblerStats()
        self.metrics: MetricsRecorder = metrics or _NO_METRICS
        self.facts = SessionFacts(session_id, directory=session_id)
        self.meter = SessionMeter(self.metrics, self.facts, self.stats, self.config.metric_labels)
        self.content = ContentPolicy(self.config.capture_content, self.config.hash_salt)
        self.spans = SpanBuilders(
            SpanFactory(self.facts, self.stats, self.meter, self.stream),
            self.content,
            self.facts,
            self.config.parent,
            self._session_name if self.config.session_name_of is not None else None,
            semconv=self.config.semconv,
            root_name=self.config.root_name,
        )
        self.lifecycle = Lifecycle(self.facts, self.stats, self.spans, self.meter)
        self.permissions: dict[str, tuple[int, str | None]] = {}
        self.parts = Parts(
            self.facts,
            self.lifecycle,
            self.spans,
            self.content,
            self.meter,
            self.stats,
            self.config,
            self.stream,
            self.permissions,
        )
        self._wait_ns = int(self.config.background_wait_seconds * 1e9)
        self._seen_events = SeenSet()
        self._failure_logged = False

    @property
    def session_id(self) -> str:
        return self.facts.session_id

    @property
    def mode(self) -> str:
        return self.facts.mode

    @property
    def model(self) -> str | None:
        return self.facts.model

    @property
    def copilot_version(self) -> str | None:
        return self.facts.copilot_version

    @property
    def interaction(self) -> Interaction | None:
        """The open interaction, if any."""
        return self.lifecycle.interaction

    @property
    def has_open_interaction(self) -> bool:
        """True while an interaction's spans are still open."""
        return self.lifecycle.interaction is not None

    def _session_name(self) -> str | None:
        """The session's name, through the source's reader (`AssemblerConfig.session_name_of`:
        the assembler does no I/O of its own); the span builders call it only with content
        capture on."""
        reader = self.config.session_name_of
        return reader(self.stream) if reader is not None else None

    def feed(self, event: Event) -> list[SpanRecord]:
        """Take one event; return the spans it finished. Never raises: an event whose handling
        fails is logged, counted and skipped (what it had done stays; see `_failed`)."""
        if self._seen_events.seen(event.key):
            self.stats.duplicates += 1  # redelivered (an SDK resume replays history)
            return []
        try:
            self._handle(event)
        except Exception as exc:
            self._failed(sc.STEP_FEED, exc, event)
        return self.spans.factory.take()

    def _handle(self, event: Event) -> None:
        """Decide what `event` ends and hand it to its handler."""
        if self.lifecycle.waited_too_long(event.timestamp_ns, self._wait_ns):
            # The work the loop left running did not report in time: the task ended at its
            # last event; what comes now is late work (docs/architecture.md).
            self.lifecycle.end_of_input()
        interaction = self.lifecycle.interaction
        handler = HANDLERS.get(event.type)
        if (
            interaction is not None
            and interaction.dangling
            and handler is not None  # events the bridge ignores (hooks...) do not decide it
            and event.type not in KEEP_DANGLING_TOOLS
        ):
            self.lifecycle.end_dangling(interaction)
        if (
            interaction is not None
            and interaction.killed_ns is not None
            and handler is not None  # events the bridge ignores (hooks...) change nothing
            and event.type not in AFTER_RESUME
        ):
            self.lifecycle.end_killed()  # the resumed CLI has said what it had to say
            interaction = None
        orphaned = False
        if handler is not None:
            handler(self.parts, event)
            # junk of a sub-agent nobody announced does not move its task's end
            orphaned = self.lifecycle.orphaned is event
            self.lifecycle.orphaned = None
        elif interaction is not None and (observer := OBSERVERS.get(event.type)) is not None:
            observer(self.parts, event)
        if event.type not in KNOWN_EVENT_TYPES:
            self.meter.unknown_event(event.type)
            if self.config.keep_unknown_events:
                self._keep_unknown(event)
        if (
            interaction is not None
            and interaction is self.lifecycle.interaction
            and interaction.killed_ns is None  # a killed one ended at its last event
            and not orphaned
        ):
            interaction.last_ns = max(interaction.last_ns, event.timestamp_ns)
            if TROUBLE_LONG not in interaction.watch.raised:
                check_length(self.parts, interaction, interaction.last_ns)

    def end_of_input(self) -> list[SpanRecord]:
        """No more events will come (end of a replayed file): close what is open.

        Open spans end at the last event's time and are marked `copilot.incomplete`, except an
        autopilot loop that had stopped and was only waiting for a continuation: that one ended.
        Never raises: if closing fails, what is still open is dropped (see `_failed`).
        """
        try:
            self.lifecycle.end_of_input()
        except Exception as exc:
            self._failed(sc.STEP_END_OF_INPUT, exc)
        return self.spans.factory.take()

    def expire(self, now_ns: int) -> list[SpanRecord]:
        """The clock of a caller following a quiet log says `now_ns`: end the open interaction
        if its loop has stopped and has waited longer than the background wait for the work it
        left running, as `feed` would on the next event. Returns the spans that finished."""
        try:
            if self.lifecycle.waited_too_long(now_ns, self._wait_ns):
                self.lifecycle.end_of_input()
        except Exception as exc:
            self._failed(sc.STEP_EXPIRE, exc)
        return self.spans.factory.take()

    @property
    def waiting(self) -> bool:
        """True while the open interaction's loop has stopped and it only waits for work it
        left running (background shells and sub-agents, an autopilot nudge)."""
        interaction = self.lifecycle.interaction
        return interaction is not None and interaction.awaiting_continuation

    def background_work(self) -> tuple[int, int, int, int] | None:
        """While the open interaction's loop has stopped and it waits for background work:
        its root span id (which task), the time of its last event, and how many background
        shells and sub-agents still run; None otherwise (an autopilot nudge is no background
        work: it comes within moments). For `run` to say that the task waits, and for how
        long at most (`background_wait_seconds` from that last event)."""
        interaction = self.lifecycle.interaction
        if interaction is None or not interaction.awaiting_continuation:
            return None
        shells = len(interaction.shells)
        subagents = sum(
            1 for agent in interaction.subagents.values() if not agent.done and not agent.orphan
        )
        if not shells and not subagents:
            return None
        return interaction.root.span_id, interaction.last_ns, shells, subagents

    def watch(self, now_ns: int, stalled: float = 0.0) -> None:
        """The clock of a caller following the log says `now_ns`: raise the signals only a
        clock tells of the open task (silent too long, open too long); `stalled`: the stall
        threshold in force when the quiet-task policy says the task is stalled, else 0.
        Never raises."""
        interaction = self.lifecycle.interaction
        if interaction is None or interaction.killed_ns is not None:
            return
        try:
            check_clock(self.parts, interaction, now_ns, stalled)
        except Exception as exc:
            self._failed(sc.STEP_EXPIRE, exc)

    def snapshot(self) -> dict[str, Any]:
        """The session-level state a restart needs (see `_snapshot.snapshot`); if that fails,
        only the session id (a restart then starts the session's facts afresh)."""
        try:
            return snapshot(self.facts)
        except Exception as exc:
            self._failed(sc.STEP_SNAPSHOT, exc)
            return {"session_id": self.facts.session_id}

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Take back a `snapshot()` (of a previous run). Unknown or bad fields are ignored;
        if restoring fails, the session goes on with what was restored before."""
        try:
            restore(self.facts, saved)
        except Exception as exc:
            self._failed(sc.STEP_RESTORE, exc)

    def _failed(self, step: str, exc: Exception, event: Event | None = None) -> None:
        """A step raised: count it, log it (a warning once per session, every traceback at
        DEBUG), and go on. What the step had done stays: spans it finished go out, spans it
        opened end with their interaction. A failed close cannot be trusted to be retried, so
        an interaction still open after one is dropped (its unfinished spans are lost)."""
        if isinstance(exc, UnknownMetric):
            raise exc  # a bug of the bridge that the tests' strict mode found, not the log's
        self.meter.failed(step, event.type if event is not None else None)
        if event is not None:
            what = (
                f"event {printable_type(event.type)} (id {event.id or '-'}, "
                f"at {utc_time(event.timestamp_ns)})"
            )
        else:
            what = step.replace("_", " ")
        if not self._failure_logged:  # the exception's text may quote the log: DEBUG only
            self._failure_logged = True
            logger.warning(
                "%s: %s failed (%s); skipped, the session goes on; further failures of this "
                "session are only counted (otel_bridge.events.failed), details at DEBUG",
                self.stream,
                what,
                type(exc).__name__,
            )
        logger.debug("%s: %s failed", self.stream, what, exc_info=exc)
        if step in (sc.STEP_END_OF_INPUT, sc.STEP_EXPIRE):
            self.lifecycle.interaction = None

    def _keep_unknown(self, event: Event) -> None:
        """An event of an unknown type as a span event on the open interaction's root (named by
        its type, in the bounded shape of `printable_type`): its id, its data's size, and the
        data as JSON only with content capture on (cut to size on export, like other content).
        With no interaction open, or one whose root was already exported, it is only counted."""
        interaction = self.lifecycle.interaction
        if interaction is None or interaction.root_exported:
            return
        attributes: dict[str, AttributeValue] = {}
        if event.id:
            attributes[sc.COPILOT_EVENT_ID] = event.id
        self.content.put(
            attributes, sc.COPILOT_EVENT_DATA, as_json(dict(event.data)), sc.COPILOT_EVENT_DATA
        )
        self.spans.factory.add_event(
            interaction.root,
            SpanEventRecord(printable_type(event.type), event.timestamp_ns, attributes),
        )

    def unplaced(self, event: Event) -> None:
        """Count an event that had nothing to act on (no open interaction, turn, tool...)."""
        self.parts.unplaced(event)


def utc_time(ns: int) -> str:
    """An event time as ISO 8601 UTC with milliseconds, as the log writes it. By hand (days to
    a civil date, H. Hinnant's algorithm): this module reads no clock and imports no datetime."""
    days, ms = divmod(ns // 1_000_000, 86_400_000)
    era, doe = divmod(days + 719_468, 146_097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    seconds, ms = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{year:04d}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}.{ms:03d}Z"
