"""Metric observations of one session, through the caller's `MetricsRecorder`.

Attributes are bounded values only (modes, outcomes, tool and model names, error types), never a
session id, prompt or path; the session id travels beside them, for `stats`.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import semconv as sc
from .._records import AttributeValue, Repairs, valid_text
from ..decode._event_types import KNOWN_EVENT_TYPES
from ..decode._events import printable_type
from ..metrics._recorder import (
    CATALOGUE,
    REPOSITORY_LABELS,
    MetricsRecorder,
    NullRecorder,
    known_metric,
)
from ._config import AssemblerStats
from ._state import SessionFacts

__all__ = ["SessionMeter"]

#: At most this many distinct unknown event types are named in a metric label; the rest are
#: "other", so that a hostile log cannot blow up the metric's cardinality.
MAX_UNKNOWN_TYPES = 50
#: The metrics that carry the session's attribution labels: those whose catalogue entry lists
#: the repository (every metric with a model label; docs/metrics.md, "Attribution labels").
ATTRIBUTED = frozenset(s.name for s in CATALOGUE if sc.VCS_REPOSITORY_NAME in s.attributes)


class SessionMeter:
    """Counts and histograms of one session (names from `semconv`, defined in `CATALOGUE`).

    Every observation's name is checked against the catalogue (`_metrics.known_metric`), even
    with no recorder: one the catalogue lacks raises in tests; in production it is dropped,
    logged once and counted as a failed step (`otel_bridge.events.failed`, step `metric`),
    never recorded under a name nothing defines."""

    __slots__ = ("_extra", "_extra_of", "_facts", "_labels", "_recorder", "_stats", "observing")

    def __init__(
        self,
        recorder: MetricsRecorder,
        facts: SessionFacts,
        stats: AssemblerStats,
        labels: tuple[str, ...] = (),
    ) -> None:
        self._recorder = recorder
        self._facts = facts
        self._stats = stats
        #: the attribution labels of the ATTRIBUTED metrics: the repository's, and those the
        #: caller opted in to (`AssemblerConfig.metric_labels`)
        self._labels = (*REPOSITORY_LABELS, *labels)
        # Those labels' values, worked out again only when the session's attribution is
        # replaced (a new segment), not at every observation.
        self._extra_of: Mapping[str, AttributeValue] | None = None
        self._extra: dict[str, AttributeValue] = {}
        #: False when observations go nowhere (no metrics: replay's default), so that the
        #: observations a span makes need not be worked out (`SpanFactory.emit`).
        self.observing = not isinstance(recorder, NullRecorder)

    @property
    def mode(self) -> str:
        """The session's mode now (`copilot.mode`), a label of some metrics."""
        return self._facts.mode

    def add(
        self, name: sc.MetricName, attributes: Mapping[str, AttributeValue] | None = None
    ) -> None:
        """Count one."""
        # nothing to work out for a recorder that keeps nothing
        if not self._known(name) or not self.observing:
            return
        self._recorder.add(
            name, 1, self._attributed(name, attributes or {}), self._facts.session_id
        )

    def add_value(
        self, name: sc.MetricName, value: float, attributes: Mapping[str, AttributeValue]
    ) -> None:
        """Add `value` (a cost, a number of lines) to a counter; a value that is not finite (a
        sum of figures from the log can overflow) is not added."""
        if self._known(name) and self.observing and value - value == 0:
            self._recorder.add(
                name, value, self._attributed(name, attributes), self._facts.session_id
            )

    def record(
        self, name: sc.MetricName, value: float, attributes: Mapping[str, AttributeValue]
    ) -> None:
        """Record one value in a histogram (not if it is not finite)."""
        if self._known(name) and self.observing and value - value == 0:
            self._recorder.record(
                name, value, self._attributed(name, attributes), self._facts.session_id
            )

    def _known(self, name: str) -> bool:
        """Whether `name` is the catalogue's; one that is not is counted where operators look
        (`known_metric` raises for it in tests, and logs it once)."""
        if known_metric(name):
            return True
        self.failed(sc.STEP_METRIC)
        return False

    def _attributed(
        self, name: str, attributes: Mapping[str, AttributeValue]
    ) -> Mapping[str, AttributeValue]:
        """`attributes`, plus the session's attribution labels when `name` carries them (a
        label the session has no value for, outside a git checkout, is left out); text from
        the log made valid (`valid_text`: a lone surrogate in a tool name would make every
        later export of the metrics fail)."""
        for label in attributes.values():
            if type(label) is str and not label.isascii():
                attributes = {
                    key: valid_text(value) if isinstance(value, str) else value
                    for key, value in attributes.items()
                }
                break
        attribution = self._facts.attribution
        if name not in ATTRIBUTED or not attribution:
            return attributes
        if attribution is not self._extra_of:
            self._extra_of = attribution
            self._extra = {
                key: valid_text(value) if isinstance(value, str) else value
                for key in self._labels
                if (value := attribution.get(key)) is not None
            }
        extra = self._extra
        return {**attributes, **extra} if extra else attributes

    def unknown_event(self, event_type: str) -> None:
        """An event of a type the schema does not declare (the CLI has moved on)."""
        known = self._stats.unknown_types
        if event_type not in known and len(known) >= MAX_UNKNOWN_TYPES:
            event_type = "other"
        known[event_type] += 1
        self.add(
            sc.METRIC_EVENTS_UNKNOWN,
            {
                # read as a version (`_fields.read_version`), not as an event type
                sc.COPILOT_VERSION: self._facts.copilot_version or sc.UNKNOWN,
                sc.COPILOT_EVENT_TYPE: printable_type(event_type),
            },
        )

    def failed(self, step: str, event_type: str | None = None) -> None:
        """A step of the assembler raised and was skipped (`step`: one of semconv's STEP_*;
        `event_type`: of the event being handled, for STEP_FEED). The label is a known type or
        "other", so that a hostile log cannot blow up the metric's cardinality."""
        self._stats.failures[step] += 1
        attributes: dict[str, AttributeValue] = {sc.OTEL_BRIDGE_STEP: step}
        if event_type is not None:
            attributes[sc.COPILOT_EVENT_TYPE] = (
                event_type if event_type in KNOWN_EVENT_TYPES else "other"
            )
        self.add(sc.METRIC_EVENTS_FAILED, attributes)

    def repaired(self, repairs: Repairs) -> None:
        """Values of a span made valid (`_records.repair_record`), by what was wrong."""
        for reason, count in (
            (sc.REPAIR_TEXT, repairs.text),
            (sc.REPAIR_NUMBER, repairs.number),
            (sc.REPAIR_TIME, repairs.time),
            (sc.REPAIR_IMPLAUSIBLE, repairs.implausible),
        ):
            if count:
                self._stats.repaired[reason] += count
                self.add_value(
                    sc.METRIC_VALUES_REPAIRED,
                    count,
                    {sc.OTEL_BRIDGE_REASON: reason},
                )

    def limit(self, which: str) -> None:
        """A bound of what an open task holds was reached (`which`: one of semconv's LIMIT_*);
        what was over it was left out."""
        self._stats.limits[which] += 1
        self.add(sc.METRIC_LIMITS_REACHED, {sc.OTEL_BRIDGE_LIMIT: which})
