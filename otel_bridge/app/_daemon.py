"""The daemon behind `otel-bridge run`: the tailer, the pipeline, checkpoints, probes and the
status line put together, and stopped in one order.

The command line turns flags into a `PipelineConfig` and `DaemonOptions` and installs the
signal handlers; everything else is here, so that it runs in a test's process as it does in
the service's.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import semconv as sc
from .._version import __version__
from .._words import plural
from ..assembler import Assembler
from ..checkpoint._lock import StateLock
from ..checkpoint._store import CheckpointStore
from ..export import OtelMetricsRecorder
from ..feed import StreamFeeder
from ..sources import Tailer, TailOptions
from ._checkpointing import Checkpointing
from ._memory import MemoryRelease
from ._pipeline import Pipeline, PipelineConfig
from ._probes import LoopLiveness, Readiness
from ._running import RunningNow
from ._status import CatchUp, StatusLine
from ._summary import destinations, summarize_reading

__all__ = ["PROBLEM_COUNTERS", "Daemon", "DaemonOptions", "register_gauges"]

logger = logging.getLogger("otel_bridge")

#: The daemon's problem counters, which exist from the start at 0: a series that first
#: appears at 1 hides that first increase from Prometheus's increase() and alerts.
PROBLEM_COUNTERS: tuple[tuple[str, dict[str, str]], ...] = (
    (sc.METRIC_CHECKPOINT_FAILURES, {}),
    (sc.METRIC_WATCH_PROBLEMS, {sc.OTEL_BRIDGE_REASON: "unavailable"}),
    (sc.METRIC_WATCH_PROBLEMS, {sc.OTEL_BRIDGE_REASON: "overflow"}),
    (sc.METRIC_EVENTS_FAILED, {sc.OTEL_BRIDGE_STEP: "read"}),
)


@dataclass(frozen=True)
class DaemonOptions:
    """What run needs beyond the pipeline's config (each is a flag of run's)."""

    roots: tuple[Path, ...]
    state_dir: Path | None  # None: no checkpoints
    tail: TailOptions
    queue_size: int
    unready_after: float = 60.0
    stuck_after: float = 120.0
    poll_interval: float = 0.5
    status_interval: float = 300.0
    export_timeout: float = 30.0
    progress: bool | None = None  # None: a bar on a terminal only


def register_gauges(
    recorder: OtelMetricsRecorder,
    assembler: Assembler,
    tailer: Tailer,
    running: RunningNow | None = None,
) -> None:
    """The problem counters at 0, and the gauges of what run holds now (and, given
    `running`, those of the tasks that run now)."""
    for name, labels in PROBLEM_COUNTERS:
        recorder.add(name, 0, labels, "")
    recorder.gauge(sc.METRIC_SESSIONS_ACTIVE, lambda: assembler.open_interactions)
    recorder.gauge(sc.METRIC_FILES_FOLLOWED, lambda: tailer.followed_count)
    recorder.gauge(sc.METRIC_SESSIONS_RESIDENT, lambda: assembler.resident)
    if running is not None:
        running.register(recorder)


class Daemon:
    """Follows the logs until `run`'s stop list holds a signal. Built, it holds the state
    directory's lock and the pipeline; `run` starts reading and always ends with `_stop`.

    The stop's order is what makes a checkpoint never pass what was delivered: the tailer
    closes (no more spans), queued spans are delivered for `export_timeout` seconds, the
    checkpoints are saved up to what was delivered, the metrics are exported a last time
    (so that they count the last spans), and the lock is dropped last.
    """

    def __init__(
        self, config: PipelineConfig, options: DaemonOptions, environ: Mapping[str, str]
    ) -> None:
        self.options = options
        directory = options.state_dir
        # The store makes the state directory; the lock, before anything starts, keeps a
        # second run off it (an installed service and a run by hand would overwrite each
        # other's checkpoints). The kernel drops it with the process, whatever the exit.
        self.store = CheckpointStore(directory, config.scrubber) if directory is not None else None
        self.lock = StateLock(directory) if directory is not None else None
        self.pipeline = pipeline = Pipeline(config, environ)
        sink, metrics = pipeline.sink, pipeline.metrics
        feeder = StreamFeeder(pipeline.assembler, sink.export, sequence=lambda: sink.sequence)
        self.tailer = Tailer(
            list(options.roots),
            feeder,
            options.tail,
            checkpoints=self.store,
            # Logs wait on disk while the exporters hold half their queue: a read never makes
            # the queue drop spans (a MiB read adds a few thousand at most).
            backlog=lambda: sink.queued,
            max_backlog=max(options.queue_size // 2, 1),
        )
        recorder = metrics.recorder if metrics else None
        self.checkpointing = Checkpointing(self.tailer, sink, recorder)
        self.readiness = Readiness(self.tailer, sink, self.checkpointing, options.unready_after)
        self.liveness = LoopLiveness(self.tailer, options.stuck_after, options.poll_interval)
        if metrics is not None and metrics.server is not None:
            metrics.server.readiness = self.readiness
            metrics.server.liveness = self.liveness
        sink.on_delivered = self.tailer.wake.set  # a delivery moves checkpoints: save soon
        self.running = RunningNow(
            pipeline.assembler, catching=self.tailer.catching_streams, quiet=feeder
        )
        self.status = StatusLine(
            self.tailer, sink, options.status_interval, running=self.running.glance
        )
        if recorder is not None:
            register_gauges(recorder, pipeline.assembler, self.tailer, self.running)

    def run(self, signals: list[int]) -> int:
        """Read until `signals` holds one (a handler appends them); exit status 0, 1 when
        the last checkpoints could not be saved, 128 + the second signal when one came
        while stopping."""
        self._say_start()
        deadline = float("inf")
        try:
            self.tailer.start()
            self._loop(signals)
            deadline = time.monotonic() + self.options.export_timeout
            self._say_stopping(signals[0])
        finally:
            saved = self._stop(signals, deadline)
        if len(signals) > 1:
            return 128 + signals[1]  # 130 after a second Ctrl-C
        return 0 if saved else 1

    def _loop(self, signals: list[int]) -> None:
        progress = CatchUp(self.tailer, enabled=self.options.progress)
        memory = MemoryRelease()

        def after_poll() -> None:
            progress.update()
            self.liveness.turned()
            catching_up = bool(self.tailer.catching_up)
            # stalled and long tasks: what only a clock tells
            self.running.watch(catching_up=catching_up)
            self.checkpointing.save(final=False)  # never past spans still queued
            self.status.maybe_log()
            # a catch-up's pages back, and a huge line's
            memory.after_poll(catching_up, self.tailer.let_go, self.tailer.stats.huge_lines)

        try:
            self.tailer.run(
                lambda: bool(signals),
                poll_interval=self.options.poll_interval,
                after_poll=after_poll,
            )
        finally:
            progress.close()

    def _stop(self, signals: list[int], deadline: float) -> bool:
        """Stop in the order the class says; whether the last checkpoints were saved."""

        def quit_now() -> bool:  # a second Ctrl-C (or SIGTERM) while stopping
            return len(signals) > 1

        timeout = self.options.export_timeout
        self.tailer.close()
        left = self.pipeline.shutdown_spans(timeout, abort=quit_now)
        saved = self.checkpointing.save(final=True)  # only up to what was delivered
        if quit_now():
            logger.warning(
                "received %s again: quitting now, %s not delivered%s",
                signal.Signals(signals[1]).name,
                plural(left, "span"),
                " (read again at the next start)" if self.store is not None else "",
            )
        # a last export of the metrics, in what is left of the time (at least a moment)
        self.pipeline.shutdown_metrics(
            max(deadline - time.monotonic(), min(timeout, 1.0)), abort=quit_now
        )
        sink = self.pipeline.sink
        still_open = self.running.glance().open  # not exported: read again, or lost
        logger.info(
            "stopped: %s; %s exported%s%s",
            summarize_reading(self.tailer.stats),
            plural(sink.stats.exported, "span"),
            destinations(sink),
            ""
            if not still_open
            else f"; {plural(still_open, 'task')} still open"
            + (", resumed at the next start" if self.store is not None else ""),
        )
        if self.lock is not None:  # after the last checkpoint is saved
            self.lock.release()
        return saved

    def _say_start(self) -> None:
        directory = self.options.state_dir
        logger.info(
            "otel-bridge %s watching %s; %s",
            __version__,
            ", ".join(map(str, self.options.roots)),
            f"checkpoints in {directory}" if directory is not None else "no checkpoints",
        )
        if self.pipeline.unreachable is not None:
            logger.warning("%s; spans are queued until it accepts them", self.pipeline.unreachable)

    def _say_stopping(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if signum == getattr(signal, "SIGHUP", None):
            # A service manager's `reload` (or a habit from other daemons) sends it to have
            # the configuration read again: say that it stops run instead, and how to reload.
            name += (
                " (it stops run as SIGTERM does; the configuration, --config, flags and "
                "OTEL_* variables, is read only at start: restart run to apply a change)"
            )
        queued = self.pipeline.sink.queued
        if not queued:
            logger.info("received %s; stopping", name)
            return
        logger.info(
            "received %s; delivering %s queued for up to %g s (Ctrl-C again to quit now; %s)",
            name,
            plural(queued, "span"),
            self.options.export_timeout,
            "what is not delivered is read again at the next start"
            if self.store is not None
            else "without checkpoints, what is not delivered is lost",
        )
