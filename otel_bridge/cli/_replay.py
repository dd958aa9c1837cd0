"""`otel-bridge replay`: export the spans of session logs once, with their own timestamps."""

from __future__ import annotations

import argparse
import logging
import os
import signal
from pathlib import Path

from .._pipeline import CollectorUnreachable, Pipeline
from .._progress import ProgressBar
from .._words import plural
from ..export import MetricsOptions, SpanSink
from ..export._common import sdk_disabled
from ..feed._parallel import (
    Prepare,
    PreparedSink,
    Workers,
    default_jobs,
    replay_logs_parallel,
)
from ..sources import LogFile, find_logs
from ..sources._shard import Shard
from ._common import (
    Interrupted,
    SigtermStops,
    destinations,
    log_paths,
    pipeline_config,
    sampled,
    summarize_reading,
)

__all__ = ["replay"]

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
            return _logs(args, sigterm)
        except KeyboardInterrupt as exc:  # before the reading began (it says so itself)
            if not sigterm.said:
                name = signal.Signals(_signum(exc)).name
                logger.info("received %s; stopping", name)
            raise


def _logs(args: argparse.Namespace, sigterm: SigtermStops) -> int:
    paths = log_paths(args.paths, os.environ)
    logs = find_logs(paths)
    if args.shard is not None:
        logs = _in_shard(logs, args.shard, paths)
    total = sum(_size(log.path) for log in logs)
    jobs = min(args.jobs or default_jobs(total), len(logs))
    if jobs <= 1:
        return _replay(args, logs, total, None, sigterm)
    # Before the pipeline starts its threads, so that the workers can be forked.
    with Workers(jobs) as workers:
        return _replay(args, logs, total, workers, sigterm)


def _replay(
    args: argparse.Namespace,
    logs: list[LogFile],
    total: int,
    workers: Workers | None,
    sigterm: SigtermStops,
) -> int:
    config = pipeline_config(
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
    if sdk_disabled(os.environ):
        logger.warning(
            "OTEL_SDK_DISABLED=true: nothing is exported, no spans and no metrics "
            "(files included); unset it to export"
        )
    try:
        pipeline = Pipeline(config, os.environ)
    except CollectorUnreachable as exc:
        logger.error(
            "%s; nothing was replayed%s",
            exc,
            " (OTEL_TRACES_EXPORTER=none writes only --traces-file)"
            if args.traces_file is not None
            else "",
        )
        return 1
    sink, assembler = pipeline.sink, pipeline.assembler
    bar = ProgressBar(
        total,
        f"replaying {len(logs)} log{'s' if len(logs) != 1 else ''}",
        enabled=False if args.no_progress else None,
    )
    try:
        summary = replay_logs_parallel(
            logs,
            assembler,
            sink.export,
            jobs=workers.jobs if workers is not None else 1,
            workers=workers,
            on_progress=bar.advance,
            max_line_bytes=args.max_line_bytes,
            prepare=_prepare(sink),
            max_log_bytes=args.max_log_bytes,
        )
    except KeyboardInterrupt as exc:
        _stopping(exc, sink, args.export_timeout, sigterm)
        raise
    except Exception:
        # A SIGTERM sent to the whole process group can end a worker before this process
        # handles its own: what that breaks here is the stop that was asked for.
        if sigterm.received:
            _stopping(Interrupted(signal.SIGTERM), sink, args.export_timeout, sigterm)
            raise Interrupted(signal.SIGTERM) from None
        raise
    finally:
        bar.close()
        undelivered = pipeline.shutdown(args.export_timeout)
    verdicts = []  # files that gave no event, each also said in its own line
    if summary.failed:
        verdicts.append(f"{len(summary.failed)} could not be read")
    if summary.not_logs:
        verdicts.append(f"{len(summary.not_logs)} failed: not a Copilot session log")
    if summary.empty:
        verdicts.append(f"{len(summary.empty)} empty")
    # Spans not delivered or dropped: the sink said so per destination, counted here.
    lost = undelivered + sink.stats.dropped
    logger.info(
        "replayed %s%s: %s; %s exported in %s%s%s",
        plural(summary.files, "log"),
        f" ({', '.join(verdicts)})" if verdicts else "",
        summarize_reading(summary.read),
        plural(sink.stats.exported, "span"),
        plural(assembler.stats.interactions, "trace"),
        f", {plural(lost, 'span')} could not be exported" if lost else "",
        sampled(sink) + destinations(sink),
    )
    if summary.failed or summary.not_logs:  # each said in its own line, counted in the summary
        return 1
    return 1 if lost else 0


def _signum(exc: KeyboardInterrupt) -> int:
    return exc.signum if isinstance(exc, Interrupted) else signal.SIGINT


def _stopping(
    exc: KeyboardInterrupt, sink: SpanSink, timeout: float, sigterm: SigtermStops
) -> None:
    """Say that a signal stops the replay, and what is delivered before it ends."""
    sigterm.said = True
    signum = _signum(exc)
    name = signal.Signals(signum).name
    if sink.queued:
        logger.warning(
            "received %s; delivering %s queued for up to %g s (%s again to quit now)",
            name,
            plural(sink.queued, "span"),
            timeout,
            "Ctrl-C" if signum == signal.SIGINT else name,
        )
    else:
        logger.info("received %s; stopping", name)


def _prepare(sink: SpanSink) -> tuple[Prepare, PreparedSink] | None:
    """With workers, they scrub the spans, and encode them for --traces-file, so that the
    parent, which writes every span, does not do that too: only when every span is kept (a
    sampler judges spans before they are scrubbed). With --traces-file alone, they send only
    the spans' ids and texts; with no destination, only their ids."""
    if sink.sampler.ratio < 1.0:
        return None
    if not sink.destinations:  # the spans are only counted: their ids will do
        return Prepare(None, records=False), sink
    how = Prepare(sink.scrubber.config, encode=sink.takes_json, records=not sink.json_only)
    return how, sink


def _in_shard(logs: list[LogFile], shard: Shard, named: list[Path]) -> list[LogFile]:
    """The logs of `shard`'s sessions. One the user named (its file or its session directory)
    is skipped like the others, so that replicas given the same paths never replay a session
    twice, but said, since it was asked for by name."""
    by_name = {path.resolve() for path in named}
    kept = []
    for log in logs:
        if shard.owns(log.session_hint):
            kept.append(log)
        elif log.path.resolve() in by_name or log.path.parent.resolve() in by_name:
            logger.info(
                "%s: skipped, session %s is not in shard %s", log.path, log.session_hint, shard
            )
    logger.info("shard %s: %d of %s", shard, len(kept), plural(len(logs), "session"))
    return kept


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
