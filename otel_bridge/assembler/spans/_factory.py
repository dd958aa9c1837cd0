"""The span factory: deterministic ids, the GenAI attribute block, finishing and emitting.

Every span of a session is finished here, so every finished record goes through `emit`: counted,
observed for the metrics that follow from it (`_spanmetrics`), and handed out by `take` once the
event that finished it has been handled. The builders of each kind of span use it.
"""

from __future__ import annotations

import logging

from ... import _ids
from ... import semconv as sc
from ..._records import (
    AttributeValue,
    Repairs,
    SpanEventRecord,
    SpanRecord,
    repair_record,
    valid_record,
)
from .._config import AssemblerStats
from .._meter import SessionMeter
from .._spanmetrics import observe_span
from .._state import Error, OpenSpan, SeenSet, SessionFacts

__all__ = ["SpanFactory"]

logger = logging.getLogger(__name__)

#: Span events a span keeps: the newest (as the SDK's span limits, whose default is 128); a
#: task that never ends must not gather compactions, steering messages... without end.
MAX_SPAN_EVENTS = 128

# The kinds ids are derived for (docs/architecture.md, "Ids are derived, not random").
ID_INTERACTION = "interaction"
ID_TURN = "turn"
ID_CHAT = "chat"
ID_TOOL = "tool"
ID_SUBAGENT = "subagent"


class SpanFactory:
    """Ids, shared attributes and the output of one session's spans."""

    __slots__ = ("_facts", "_meter", "_out", "_repaired", "_stats", "_stream", "_used_ids")

    def __init__(
        self,
        facts: SessionFacts,
        stats: AssemblerStats,
        meter: SessionMeter,
        stream: str | None = None,
    ) -> None:
        self._meter = meter
        self._facts = facts
        self._stats = stats
        self._stream = stream
        self._used_ids = SeenSet()
        self._out: list[SpanRecord] = []
        self._repaired = False  # said once per session

    def span_id(self, kind: str, key: str, fallback: str) -> int:
        """The deterministic id of the `kind` of span keyed by `key`. If the session already
        used it (a tool call id reused by a broken log, say), one derived from `fallback` (the
        event) instead, so that no two different spans ever share an id."""
        span_id = _ids.span_id(kind, self._facts.session_id, key)
        attempt = 0
        while self._used_ids.seen(span_id):
            attempt += 1
            span_id = _ids.span_id(
                kind, self._facts.session_id, f"{key}\x00{fallback}\x00{attempt}"
            )
        return span_id

    def derived_id(self, kind: str, key: str) -> int:
        """The id `span_id(kind, key, ...)` gives when `key` is not reused: to point at a span
        by its key (a sub-agent's parent is the `execute_tool task` span of its call)."""
        return _ids.span_id(kind, self._facts.session_id, key)

    def trace_id(self, key: str) -> int:
        """The trace id of the interaction opened by the event `key`."""
        return _ids.trace_id(self._facts.session_id, key)

    def genai(self, operation: str, agent_name: str | None = None) -> dict[str, AttributeValue]:
        """The GenAI attributes agent, chat and tool spans start with."""
        attributes: dict[str, AttributeValue] = {
            sc.GEN_AI_OPERATION_NAME: operation,
            sc.GEN_AI_PROVIDER_NAME: sc.PROVIDER_GITHUB,
        }
        if agent_name is not None:
            attributes[sc.GEN_AI_AGENT_NAME] = agent_name
        attributes[sc.GEN_AI_CONVERSATION_ID] = self._facts.session_id
        return attributes

    def finish(
        self,
        span: OpenSpan,
        end_ns: int,
        error: Error | None = None,
        incomplete: bool = False,
        *,
        agent_type: str | None = None,
    ) -> SpanRecord:
        """End and emit a span: failed with `error`, or marked `copilot.incomplete` when its
        end was not seen."""
        if error is not None:
            span.fail(*error)
        elif incomplete:
            span.attributes[sc.COPILOT_INCOMPLETE] = True
        record = span.finish(end_ns)
        self.emit(record, agent_type=agent_type)
        return record

    def emit(
        self,
        record: SpanRecord,
        *,
        agent_type: str | None = None,
        agent_name: str | None = None,
    ) -> None:
        """Hand a finished span out, and observe the metrics that follow from it
        (`_spanmetrics`; `agent_type`, `agent_name`: of the agent that made a tool or LLM call,
        the labels not on its span). Every
        span of a session carries its attribution (repository, branch, commit, client: the
        segment's, when the span ends; docs/attribution.md): the record's attributes are its
        own dict (`OpenSpan.finish`), so they are added in place.

        The record is made valid for every exporter here, the one place every span passes
        (`_records.valid_record`, `repair_record`: text, numbers, times), so that no value
        from a broken log can make an exporter refuse the batch it is in; what was changed is
        counted (`otel_bridge.values.repaired`) and said once per session."""
        attributes = record.attributes
        if self._facts.attribution and isinstance(attributes, dict):
            attributes.update(self._facts.attribution)
        if not valid_record(record):
            repairs = Repairs()
            record = repair_record(record, repairs)
            self._report(repairs)
        self._stats.spans += 1
        self._out.append(record)
        if self._meter.observing:
            observe_span(self._meter, record, agent_type, agent_name)

    def _report(self, repairs: Repairs) -> None:
        """Count what a span needed made valid; say it once per session."""
        if not repairs:
            return  # only valid text beyond ASCII
        self._meter.repaired(repairs)
        if not self._repaired:
            self._repaired = True
            logger.warning(
                "%s: values no exporter can carry made valid (text with lone surrogates, "
                "numbers beyond 64 bits or not finite, times outside 1970..2262, usage "
                "numbers no LLM call can have); "
                "counted in otel_bridge.values.repaired, not said again for this session",
                self._stream or "session",
            )

    def implausible(self, count: int) -> None:
        """`count` usage numbers of an LLM call left out as implausible (`drop_implausible`):
        counted and said as the values made valid are."""
        self._report(Repairs(implausible=count))

    def limit(self, which: str) -> None:
        """A bound of what an open task holds was reached (`SessionMeter.limit`)."""
        self._meter.limit(which)

    def add_event(self, span: OpenSpan, event: SpanEventRecord) -> None:
        """A point in time on an open span; past `MAX_SPAN_EVENTS` the oldest goes (counted)."""
        events = span.events
        if len(events) >= MAX_SPAN_EVENTS:
            del events[0]
            self._meter.limit(sc.LIMIT_SPAN_EVENTS)
        events.append(event)

    def take(self) -> list[SpanRecord]:
        """The spans emitted since the last call."""
        out, self._out = self._out, []
        return out
