"""`otel-bridge run`: flags to the daemon's settings, the signal handlers, and the daemon
(`otel_bridge.app.Daemon`: checkpoints, probes, the status line and the stop are there)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
from types import FrameType

from .._pipeline import PipelineConfig
from ..app import Daemon, DaemonOptions, LoopLiveness, state_dir
from ..export import MetricsOptions
from ..export._common import sdk_disabled
from ..sources import TailOptions
from ._checks import prometheus_wanted
from ._common import pipeline_config, session_state_roots

__all__ = ["LoopLiveness", "daemon_options", "run", "run_pipeline_config"]

logger = logging.getLogger("otel_bridge")

#: Spans wait this long for company before an export call (each costs about a millisecond of
#: CPU, whatever it carries): a few times fewer calls at an agent's pace, at a cost in live
#: latency well inside the 100 ms bench/README.md holds it to.
_EXPORT_LINGER_SECONDS = 0.05


def run(args: argparse.Namespace) -> int:
    """Follow the logs until a signal; exit status 0, or 128 + the signal after a second one
    (130 after two Ctrl-C)."""
    config = run_pipeline_config(args)
    if sdk_disabled(os.environ):  # checkpoints stay put: what was read now is exported then
        logger.warning(
            "OTEL_SDK_DISABLED=true: nothing is exported, no spans and no metrics "
            "(files included), and checkpoints are left where they are; unset it "
            "to export"
        )
    daemon = Daemon(config, daemon_options(args), os.environ)
    signals: list[int] = []

    def _stop(signum: int, _frame: FrameType | None) -> None:
        # Only a list append: a handler that took a lock (Event.set, logging) could deadlock
        # with the very code it interrupted, which may hold that lock.
        signals.append(signum)

    # Python leaves SIGINT ignored when it was at start (the signal module's documentation:
    # SIGINT becomes KeyboardInterrupt "if the parent process has not changed it"): a
    # script's background job, which POSIX shells start with SIGINT ignored so that the
    # terminal's Ctrl-C leaves it running. Kept so: such a run stops on SIGTERM.
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    return daemon.run(signals)


def run_pipeline_config(args: argparse.Namespace) -> PipelineConfig:
    """run's pipeline: spans appended to --traces-file, Prometheus by default, a refusing
    collector a warning (spans wait in the queue), exports lingering for company."""
    return pipeline_config(
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


def daemon_options(args: argparse.Namespace) -> DaemonOptions:
    """run's flags for the daemon: what it watches, where its checkpoints go, its timings."""
    roots = [root for root, _ in session_state_roots(args.session_state, os.environ)]
    no_state = args.no_checkpoints or sdk_disabled(os.environ)
    return DaemonOptions(
        roots=tuple(roots),
        state_dir=None if no_state else state_dir(args.state_dir, os.environ),
        tail=TailOptions(
            backfill=args.backfill,
            catch_up_seconds=args.catch_up_minutes * 60,
            idle_timeout_seconds=args.idle_timeout,
            rescan_seconds=args.rescan_interval,
            max_line_bytes=args.max_line_bytes,
            shard=args.shard,
            max_log_bytes=args.max_log_bytes,
        ),
        queue_size=args.queue_size,
        unready_after=args.unready_after,
        stuck_after=args.stuck_after,
        poll_interval=args.poll_interval,
        status_interval=args.status_interval,
        export_timeout=args.export_timeout,
        progress=False if args.no_progress else None,
    )
