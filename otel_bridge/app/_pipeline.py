"""The one pipeline builder: assembler -> processors -> exporters, and metrics beside them.

`replay`, `run` and `LiveBridge` differ in their source and in a few choices (truncate or append
the traces file, block or drop when a queue is full, which metric readers by default, whether an
unreachable collector stops the command). Everything else is the same pipeline, so it is built
here, once, from a frozen `PipelineConfig`, and shut down here in the one safe order: spans
first (the sink's last deliveries are counted in the metrics), then metrics.

This module reads no flags and no process environment: the caller passes the `environ` mapping
the exporters are chosen from (`os.environ` from the command line).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExporter

from .._exceptions import BridgeError
from ..assembler import Assembler, AssemblerConfig
from ..export import (
    CONSOLE_FORMATS,
    DEFAULT_QUEUE_SPANS,
    MetricsOptions,
    ResourceOptions,
    SpanSink,
    build_resource,
    build_span_exporters,
    sdk_disabled,
    unreachable_collector,
)
from ..metrics._recorder import MetricsRecorder
from ..processors import Scrubber, ScrubberConfig, TraceSampler

if TYPE_CHECKING:
    from ..export import MetricsPipeline

__all__ = ["CollectorUnreachable", "Pipeline", "PipelineConfig"]

#: What to do when an OTLP endpoint the configuration sends to refuses connections.
COLLECTOR_CHECKS = ("skip", "fail", "warn")


class CollectorUnreachable(BridgeError):
    """An OTLP endpoint refused connections and the configuration said to stop (replay): raised
    before any exporter was made, so no file has been truncated yet."""


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """Everything the pipeline is built from, checked when made.

    Attributes:
        assembler: content capture, hash salt, parent and the rest of the assembler's options.
        scrubber: secret patterns, attribute allow/deny lists, path policy, content size.
        sample_ratio: share of healthy traces exported (failures are always kept).
        traces_file: also write spans as OTLP JSON Lines here.
        traces_file_mode: "w" to start it afresh (replay), "a" to append (run).
        console_format: summary, tree or json; None: summary on a terminal, json otherwise.
        queue_spans: spans each exporter's queue holds.
        block_when_full: wait for room in a full queue (replay) instead of dropping (run).
        export_linger_seconds: how long an exporter waits for more spans before sending a
            batch that is not full: a live source (run) gives a few spans at a time, and each
            export call costs about a millisecond of CPU; 0 sends at once; None sends full
            batches only, and the rest at the end (replay: the same spans always make the
            same batches).
        metrics: the metric readers to build (see `MetricsOptions`); None builds none (the
            caller may pass its own recorder instead, as `LiveBridge` does).
        collector_check: "skip"; "fail": raise `CollectorUnreachable` before anything is built
            when an OTLP endpoint refuses connections; "warn": build anyway and say why in
            `Pipeline.unreachable`.
        resource: `enduser.id` (off by default) and what sets this bridge's
            `service.instance.id` apart (docs/attribution.md).
    """

    assembler: AssemblerConfig = field(default_factory=AssemblerConfig)
    scrubber: ScrubberConfig = field(default_factory=ScrubberConfig)
    sample_ratio: float = 1.0
    traces_file: Path | None = None
    traces_file_mode: str = "w"
    console_format: str | None = None
    queue_spans: int = DEFAULT_QUEUE_SPANS
    block_when_full: bool = False
    export_linger_seconds: float | None = 0.0
    metrics: MetricsOptions | None = None
    collector_check: str = "skip"
    resource: ResourceOptions = field(default_factory=ResourceOptions)

    def __post_init__(self) -> None:
        if not 0 <= self.sample_ratio <= 1:
            raise ValueError("the sampling ratio must be between 0 and 1")
        if self.traces_file_mode not in ("w", "a"):
            raise ValueError("traces_file_mode must be 'w' or 'a'")
        if self.console_format is not None and self.console_format not in CONSOLE_FORMATS:
            raise ValueError(f"console_format must be one of {', '.join(CONSOLE_FORMATS)}")
        if self.queue_spans < 1:
            raise ValueError("queue_spans must be positive")
        linger = self.export_linger_seconds
        if linger is not None and not 0 <= linger <= 10:
            raise ValueError("export_linger_seconds must be None or between 0 and 10")
        if self.collector_check not in COLLECTOR_CHECKS:
            raise ValueError(f"collector_check must be one of {', '.join(COLLECTOR_CHECKS)}")


class Pipeline:
    """The built pipeline: an `Assembler` whose records go to a `SpanSink` (sampler, scrubber,
    a retrying queue per exporter), and the metrics pipeline both report to.

    Attributes:
        config: what it was built from.
        disabled: OTEL_SDK_DISABLED=true: nothing is exported (the caller says so).
        unreachable: with collector_check "warn", why an OTLP endpoint is not accepting
            connections; else None.
        resource, assembler, sink: the parts; `sink.export` takes the assembler's records.
        metrics: the metric readers built from `config.metrics` (None when not asked for).
        recorder: where metric observations go (the metrics pipeline's, or the one given).
    """

    def __init__(
        self,
        config: PipelineConfig,
        environ: Mapping[str, str],
        *,
        span_exporters: Sequence[SpanExporter] | None = None,
        recorder: MetricsRecorder | None = None,
        resource: Resource | None = None,
        scrubber: Scrubber | None = None,
    ) -> None:
        """Build it.

        Args:
            config: the choices.
            environ: the OTEL_* variables exporters, resource and readers are chosen by.
            span_exporters: exporters to use instead of those `environ` selects (an app's
                own choice: OTEL_SDK_DISABLED then does not apply to them).
            recorder: a metrics recorder to report to when `config.metrics` is None.
            resource: the spans' resource instead of the one `environ` describes.
            scrubber: a scrubber to use instead of one built from `config.scrubber`.

        Raises:
            CollectorUnreachable: collector_check "fail" and an endpoint refused.
            ConfigError: a bad endpoint, exporter name, port or file.
        """
        self.config = config
        self.disabled = sdk_disabled(environ)
        self.unreachable = _check_collector(config, environ)
        self.resource = resource or build_resource(environ, config.resource)
        scrubber = scrubber or Scrubber(config.scrubber)
        self.metrics: MetricsPipeline | None = None
        if config.metrics is not None:
            from ..export import build_metrics  # the SDK's metrics: only when metrics are asked for

            self.metrics = build_metrics(environ, self.resource, config.metrics, scrubber)
            recorder = self.metrics.recorder
        self.recorder = recorder
        if span_exporters is None:
            exporters = build_span_exporters(
                environ,
                traces_file=config.traces_file,
                file_mode=config.traces_file_mode,
                console_format=config.console_format,
            )
        else:
            exporters = list(span_exporters)
        self.sink = SpanSink(
            exporters,
            self.resource,
            metrics=recorder,
            queue_spans=config.queue_spans,
            block_when_full=config.block_when_full,
            linger_seconds=config.export_linger_seconds,
            scrubber=scrubber,
            sampler=TraceSampler(config.sample_ratio),
        )
        self.assembler = Assembler(config.assembler, metrics=recorder)

    def shutdown_spans(self, timeout: float = 30.0, abort: Callable[[], bool] | None = None) -> int:
        """Deliver queued spans for up to `timeout` seconds (until `abort()` says to quit) and
        shut the span exporters down; returns the spans not delivered. Idempotent."""
        return self.sink.shutdown(timeout=timeout, abort=abort)

    def shutdown_metrics(
        self, timeout: float = 30.0, abort: Callable[[], bool] | None = None
    ) -> None:
        """A last metrics export within `timeout` seconds, then stop the readers and the
        /metrics server. Idempotent; nothing to do without a metrics pipeline."""
        if self.metrics is not None:
            self.metrics.shutdown(timeout=timeout, abort=abort)

    def shutdown(self, timeout: float = 30.0, *, metrics_timeout: float = 30.0) -> int:
        """Spans, then metrics (so that the last span counts are in the last export); returns
        the spans not delivered."""
        try:
            return self.shutdown_spans(timeout)
        finally:
            self.shutdown_metrics(metrics_timeout)


def _check_collector(config: PipelineConfig, environ: Mapping[str, str]) -> str | None:
    """What the collector check found: None when the collector is reachable or was not to be
    checked. Done before anything is written (--traces-file is truncated, a port is bound): a
    bad endpoint is a ConfigError here, one that refuses is one clear line.

    Raises:
        CollectorUnreachable: collector_check "fail" and an endpoint refused.
        ConfigError: a bad endpoint.
    """
    if config.collector_check == "skip":
        return None
    unreachable = unreachable_collector(
        environ,
        traces_file=config.traces_file,
        metric_defaults=config.metrics.default_exporters if config.metrics else (),
    )
    if unreachable is not None and config.collector_check == "fail":
        raise CollectorUnreachable(unreachable)
    return unreachable
