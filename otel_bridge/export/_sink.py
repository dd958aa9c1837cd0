"""`SpanSink`: sample, scrub, convert and queue span records for every exporter.

Each exporter gets its own bounded queue and retrying worker (`_queue.py`); the sink keeps
count of what every destination has delivered, so that `run` never checkpoints past a span
still queued somewhere.

Secrets are redacted for every destination; the attribute allow and deny lists apply to every
destination but the console's lines for people (`--console-format summary` and `tree`), which
read a task's session, outcome, tools, tokens and model from attributes the lists may leave
out: they get the records redacted but not filtered (docs/privacy.md). They print on the
terminal of whoever runs the bridge; the JSON console format, which scripts and files take,
is filtered like any exporter.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExporter

from .._records import SpanRecord
from .._words import plural
from ..metrics._recorder import MetricsRecorder, NullRecorder
from ..processors import Scrubber, TraceSampler
from ._delivery import Delivery, ExportStats
from ._exporters import exporter_label
from ._otel import _SCOPE, to_readable_span
from ._otlp_json import EncodedSpan, OtlpJsonFileExporter, encode_record
from ._queue import ExportItem, ExportWorker, RetryPolicy

__all__ = ["DEFAULT_QUEUE_SPANS", "SpanSink"]

logger = logging.getLogger(__name__)


#: Spans each exporter's queue holds while its collector cannot take them (run); about 2 KiB
#: each in memory, so some 40 MiB at most per exporter.
DEFAULT_QUEUE_SPANS = 20_000


class SpanSink:
    """Converts span records to SDK spans and hands them to one retrying worker per exporter.

    Each exporter has a bounded queue and a thread: a failed batch is retried with back-off
    until it goes through (a collector down for minutes loses nothing that fits the queue);
    when a queue is full, `run` drops its oldest span (counted, logged) and `replay` waits
    (`block_when_full`). `watermark` tells how far delivery has got, for checkpoints.
    `export` may be called from one thread at a time.

    Every destination gets every span; a span counts as exported once all of them have it.

    Args:
        exporters: where spans go; none is allowed (a dry run).
        resource: the resource of every span.
        max_batch: spans per export call.
        metrics: where to count delivered and dropped spans and failed attempts.
        queue_spans: spans each exporter's queue holds.
        block_when_full: wait for room instead of dropping.
        retry: back-off between attempts at a failed batch.
        scrubber: redacts secrets in every span on its way out (one with the default patterns
            when none is given: scrubbing is always on).
        sampler: decides per trace what is exported (all, by default).
        linger_seconds: how long a worker waits for more spans before exporting a batch that
            is not full (0: at once; None: until it is full, or the sink closes).
    """

    def __init__(
        self,
        exporters: Sequence[SpanExporter],
        resource: Resource,
        max_batch: int = 512,
        metrics: MetricsRecorder | None = None,
        *,
        queue_spans: int = DEFAULT_QUEUE_SPANS,
        block_when_full: bool = False,
        retry: RetryPolicy | None = None,
        block_seconds: float = 60.0,
        scrubber: Scrubber | None = None,
        sampler: TraceSampler | None = None,
        linger_seconds: float | None = 0.0,
    ) -> None:
        if max_batch < 1 or queue_spans < 1:
            raise ValueError("max_batch and queue_spans must be positive")
        self._resource = resource
        self.scrubber = scrubber or Scrubber()
        self.sampler = sampler or TraceSampler()
        self._seq = 0
        self._closed = False
        self._left = 0
        labels = _unique([exporter_label(exporter) for exporter in exporters])
        self._delivery = Delivery(labels, metrics or NullRecorder())
        self._workers = [
            ExportWorker(
                exporter,
                capacity=queue_spans,
                max_batch=max_batch,
                block_when_full=block_when_full,
                block_seconds=block_seconds,
                label=label,
                linger_seconds=linger_seconds,
                retry=retry or RetryPolicy(),
                on_result=partial(self._delivery.result, label),
                on_rejected=self._delivery.rejected,
            )
            for exporter, label in zip(exporters, labels, strict=True)
        ]
        # The OTLP JSON file takes spans encoded here, straight from their records (one step,
        # no SDK object); the other exporters take SDK spans.
        self._takes_json = [isinstance(exporter, OtlpJsonFileExporter) for exporter in exporters]
        #: Destinations that read every attribute (the console's lines for people): given the
        #: records before the attribute filters, when there are filters.
        self._unfiltered = [
            bool(getattr(exporter, "reads_unfiltered", False)) and self.scrubber.config.filters
            for exporter in exporters
        ]

    @property
    def stats(self) -> ExportStats:
        """What became of the spans so far."""
        return self._delivery.stats

    @property
    def metrics(self) -> MetricsRecorder:
        """Where delivered and dropped spans and failed attempts are counted."""
        return self._delivery.metrics

    @property
    def on_delivered(self) -> Callable[[], None] | None:
        """Called (from an export thread, so it must be quick and thread-safe: `run` sets an
        Event) after each delivered batch: checkpoints follow delivery closely."""
        return self._delivery.on_delivered

    @on_delivered.setter
    def on_delivered(self, call: Callable[[], None] | None) -> None:
        self._delivery.on_delivered = call

    @property
    def sequence(self) -> int:
        """The sequence number of the last span queued."""
        return self._seq

    @property
    def watermark(self) -> int:
        """Every span queued up to this sequence number is done with, for every exporter."""
        return min((w.watermark for w in self._workers), default=self._seq)

    @property
    def queued(self) -> int:
        """Spans waiting in the fullest exporter queue."""
        return max((w.depth for w in self._workers), default=0)

    @property
    def destinations(self) -> int:
        """How many exporters the spans go to."""
        return len(self._workers)

    def failing(self) -> tuple[str, float] | None:
        """The exporter that has failed the longest on its current batch, and for how many
        seconds; None when none is failing."""
        now = time.monotonic()
        worst = None
        for worker in self._workers:
            since = worker.failing_since
            if since is not None and (worst is None or now - since > worst[1]):
                worst = (worker.label, now - since)
        return worst

    def export(self, records: Iterable[SpanRecord]) -> list[tuple[int, int]]:
        """Sample, scrub and queue records for every exporter.

        Returns:
            the sequence number and span id of each span queued (the sampler may hold some
            back and release them with a later call), for checkpoints to tell which spans
            `watermark` says were delivered.
        """
        return self._queue(self.sampler.offer(records))

    def export_scrubbed(
        self, records: Sequence[SpanRecord], encoded: Sequence[str] | None = None
    ) -> list[tuple[int, int]]:
        """`export` of records scrubbed already by a scrubber of this sink's configuration,
        without its attribute filters (`Scrubber.record(..., filtered=False)`: `replay --jobs`
        scrubs in its worker processes; the filters are applied here, per destination), with,
        when given, the `encode_record` text of each for the OTLP JSON file, filtered.

        Only for a sampler that keeps everything: a sampler that drops judges records as they
        are before scrubbing (an attribute it reads may be denied).
        """
        if self.sampler.ratio < 1.0:
            raise ValueError("records scrubbed before sampling: sample before scrubbing")
        return self._queue_scrubbed(records, encoded)

    def export_encoded(
        self, span_ids: Sequence[int], encoded: Sequence[str] | None = None
    ) -> list[tuple[int, int]]:
        """`export_scrubbed` where every destination is the OTLP JSON file (`json_only`), or
        there is none: the spans as their ids and `encode_record` texts only (no texts for no
        destination)."""
        if self.sampler.ratio < 1.0 or (self._workers and (encoded is None or not self.json_only)):
            raise ValueError("spans as texts only: for OTLP JSON files only, all kept")
        sequence = self._number(len(span_ids))
        if encoded is not None:
            self._put(sequence, self._as_json(sequence, encoded), [])
        return list(zip(sequence, span_ids, strict=True))

    @property
    def json_only(self) -> bool:
        """Every destination (one at least) is the OTLP JSON file: a span's text is all they
        take."""
        return bool(self._takes_json) and all(self._takes_json)

    @property
    def takes_json(self) -> bool:
        """Some destination writes the OTLP JSON file (`export_scrubbed` then uses the
        encoded text of each span)."""
        return any(self._takes_json)

    def _queue(self, records: Iterable[SpanRecord]) -> list[tuple[int, int]]:
        if not self._workers:  # no destination: nothing to scrub, convert or encode
            return self._queue_scrubbed(list(records), None)
        return self._queue_scrubbed(self.scrubber.records(records, filtered=False), None)

    def _queue_scrubbed(
        self, records: Sequence[SpanRecord], encoded: Sequence[str] | None
    ) -> list[tuple[int, int]]:
        """Queue records scrubbed but not filtered (`filtered=False`; the same when there are
        no filters) for every destination: filtered for each but those that read every
        attribute, which get them as they are."""
        sequence = self._number(len(records))
        queued = [(seq, record.span_id) for seq, record in zip(sequence, records, strict=True)]
        if not records or not self._workers:
            return queued
        filtered = records
        if self.scrubber.config.filters:
            filtered = [self.scrubber.filtered(record) for record in records]
        as_json: list[tuple[int, ExportItem]] = []
        as_sdk: list[tuple[int, ExportItem]] = []
        whole: list[tuple[int, ExportItem]] = []
        if any(self._takes_json):
            texts = encoded if encoded is not None else [encode_record(r) for r in filtered]
            as_json = self._as_json(sequence, texts)
        pairs = zip(self._takes_json, self._unfiltered, strict=True)
        if any(not (json or every) for json, every in pairs):
            as_sdk = self._as_sdk(sequence, filtered)
        if any(self._unfiltered):
            whole = self._as_sdk(sequence, records)
        self._put(sequence, as_json, as_sdk, whole)
        return queued

    def _as_sdk(
        self, sequence: range, records: Sequence[SpanRecord]
    ) -> list[tuple[int, ExportItem]]:
        resource = self._resource
        return [
            (seq, to_readable_span(record, resource))
            for seq, record in zip(sequence, records, strict=True)
        ]

    def _number(self, count: int) -> range:
        """Sequence numbers for `count` more spans."""
        first = self._seq + 1
        self._seq += count
        return range(first, self._seq + 1)

    def _as_json(self, sequence: range, texts: Sequence[str]) -> list[tuple[int, ExportItem]]:
        resource = self._resource
        return [
            (seq, EncodedSpan(text, resource, _SCOPE))
            for seq, text in zip(sequence, texts, strict=True)
        ]

    def _put(
        self,
        sequence: range,
        as_json: list[tuple[int, ExportItem]],
        as_sdk: list[tuple[int, ExportItem]],
        whole: list[tuple[int, ExportItem]] | None = None,
    ) -> None:
        """Queue the spans numbered `sequence` for every destination, each as it takes them:
        as text (the OTLP JSON file), as SDK spans, or as SDK spans of every attribute."""
        if not sequence or not self._workers:
            return
        self._delivery.queued(sequence)
        for worker, takes_json, unfiltered in zip(
            self._workers, self._takes_json, self._unfiltered, strict=True
        ):
            if takes_json:
                worker.put(as_json)
            else:
                worker.put(whole if unfiltered and whole is not None else as_sdk)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything queued was delivered. False on timeout (it stays queued)."""
        deadline = time.monotonic() + timeout
        return all(w.wait_idle(max(deadline - time.monotonic(), 0)) for w in self._workers)

    def shutdown(self, timeout: float = 10.0, abort: Callable[[], bool] | None = None) -> int:
        """Deliver what can be within `timeout`, shut the exporters down. Idempotent.

        Args:
            timeout: seconds to keep trying, for all exporters together.
            abort: polled while waiting; when it returns True, stop trying at once (a second
                Ctrl-C). What is not delivered then is counted as such, as on a timeout.

        Returns:
            the spans not delivered to every destination (each logged per exporter); a
            checkpoint has not gone past them.
        """
        if self._closed:
            return self._left
        self._queue(self.sampler.flush())  # traces whose root never came: decided as they are
        self._closed = True
        deadline = time.monotonic() + timeout
        for worker in self._workers:  # all deliver at once, not one after the other
            worker.begin_stop(deadline)
        for worker in self._workers:
            undelivered = worker.finish_stop(abort)
            if undelivered:
                logger.error(
                    "%s: %s not delivered at shutdown", worker.label, plural(undelivered, "span")
                )
        self._left = self._delivery.undelivered()
        return self._left


def _unique(labels: list[str]) -> list[str]:
    """Labels made unique (two console exporters: 'console', 'console #2')."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out
