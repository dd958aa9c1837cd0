"""The recorder the assembler's metric observations go to: OpenTelemetry instruments made once
from the catalogue, with every label value bounded (its length, and the number of distinct
values per label), and the GenAI names of the convention version asked for."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.metrics import CallbackOptions, Observation

from .. import semconv
from .._exceptions import ConfigError
from .._records import AttributeValue
from .._version import __version__
from ..metrics._recorder import BUCKETS, CATALOGUE, METRICS, Instrument, known_metric
from ..processors import Scrubber
from ._common import DEFAULT_MAX_LABEL_VALUES, DEFAULT_MAX_SESSION_LABEL_VALUES

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider

__all__ = [
    "DEFAULT_MAX_LABEL_VALUES",
    "OTHER_LABEL_VALUE",
    "OtelMetricsRecorder",
]

#: the name its log lines have always had
logger = logging.getLogger("otel_bridge.export._metrics")

_LABEL_MAX = 64  # characters of a label value that comes from a log

OTHER_LABEL_VALUE = "other"
_LABELS_CAPPED = semconv.METRIC_LABELS_CAPPED


class OtelMetricsRecorder:
    """A `MetricsRecorder` over OpenTelemetry instruments. Thread-safe, as the SDK's are.

    Label values that come from logs (tool, model, agent names) are scrubbed like span
    attributes: a secret pasted where a tool name goes must not become a label.

    Every label of every metric takes at most `max_label_values` distinct values, of which one
    session may bring at most `max_session_values` (the bridge's own observations, session id
    "", are not held to that): so one hostile log cannot take the whole cap first and send
    every later real name to "other" until a restart. Later new values are recorded as
    "other", counted in otel_bridge.labels.capped (by metric and label) and said once per
    metric in the log. Capped here, at the one edge every observation
    crosses, rather than at each place in the assembler that reads a name from a log: tool,
    model, agent and skill names, error types, MCP servers, repositories, CLI versions, and
    any label added later. Labels that take a few values of the bridge's own (outcomes, modes)
    never reach the cap, so all are capped alike. The SDK's own limit is on combinations, not
    values: past 2,000 attribute sets per metric (opentelemetry-sdk 1.45,
    `_view_instrument_match._DEFAULT_CARDINALITY_LIMIT`) it records into one point labelled
    `otel.metric.overflow=true`, which says nothing of which label grew; with 20,000 tool
    names it still let /metrics grow to 11 MB. That limit stays, behind this one, for metrics
    whose labels multiply.

    The assembler speaks the released GenAI names only; `semconv` chooses what goes out
    (`semconv.SEMCONV_MODES`): `previous` turns each released metric that was renamed into
    its previous name (`_PREVIOUS`) and drops the metrics that did not exist then, `both`
    records both. So dashboards built on semantic-conventions 1.41.0 keep working.
    """

    def __init__(
        self,
        provider: MeterProvider,
        scrubber: Scrubber | None = None,
        semconv_mode: str = semconv.SEMCONV_RELEASED,
        max_label_values: int = DEFAULT_MAX_LABEL_VALUES,
        max_session_values: int = DEFAULT_MAX_SESSION_LABEL_VALUES,
    ) -> None:
        if max_label_values < 1 or max_session_values < 1:
            raise ValueError("max_label_values and max_session_values must be positive")
        if semconv_mode not in semconv.SEMCONV_MODES:
            raise ConfigError(
                f"--semconv {semconv_mode!r}: use one of {', '.join(semconv.SEMCONV_MODES)}"
            )
        self._released = semconv_mode != semconv.SEMCONV_PREVIOUS
        self._previous = semconv_mode != semconv.SEMCONV_RELEASED
        self._scrubber = scrubber or Scrubber()
        self._max_values = max_label_values
        self._session_max = max_session_values
        self._values: dict[tuple[str, str], set[object]] = {}  # (metric, label) -> values
        # (metric, label) -> session -> values it brought; at most max_label_values sessions
        # each, since only a session that brought a value is there
        self._brought: dict[tuple[str, str], dict[str, int]] = {}
        self._capped: set[str] = set()  # metrics whose capping was logged
        self._lock = threading.Lock()
        # Observations not yet handed to the SDK (`_hand_over`, at each collection). `run` makes
        # a few at each line it reads, after sleeping until the line came: the SDK's path for
        # one (some ten calls) then runs cold, at 30-40 microseconds, where in a loop over many
        # it takes 10. Counts are summed by counter and labels: one SDK measurement a series.
        # Histogram values are kept in order (at most `_MAX_HELD` before they are handed over
        # at once, so that a bridge nobody scrapes holds no more).
        self._pending: dict[_Series, float] = {}
        self._held: list[tuple[Any, float, dict[str, AttributeValue]]] = []
        self._pending_lock = threading.Lock()
        meter = provider.get_meter("otel_bridge", __version__, schema_url=semconv.SCHEMA_URL)
        self._meter = meter
        # The SDK calls every observable instrument's callbacks at each collection, before it
        # reads what the synchronous ones hold: this one observes nothing (no series), and
        # hands the pending counts over first, so that every reader sees them.
        meter.create_observable_gauge(_HAND_OVER, [self._hand_over])
        self._counters = {}
        self._histograms = {}
        for spec in CATALOGUE:
            if spec.instrument is Instrument.COUNTER:
                self._counters[spec.name] = counter = meter.create_counter(
                    spec.name, unit=spec.unit, description=spec.description
                )
                # Exist from the start at 0: Prometheus' increase() misses the first
                # increment of a series that appears already above 0, and a dashboard that
                # divides by a counter shows "No data" until it exists.
                for labels in _FROM_THE_START.get(spec.name, [{}] if not spec.attributes else []):
                    counter.add(0, labels)
            elif spec.instrument is Instrument.HISTOGRAM:
                self._histograms[spec.name] = meter.create_histogram(
                    spec.name,
                    unit=spec.unit,
                    description=spec.description,
                    explicit_bucket_boundaries_advisory=BUCKETS.get(spec.name),
                )

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        if not self._released and name in _RELEASED_ONLY:
            return
        if name in self._counters:  # the session id is never a label
            labels = self._labels(name, attributes, session_id)
            key = (name, tuple(labels.items()))
            with self._pending_lock:
                try:
                    self._pending[key] = self._pending.get(key, 0) + value
                except TypeError:  # a label value that is a list: counted at once
                    self._counters[name].add(value, labels)
        else:  # only on a miss (the assembler checked its names already): raised in tests,
            known_metric(name)  # counted and said once in production

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        previous = _PREVIOUS.get(name)
        if previous is not None and self._previous:
            old_name, extra = previous
            self._record(old_name, value, {**attributes, **extra}, session_id)
        if self._released or (previous is None and name not in _RELEASED_ONLY):
            self._record(name, value, attributes, session_id)

    def _hand_over(self, _options: CallbackOptions) -> Iterable[Observation]:
        """Hand the pending counts and held values to the SDK's instruments (at each
        collection; an observable instrument's callback, which observes nothing itself)."""
        with self._pending_lock:
            pending, self._pending = self._pending, {}
            held, self._held = self._held, []
        for (name, labels), value in pending.items():
            self._counters[name].add(value, dict(labels))
        for histogram, value, attributes in held:
            histogram.record(value, attributes)
        return ()

    def _record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        histogram = self._histograms.get(name)
        if histogram is not None:
            labels = self._labels(name, attributes, session_id)
            with self._pending_lock:
                self._held.append((histogram, value, labels))
                if len(self._held) < _MAX_HELD:
                    return
                held, self._held = self._held, []
            for instrument, number, kept_labels in held:
                instrument.record(number, kept_labels)
        else:  # as in add: the catalogue is asked only on a miss
            known_metric(name)

    def _labels(
        self, name: str, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> dict[str, AttributeValue]:
        """Scrubbed, then cut to 64 characters (cutting first could leave half a secret the
        patterns no longer recognize), then capped in number."""
        labels: dict[str, AttributeValue] = {}
        for key, value in self._scrubber.attributes(attributes).items():
            if isinstance(value, str) and len(value) > _LABEL_MAX:
                value = value[: _LABEL_MAX - 3] + "..."
            labels[key] = self._bounded(name, key, value, session_id)
        return labels

    def _bounded(
        self, name: str, key: str, value: AttributeValue, session_id: str
    ) -> AttributeValue:
        """`value`, or "other" once label `key` of metric `name` has its fill of values, or
        session `session_id` has brought its share of them."""
        seen = self._values.get((name, key))
        marker = value if isinstance(value, (str, int, float)) else repr(value)
        if seen is not None and marker in seen:  # the common case, without the lock
            return value
        with self._lock:
            seen = self._values.setdefault((name, key), set())
            if marker in seen:
                return value
            brought = self._brought.setdefault((name, key), {})
            share = brought.get(session_id, 0)
            if len(seen) < self._max_values and (not session_id or share < self._session_max):
                seen.add(marker)
                if session_id:
                    brought[session_id] = share + 1
                return value
            first = name not in self._capped
            self._capped.add(name)
        if first:  # never the value itself: it came from a log, and may hold anything
            logger.warning(
                "metric %s: more than %d distinct values of its label %s, or more than %d "
                "new ones from one session; further ones are recorded as %r (counted in %s)",
                name,
                self._max_values,
                key,
                self._session_max,
                OTHER_LABEL_VALUE,
                _LABELS_CAPPED,
            )
        self._counters[_LABELS_CAPPED].add(
            1, {semconv.OTEL_BRIDGE_METRIC: name, semconv.OTEL_BRIDGE_LABEL: key}
        )
        return OTHER_LABEL_VALUE

    def gauge(self, name: str, read: Callable[[], float]) -> None:
        """Report `read()` as the catalogue's gauge `name` whenever metrics are collected."""
        if not known_metric(name):
            return
        spec = METRICS[name]

        def callback(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(read())]

        self._meter.create_observable_gauge(
            name, [callback], unit=spec.unit, description=spec.description
        )

    def gauge_series(
        self, name: str, read: Callable[[], Iterable[tuple[float, Mapping[str, AttributeValue]]]]
    ) -> None:
        """Report each (value, labels) of `read()` as a series of the catalogue's gauge
        `name` whenever metrics are collected; labels bounded as every other metric's."""
        if not known_metric(name):
            return
        spec = METRICS[name]

        def callback(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(value, self._labels(name, labels, "")) for value, labels in read()]

        self._meter.create_observable_gauge(
            name, [callback], unit=spec.unit, description=spec.description
        )


#: The observable instrument whose callback hands pending counts over; it observes nothing, so
#: no reader ever shows it.
_HAND_OVER = "otel_bridge.recorder.hand_over"
#: A counter's series: its name and its labels.
_Series = tuple[str, tuple[tuple[str, AttributeValue], ...]]
#: Histogram values held at most between two collections (some 100 bytes each).
_MAX_HELD = 4096

#: The label sets the bridge knows before any log is read, of the counters that dashboards and
#: alert rules divide by (the completion rate, the tool error rate): they exist at 0 from the
#: start. What comes from logs (a tool's name, a repository) is not known: those series come
#: with the first count.
_FROM_THE_START: Mapping[str, list[dict[str, AttributeValue]]] = {
    semconv.METRIC_TASKS: [
        {semconv.COPILOT_TASK_OUTCOME: outcome, semconv.COPILOT_MODE: mode}
        for mode in (semconv.MODE_INTERACTIVE, semconv.MODE_PLAN, semconv.MODE_AUTOPILOT)
        for outcome in (
            semconv.OUTCOME_COMPLETED,
            semconv.OUTCOME_FAILED,
            semconv.OUTCOME_ERROR,
            semconv.OUTCOME_ABORTED,
            semconv.OUTCOME_NO_SIGNAL,
        )
    ],
    semconv.METRIC_TOOL_CALLS: [
        {semconv.COPILOT_TOOL_OUTCOME: outcome, semconv.COPILOT_AGENT_TYPE: agent}
        for agent in (semconv.AGENT_TYPE_MAIN, semconv.AGENT_TYPE_SUBAGENT)
        for outcome in (
            semconv.TOOL_OUTCOME_SUCCESS,
            semconv.TOOL_OUTCOME_ERROR,
            semconv.TOOL_OUTCOME_ABORTED,
            semconv.TOOL_OUTCOME_INCOMPLETE,
        )
    ],
}

#: Each released histogram that was renamed: its previous name and the labels it had there
#: (semconv.RENAMED; semantic-conventions-genai docs/gen-ai/non-normative/migration.md, "GenAI
#: client token usage metric" and "GenAI client inference duration metric").
_PREVIOUS: Mapping[str, tuple[str, Mapping[str, AttributeValue]]] = {
    semconv.METRIC_INFERENCE_INPUT_TOKENS: (
        semconv.METRIC_TOKEN_USAGE,
        {semconv.GEN_AI_TOKEN_TYPE: semconv.TOKEN_TYPE_INPUT},
    ),
    semconv.METRIC_INFERENCE_OUTPUT_TOKENS: (
        semconv.METRIC_TOKEN_USAGE,
        {semconv.GEN_AI_TOKEN_TYPE: semconv.TOKEN_TYPE_OUTPUT},
    ),
    semconv.METRIC_INFERENCE_DURATION: (semconv.METRIC_OPERATION_DURATION, {}),
}
#: Metrics semantic-conventions 1.41.0 did not have: not emitted with `--semconv previous`.
_RELEASED_ONLY = frozenset(
    (
        semconv.METRIC_USAGE_INPUT_TOKENS,
        semconv.METRIC_USAGE_OUTPUT_TOKENS,
        semconv.METRIC_USAGE_CACHE_READ_TOKENS,
        semconv.METRIC_USAGE_CACHE_WRITE_TOKENS,
        semconv.METRIC_USAGE_REASONING_TOKENS,
        semconv.METRIC_INVOKE_AGENT_INFERENCE_CALLS,
    )
)
