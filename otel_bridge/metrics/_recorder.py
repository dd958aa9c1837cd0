"""The bridge's metrics: the catalogue's face, and the protocol through which they are observed.

The catalogue itself (every metric once, named from `semconv`) is `metrics/_catalogue.py`; this
module is what the rest of the bridge imports. A name the catalogue lacks is a bug of the
bridge, never of a log: `known_metric` raises in tests (`STRICT`, which tests/conftest.py turns
on), and in production drops the observation, counts it and says so once per name, so that the
daemon goes on.

The assembler observes through `MetricsRecorder`; it never imports the SDK. Attributes are
bounded values only (modes, outcomes, tool and model names, error types): never a session id,
prompt or path. The session id travels beside the attributes, for `stats`, and the OpenTelemetry
adapter drops it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from .._records import AttributeValue
from ._catalogue import (
    BUCKETS,
    CATALOGUE,
    OPTIONAL_LABELS,
    REPOSITORY_LABELS,
    Instrument,
    MetricSpec,
)

__all__ = [
    "BUCKETS",
    "CATALOGUE",
    "METRICS",
    "OPTIONAL_LABELS",
    "REPOSITORY_LABELS",
    "Instrument",
    "MetricSpec",
    "MetricsRecorder",
    "NullRecorder",
    "UnknownMetric",
    "known_metric",
    "prometheus_name",
    "unknown_metrics",
]

logger = logging.getLogger(__name__)

#: The catalogue by name.
METRICS: Mapping[str, MetricSpec] = {spec.name: spec for spec in CATALOGUE}

#: True: recording a name the catalogue lacks raises `UnknownMetric` (tests/conftest.py turns
#: it on). False (production): the observation is dropped, counted and logged once per name.
STRICT = False
#: Names not in the catalogue that were recorded, and how often (a bug of the bridge: names
#: come from its code, never from a log; bounded all the same).
_unknown: dict[str, int] = {}
_MAX_UNKNOWN = 100


class UnknownMetric(ValueError):
    """A name the catalogue does not define was recorded (`STRICT` only)."""


def known_metric(name: str) -> bool:
    """Whether `name` is a catalogue metric, to be recorded. One that is not raises
    `UnknownMetric` under `STRICT`; otherwise it is counted (`unknown_metrics`) and logged
    once, and the caller drops the observation: a daemon must not end on a name."""
    if name in METRICS:
        return True
    if STRICT:
        raise UnknownMetric(f"metric {name!r} is not in the catalogue (metrics/_catalogue.py)")
    count = _unknown.get(name)
    if count is None:
        if len(_unknown) >= _MAX_UNKNOWN:
            return False
        logger.error(
            "metric %r is not in the catalogue: its observations are dropped and counted "
            "(a bug of otel-bridge; said once)",
            name,
        )
    _unknown[name] = (count or 0) + 1
    return False


def unknown_metrics() -> Mapping[str, int]:
    """The names recorded that the catalogue lacks, and how often (`known_metric`)."""
    return dict(_unknown)


_UNIT_SUFFIX = {"s": "seconds", "By": "bytes"}


def prometheus_name(spec: MetricSpec) -> str:
    """The name Prometheus shows, as the OpenTelemetry Prometheus exporter derives it: dots to
    underscores, a unit suffix for real units (annotations like {turn} are dropped), and
    `_total` on counters."""
    name = spec.name.replace(".", "_")
    suffix = _UNIT_SUFFIX.get(spec.unit)
    if suffix and not name.endswith(f"_{suffix}"):
        name += f"_{suffix}"
    if spec.instrument is Instrument.COUNTER:
        name += "_total"
    return name


class MetricsRecorder(Protocol):
    """Where observations go. Called on the assembler's thread; must not block."""

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        """Add `value` to the counter `name`."""

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        """Record one value in the histogram `name`."""


class NullRecorder:
    """Discards observations (the default: spans only)."""

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        return None

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        return None
