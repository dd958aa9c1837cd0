"""`otel-bridge replay`: flags to the replay's settings, and the replay
(`otel_bridge.app.replay`: logs, shards, workers and the exit verdict are there)."""

from __future__ import annotations

import argparse
import logging
import os
import signal

from .._pipeline import PipelineConfig
from ..app import ReplayOptions, SigtermStops, signum_of
from ..app import replay as replay_logs
from ..export import MetricsOptions
from ..export._common import sdk_disabled
from ._common import log_paths, pipeline_config

__all__ = ["replay", "replay_options", "replay_pipeline_config"]

logger = logging.getLogger("otel_bridge")

#: How long an exporter waits for a full batch (the queue is filled far faster than that).
_EXPORT_LINGER_SECONDS = 0.05


def replay(args: argparse.Namespace) -> int:
    """Exit status 0 when every log was read and exported, 1 when a log could not be read or
    was not a session log or an exporter failed (or its collector refused at the start).

    Ctrl-C or SIGTERM (`Interrupted`, 128 + the signal as exit status) stops the reading and
    the workers; what is queued is delivered for --export-timeout seconds. A SIGINT ignored
    at start (a script's background job) stays ignored: Python does not install its handler
    then, nor does this command."""
    with SigtermStops() as sigterm:
        try:
            options = replay_options(args)
            config = replay_pipeline_config(args)
            if sdk_disabled(os.environ):
                logger.warning(
                    "OTEL_SDK_DISABLED=true: nothing is exported, no spans and no metrics "
                    "(files included); unset it to export"
                )
            return replay_logs(config, options, os.environ, sigterm)
        except KeyboardInterrupt as exc:  # before the reading began (it says so itself)
            if not sigterm.said:
                name = signal.Signals(signum_of(exc)).name
                logger.info("received %s; stopping", name)
            raise


def replay_options(args: argparse.Namespace) -> ReplayOptions:
    """replay's flags for the replay: its logs, workers, shard and limits."""
    return ReplayOptions(
        paths=tuple(log_paths(args.paths, os.environ)),
        jobs=args.jobs,
        shard=args.shard,
        export_timeout=args.export_timeout,
        max_line_bytes=args.max_line_bytes,
        max_log_bytes=args.max_log_bytes,
        progress=False if args.no_progress else None,
        traces_file=args.traces_file is not None,
    )


def replay_pipeline_config(args: argparse.Namespace) -> PipelineConfig:
    """replay's pipeline: --traces-file written afresh, metrics only where asked, a refusing
    collector an error before anything is written, and a full queue waited on."""
    return pipeline_config(
        args,
        os.environ,
        traces_file_mode="w",
        # Metrics only where asked: their points carry the current time, not the logs'
        # (docs/architecture.md, "Metrics and old logs").
        metrics=MetricsOptions(
            metrics_file=args.metrics_file,
            file_mode="w",
            prometheus_port=None,
            semconv_mode=args.semconv,
        ),
        # A collector that is not running is one clear line now, before --traces-file is
        # truncated, not a minute of retries and then every span failed.
        collector_check="fail",
        block_when_full=True,
        # Batches of 512 spans rather than of what each log gave: a batch written costs the
        # exporter's thread a wake-up and a write, some 0.1 ms, more than its spans' share.
        export_linger_seconds=_EXPORT_LINGER_SECONDS,
    )
