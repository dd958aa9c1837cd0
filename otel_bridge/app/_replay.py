"""The orchestration of `otel-bridge replay`: which logs (the shard's), how many worker
processes, what the workers prepare, the reading and its stop, and the exit verdict.

The command line builds the `PipelineConfig` and `ReplayOptions` from flags; this runs in a
test's process as in the command's.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .._progress import ProgressBar
from .._words import plural
from ..decode._lines import DEFAULT_MAX_LINE_BYTES
from ..export import SpanSink
from ..feed import (
    Prepare,
    PreparedSink,
    Workers,
    default_jobs,
    replay_logs_parallel,
)
from ..sources import DEFAULT_MAX_LOG_BYTES, LogFile, ReplaySummary, Shard, find_logs
from ._pipeline import CollectorUnreachable, Pipeline, PipelineConfig
from ._signals import Interrupted, SigtermStops
from ._summary import destinations, sampled, summarize_reading

__all__ = [
    "ReplayOptions",
    "in_shard",
    "plan_jobs",
    "prepare",
    "replay",
    "signum_of",
    "verdict",
]

logger = logging.getLogger("otel_bridge")


@dataclass(frozen=True)
class ReplayOptions:
    """What replay needs beyond the pipeline's config (each is a flag of replay's)."""

    paths: tuple[Path, ...]
    jobs: int | None = None  # None: the usable cores for big logs, else 1
    shard: Shard | None = None
    export_timeout: float = 30.0
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    progress: bool | None = None  # None: a bar on a terminal only
    traces_file: bool = False  # --traces-file is given (said when the collector refuses)


def plan_jobs(jobs: int | None, total_bytes: int, logs: int) -> int:
    """How many worker processes: those asked for, else the default for this many bytes,
    never more than there are logs."""
    return min(jobs or default_jobs(total_bytes), logs)


def replay(
    config: PipelineConfig,
    options: ReplayOptions,
    environ: Mapping[str, str],
    sigterm: SigtermStops,
) -> int:
    """Exit status 0 when every log was read and exported, 1 when a log could not be read or
    was not a session log or an exporter failed (or its collector refused at the start)."""
    paths = list(options.paths)
    logs = find_logs(paths)
    if options.shard is not None:
        logs = in_shard(logs, options.shard, paths)
    total = sum(_size(log.path) for log in logs)
    jobs = plan_jobs(options.jobs, total, len(logs))
    if jobs <= 1:
        return _replay(config, options, environ, logs, total, None, sigterm)
    # Before the pipeline starts its threads, so that the workers can be forked.
    with Workers(jobs) as workers:
        return _replay(config, options, environ, logs, total, workers, sigterm)


def _replay(
    config: PipelineConfig,
    options: ReplayOptions,
    environ: Mapping[str, str],
    logs: list[LogFile],
    total: int,
    workers: Workers | None,
    sigterm: SigtermStops,
) -> int:
    try:
        pipeline = Pipeline(config, environ)
    except CollectorUnreachable as exc:
        logger.error(
            "%s; nothing was replayed%s",
            exc,
            " (OTEL_TRACES_EXPORTER=none writes only --traces-file)" if options.traces_file else "",
        )
        return 1
    sink = pipeline.sink
    bar = ProgressBar(
        total,
        f"replaying {len(logs)} log{'s' if len(logs) != 1 else ''}",
        enabled=options.progress,
    )
    try:
        summary = replay_logs_parallel(
            logs,
            pipeline.assembler,
            sink.export,
            jobs=workers.jobs if workers is not None else 1,
            workers=workers,
            on_progress=bar.advance,
            max_line_bytes=options.max_line_bytes,
            prepare=prepare(sink),
            max_log_bytes=options.max_log_bytes,
        )
    except KeyboardInterrupt as exc:
        _stopping(exc, sink, options.export_timeout, sigterm)
        raise
    except Exception:
        # A SIGTERM sent to the whole process group can end a worker before this process
        # handles its own: what that breaks here is the stop that was asked for.
        if sigterm.received is not None:
            stop = Interrupted(sigterm.received)
            _stopping(stop, sink, options.export_timeout, sigterm)
            raise stop from None
        raise
    finally:
        bar.close()
        undelivered = pipeline.shutdown(options.export_timeout)
    return verdict(summary, pipeline, undelivered)


def verdict(summary: ReplaySummary, pipeline: Pipeline, undelivered: int) -> int:
    """Say what the replay did in one line; its exit status."""
    sink = pipeline.sink
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
        plural(pipeline.assembler.stats.interactions, "trace"),
        f", {plural(lost, 'span')} could not be exported" if lost else "",
        sampled(sink) + destinations(sink),
    )
    if summary.failed or summary.not_logs:  # each said in its own line, counted in the summary
        return 1
    return 1 if lost else 0


def signum_of(exc: KeyboardInterrupt) -> int:
    """The signal that stopped the replay: SIGINT for a plain KeyboardInterrupt."""
    return exc.signum if isinstance(exc, Interrupted) else signal.SIGINT


def _stopping(
    exc: KeyboardInterrupt, sink: SpanSink, timeout: float, sigterm: SigtermStops
) -> None:
    """Say that a signal stops the replay, and what is delivered before it ends."""
    sigterm.said = True
    signum = signum_of(exc)
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


def prepare(sink: SpanSink) -> tuple[Prepare, PreparedSink] | None:
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


def in_shard(logs: list[LogFile], shard: Shard, named: list[Path]) -> list[LogFile]:
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
