"""`otel-bridge run`: the daemon that follows session logs as they grow and exports continuously.

Owns what only a long-running process needs around the shared pipeline: checkpoints saved
never past what was delivered, the /readyz and /healthz verdicts, a status line now and then,
and the stop (Ctrl-C or SIGTERM delivers what is queued; a second one quits at once).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import time
from pathlib import Path
from types import FrameType

from .._checkpoint import CheckpointStore
from .._exceptions import CheckpointError
from .._metrics import MetricsRecorder
from .._pipeline import Pipeline
from .._progress import ProgressBar
from .._state_lock import StateLock
from .._version import __version__
from .._words import plural
from ..export import MetricsOptions, SpanSink
from ..export._common import sdk_disabled
from ..feed import StreamFeeder
from ..sources import Tailer, TailOptions
from ._checks import prometheus_wanted
from ._common import (
    destinations,
    pipeline_config,
    sampled,
    session_state_roots,
    summarize_reading,
)

__all__ = ["LoopLiveness", "run", "state_dir"]

logger = logging.getLogger("otel_bridge")

#: Spans wait this long for company before an export call (each costs about a millisecond of
#: CPU, whatever it carries): a few times fewer calls at an agent's pace, at a cost in live
#: latency well inside the 100 ms bench/README.md holds it to.
_EXPORT_LINGER_SECONDS = 0.05

_PROBLEM_COUNTERS: tuple[tuple[str, dict[str, str]], ...] = (
    ("otel_bridge.checkpoint.failures", {}),
    ("otel_bridge.watch.problems", {"otel_bridge.reason": "unavailable"}),
    ("otel_bridge.watch.problems", {"otel_bridge.reason": "overflow"}),
    ("otel_bridge.events.failed", {"otel_bridge.step": "read"}),
)


def run(args: argparse.Namespace) -> int:
    """Follow the logs until a signal; exit status 0, or 128 + the signal after a second one
    (130 after two Ctrl-C)."""
    roots = [root for root, _ in session_state_roots(args.session_state, os.environ)]
    config = pipeline_config(
        args,
        os.environ,
        traces_file_mode="a",
        metrics=MetricsOptions(
            default_exporters=("prometheus",),
            prometheus_host=args.prometheus_host,
            prometheus_port=None if args.no_prometheus else args.prometheus_port,
            metrics_file=args.metrics_file,
            file_mode="a",
            export_interval_millis=int(args.metrics_interval * 1000),
            semconv_mode=args.semconv,
            # a flag of the port serves it whatever OTEL_METRICS_EXPORTER says
            always=("prometheus",) if prometheus_wanted(args) else (),
        ),
        # A bad endpoint is an error (exit 2) before anything starts; one that refuses is a
        # warning: spans wait in the queue until it accepts them.
        collector_check="warn",
        queue_spans=args.queue_size,
        export_linger_seconds=_EXPORT_LINGER_SECONDS,
    )
    if sdk_disabled(os.environ):  # checkpoints stay put: what was read now is exported then
        logger.warning(
            "OTEL_SDK_DISABLED=true: nothing is exported, no spans and no metrics "
            "(files included), and checkpoints are left where they are; unset it "
            "to export"
        )
    directory = (
        None if args.no_checkpoints or sdk_disabled(os.environ) else state_dir(args.state_dir)
    )
    # The store makes the state directory; the lock, before anything starts, keeps a second
    # run off it (an installed service and a run by hand would overwrite each other's
    # checkpoints). A crash cannot leave it behind: the kernel drops it with the process.
    store = CheckpointStore(directory, config.scrubber) if directory is not None else None
    lock = StateLock(directory) if directory is not None else None
    pipeline = Pipeline(config, os.environ)
    sink, assembler, metrics = pipeline.sink, pipeline.assembler, pipeline.metrics
    options = TailOptions(
        backfill=args.backfill,
        catch_up_seconds=args.catch_up_minutes * 60,
        idle_timeout_seconds=args.idle_timeout,
        rescan_seconds=args.rescan_interval,
        max_line_bytes=args.max_line_bytes,
        shard=args.shard,
        max_log_bytes=args.max_log_bytes,
    )
    tailer = Tailer(
        roots,
        StreamFeeder(assembler, sink.export, sequence=lambda: sink.sequence),
        options,
        checkpoints=store,
        # Logs wait on disk while the exporters hold half their queue: a read never makes
        # the queue drop spans (a MiB read adds a few thousand at most).
        backlog=lambda: sink.queued,
        max_backlog=max(args.queue_size // 2, 1),
    )

    checkpointing = _Checkpointing(tailer, sink, metrics.recorder if metrics else None)

    def readiness() -> tuple[bool, str]:
        if not tailer.started:
            return False, "starting: listing the session logs"
        if tailer.catching_up:
            return False, f"catching up {plural(tailer.catching_up, 'log')}"
        if checkpointing.failing is not None:
            return False, f"checkpoints cannot be saved: {checkpointing.failing}"
        failing = sink.failing()
        if failing is not None and failing[1] >= args.unready_after:
            return False, (
                f"{failing[0]} failing for {failing[1]:.0f}s, {plural(sink.queued, 'span')} queued"
            )
        return True, "ok"

    liveness = LoopLiveness(tailer, args.stuck_after, args.poll_interval)
    if metrics is not None and metrics.server is not None:
        metrics.server.readiness = readiness
        metrics.server.liveness = liveness
    status = _StatusLine(tailer, sink, args.status_interval)

    sink.on_delivered = tailer.wake.set  # a delivery moves checkpoints: save soon after
    if metrics is not None and metrics.recorder is not None:
        # The daemon's problem counters exist from the start, at 0: a series that first
        # appears at 1 hides that first increase from Prometheus's increase() and alerts.
        for name, labels in _PROBLEM_COUNTERS:
            metrics.recorder.add(name, 0, labels, "")
        metrics.recorder.gauge("copilot.sessions.active", lambda: assembler.open_interactions)
        metrics.recorder.gauge("otel_bridge.files.followed", lambda: tailer.followed_count)
        metrics.recorder.gauge("otel_bridge.sessions.resident", lambda: assembler.resident)
    signals: list[int] = []

    def _stop(signum: int, _frame: FrameType | None) -> None:
        # Only a list append: a handler that took a lock (Event.set, logging) could deadlock
        # with the very code it interrupted, which may hold that lock.
        signals.append(signum)

    def quit_now() -> bool:  # a second Ctrl-C (or SIGTERM) while stopping
        return len(signals) > 1

    # Python leaves SIGINT ignored when it was at start (the signal module's documentation:
    # SIGINT becomes KeyboardInterrupt "if the parent process has not changed it"): a
    # script's background job, which POSIX shells start with SIGINT ignored so that the
    # terminal's Ctrl-C leaves it running. Kept so: such a run stops on SIGTERM.
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    logger.info(
        "otel-bridge %s watching %s; %s",
        __version__,
        ", ".join(map(str, roots)),
        f"checkpoints in {directory}" if directory is not None else "no checkpoints",
    )
    if pipeline.unreachable is not None:
        logger.warning("%s; spans are queued until it accepts them", pipeline.unreachable)
    deadline = float("inf")
    try:
        tailer.start()
        progress = _CatchUp(tailer, enabled=False if args.no_progress else None)

        def after_poll() -> None:
            progress.update()
            liveness.turned()
            checkpointing.save(final=False)  # never past spans still queued
            status.maybe_log()

        try:
            tailer.run(
                lambda: bool(signals), poll_interval=args.poll_interval, after_poll=after_poll
            )
        finally:
            progress.close()
        deadline = time.monotonic() + args.export_timeout
        name = signal.Signals(signals[0]).name
        if sink.queued:
            logger.info(
                "received %s; delivering %s queued for up to %g s (Ctrl-C again to quit now; %s)",
                name,
                plural(sink.queued, "span"),
                args.export_timeout,
                "what is not delivered is read again at the next start"
                if store is not None
                else "without checkpoints, what is not delivered is lost",
            )
        else:
            logger.info("received %s; stopping", name)
    finally:
        tailer.close()
        left = pipeline.shutdown_spans(args.export_timeout, abort=quit_now)
        saved = checkpointing.save(final=True)  # only up to what was delivered
        if quit_now():
            logger.warning(
                "received %s again: quitting now, %s not delivered%s",
                signal.Signals(signals[1]).name,
                plural(left, "span"),
                " (read again at the next start)" if store is not None else "",
            )
        # a last export of the metrics, in what is left of the time (at least a moment)
        pipeline.shutdown_metrics(
            max(deadline - time.monotonic(), min(args.export_timeout, 1.0)), abort=quit_now
        )
        logger.info(
            "stopped: %s; %s exported%s",
            summarize_reading(tailer.stats),
            plural(sink.stats.exported, "span"),
            destinations(sink),
        )
        if lock is not None:  # after the last checkpoint is saved
            lock.release()
    if quit_now():
        return 128 + signals[1]  # 130 after a second Ctrl-C
    return 0 if saved else 1


class _CatchUp:
    """The progress bar of the catch-up at start (logs read from their beginning or their
    checkpoint), drawn on a terminal as replay's is, and closed once every log was read to
    its end: later lines go on as they come."""

    def __init__(self, tailer: Tailer, *, enabled: bool | None) -> None:
        self._tailer = tailer
        self._done = 0
        self._bar: ProgressBar | None = None
        if tailer.catch_up_bytes and tailer.catching_up:
            count = tailer.catching_up
            self._bar = ProgressBar(
                tailer.catch_up_bytes,
                f"catching up {count} log{'s' if count != 1 else ''}",
                enabled=enabled,
            )

    def update(self) -> None:
        if self._bar is None:
            return
        done = self._tailer.caught_up_bytes
        self._bar.advance(done - self._done)
        self._done = done
        if not self._tailer.catching_up:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class LoopLiveness:
    """/healthz: alive while the main loop turns. A daemon whose loop is stuck (a write that
    never returns, a bug that loops) still serves its port from other threads, so "the
    process answers" says nothing; this says whether it still reads logs.

    The loop notes each turn (`turned`, after every poll) and the tailer each read of a log
    inside a poll (`Tailer.heartbeat`, as a read begins), so a long catch-up poll, which reads
    at most 8 MiB of a log at a time, keeps proving progress. Stuck means neither for
    `stuck_after` seconds beyond the longest wait between polls.
    """

    def __init__(self, tailer: Tailer, stuck_after: float, poll_interval: float) -> None:
        self._tailer = tailer
        self._stuck_after = stuck_after
        self._limit = stuck_after + poll_interval
        self._turned = time.monotonic()  # from the start: a listing that hangs is stuck too

    def turned(self) -> None:
        """The main loop went round once."""
        self._turned = time.monotonic()

    def __call__(self) -> tuple[bool, str]:
        # the tailer's heartbeat exists once it has read a log (read on the server's thread)
        last = max(self._turned, getattr(self._tailer, "heartbeat", self._turned))
        quiet = time.monotonic() - last
        if quiet <= self._limit:
            return True, "ok"
        return False, (
            f"stuck: the main loop has neither finished a poll nor read a log for "
            f"{quiet:.0f}s (--stuck-after {self._stuck_after:g})"
        )


class _Checkpointing:
    """Saves checkpoints after polls and deliveries; a save that fails (a full disk, a
    read-only volume) is logged once, counted, retried with back-off, and shown by /readyz,
    and `run` goes on exporting: only a crash meanwhile would repeat more."""

    _MAX_BACKOFF = 60.0

    def __init__(self, tailer: Tailer, sink: SpanSink, recorder: MetricsRecorder | None) -> None:
        self._tailer, self._sink, self._recorder = tailer, sink, recorder
        self.failing: str | None = None  # the current failure, for /readyz
        self.first_error: str | None = None
        self.failures = 0
        self._backoff = 0.0
        self._retry_at = 0.0

    def save(self, *, final: bool) -> bool:
        """Save (throttled unless `final`); False when the save failed."""
        if not final and time.monotonic() < self._retry_at:
            return self.failing is None
        try:
            self._tailer.save_checkpoints(self._sink.watermark, force=final)
        except CheckpointError as exc:
            self.failures += 1
            if self._recorder is not None:
                self._recorder.add("otel_bridge.checkpoint.failures", 1, {}, "")
            if final:
                logger.error(
                    "%s; the next start reads again what this run delivered since the last "
                    "checkpoint saved%s",
                    exc,
                    f" (saving has failed {self.failures} times since: {self.first_error})"
                    if self.first_error and self.failures > 1
                    else "",
                )
                return False
            self._backoff = min(max(self._backoff * 2, 1.0), self._MAX_BACKOFF)
            self._retry_at = time.monotonic() + self._backoff
            if self.failing is None:
                logger.warning(
                    "%s; retrying with back-off (spans are still exported; a restart "
                    "meanwhile would export again what was delivered since)",
                    exc,
                )
            self.failing = str(exc)
            self.first_error = self.first_error or str(exc)
            return False
        if self.failing is not None:
            logger.info("checkpoints saved again after %s", plural(self.failures, "failed attempt"))
            self.failing = None
            self._backoff = 0.0
        return True


class _StatusLine:
    """Logs now and then what run is doing: one line an operator can read at a glance."""

    def __init__(self, tailer: Tailer, sink: SpanSink, interval: float) -> None:
        self._tailer, self._sink, self._interval = tailer, sink, interval
        self._last = time.monotonic()
        self._events = 0

    def maybe_log(self) -> None:
        now = time.monotonic()
        if not self._interval or now - self._last < self._interval:
            return
        rate = (self._tailer.events_read - self._events) / (now - self._last)
        self._last, self._events = now, self._tailer.events_read
        lag = self._tailer.last_lag
        stats = self._sink.stats
        logger.info(
            "status: following %s (%d catching up, %d in memory), %.1f events/s, "
            "last lag %s, %s queued, %d exported, %d dropped, %s in failed "
            "attempts%s",
            plural(self._tailer.followed_count, "log"),
            self._tailer.catching_up,
            self._tailer.resident,
            rate,
            f"{lag:.1f}s" if lag is not None else "-",
            plural(self._sink.queued, "span"),
            stats.exported,
            stats.dropped,
            plural(stats.failed, "span"),
            sampled(self._sink),
        )


def state_dir(given: Path | None) -> Path:
    """--state-dir, else $OTEL_BRIDGE_STATE_DIR, else $XDG_STATE_HOME/otel-bridge, else
    ~/.local/state/otel-bridge."""
    if given is not None:
        return given
    if os.environ.get("OTEL_BRIDGE_STATE_DIR"):
        return Path(os.environ["OTEL_BRIDGE_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME")
    return (Path(base) if base else Path.home() / ".local" / "state") / "otel-bridge"
