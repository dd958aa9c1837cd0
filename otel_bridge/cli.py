"""The `otel-bridge` command: `replay` session logs once, or `run` as a daemon that follows them.

This is the one module that reads the process environment and parses flags; it builds the
pipeline (source -> assembler -> sink) and owns its lifecycle.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from ._checkpoint import CheckpointStore
from ._doctor import diagnose
from ._exceptions import BridgeError, ConfigError
from ._lines import DEFAULT_MAX_LINE_BYTES, ReadStats
from ._privacy import Scrubber, ScrubberConfig
from ._progress import ProgressBar, TerminalHandler
from ._sampling import TraceSampler
from ._stats import StatsAssembler, StatsCollector, render_table, table_width
from ._version import __version__
from .assembler import Assembler, AssemblerConfig
from .export import MetricsOptions, SpanSink, build_metrics, build_resource, build_span_exporters
from .export._common import sdk_disabled
from .export._console import CONSOLE_FORMATS
from .export._metrics import DEFAULT_PROMETHEUS_HOST, DEFAULT_PROMETHEUS_PORT
from .export._otel import DEFAULT_QUEUE_SPANS, unreachable_collector
from .sources import Tailer, TailOptions, default_session_state, find_logs, replay_logs

__all__ = ["main"]

logger = logging.getLogger("otel_bridge")

_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

_DESCRIPTION = """\
Turn GitHub Copilot CLI sessions into OpenTelemetry traces: one trace per user message, a span
per agent turn, with the turn's LLM calls and tool calls (and sub-agents) below it.

Where spans go is set the standard OpenTelemetry way:
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318   send OTLP (HTTP/protobuf by default)
  OTEL_EXPORTER_OTLP_PROTOCOL=grpc                    ... or gRPC (e.g. endpoint :4317)
  OTEL_TRACES_EXPORTER=otlp,console                   choose exporters (otlp, console, none)
  OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES         resource of the spans
With nothing set, spans are printed to the console: a line per finished task on a terminal,
one JSON object per span in a pipe (--console-format summary, tree or json to choose).
"""

_EPILOG = """\
examples:
  otel-bridge run                              follow ~/.copilot/session-state, print spans
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 otel-bridge run
  otel-bridge replay ~/.copilot/session-state --traces-file traces.jsonl
  otel-bridge replay ~/.copilot/session-state/<session-id>
  otel-bridge stats ~/.copilot/session-state    a table of messages, turns, tools, tasks
  otel-bridge doctor                           check directories and the collector
"""


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otel-bridge",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    log_level_help = "what the bridge logs about itself, on stderr (default: INFO)"
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help=log_level_help,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Also after the command (`run --log-level DEBUG`); SUPPRESS: the one before the command
    # (or its default) stays unless this one is given.
    logging_options = argparse.ArgumentParser(add_help=False)
    logging_options.add_argument(
        "--log-level",
        default=argparse.SUPPRESS,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help=log_level_help,
    )

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--traces-file",
        type=Path,
        metavar="FILE",
        help="write spans as OTLP JSON Lines (one ExportTraceServiceRequest per "
        "line) to FILE, beside OTLP when an endpoint is set; with neither "
        "endpoint nor OTEL_TRACES_EXPORTER, the only output",
    )
    common.add_argument(
        "--capture-content",
        action="store_true",
        help="put the texts (prompts, answers, tool arguments and results, "
        f"error messages) on spans; also on with {_CONTENT_ENV}=true. Off "
        "by default: logs hold prompts, code and secrets (docs/privacy.md)",
    )
    common.add_argument(
        "--keep-unknown-events",
        action="store_true",
        help="put each event of a type the bridge does not know on its task's root span as a "
        "span event (id and size; its data too with content capture on); counted either way",
    )
    common.add_argument(
        "--metrics-file",
        type=Path,
        metavar="FILE",
        help="write metrics as OTLP JSON Lines (one ExportMetricsServiceRequest per line) to FILE",
    )
    common.add_argument(
        "--content-max-chars",
        type=_positive_int,
        default=8192,
        metavar="N",
        help="with content on, cut each text attribute to N characters (default: 8192)",
    )
    common.add_argument(
        "--content-hash-salt",
        metavar="SALT",
        default=os.environ.get("OTEL_BRIDGE_CONTENT_HASH_SALT"),
        help="also put a salted SHA-256 of prompts, answers and tool arguments "
        "and results on spans, content on or off (default: "
        "$OTEL_BRIDGE_CONTENT_HASH_SALT; none)",
    )
    common.add_argument(
        "--scrub-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="also redact what this regular expression matches; repeatable "
        "(secrets of common kinds are always redacted)",
    )
    common.add_argument(
        "--deny-attribute",
        action="append",
        default=[],
        metavar="KEY",
        help="never send this span attribute; repeatable",
    )
    common.add_argument(
        "--allow-attribute",
        action="append",
        default=None,
        metavar="KEY",
        help="send only these span attributes; repeatable",
    )
    common.add_argument(
        "--paths",
        dest="path_mode",
        choices=["keep", "basename", "hash"],
        default="keep",
        help="file paths in text: keep them, keep only their last part, or "
        "replace them by a hash (default: keep)",
    )
    common.add_argument(
        "--sample-ratio",
        type=_ratio,
        default=1.0,
        metavar="R",
        help="export R (0 to 1) of the traces that went well; every trace with "
        "an error, an abort, a failed tool or a failed task is kept, and "
        "metrics count everything (default: 1)",
    )
    common.add_argument(
        "--export-timeout",
        type=_non_negative_float,
        default=30.0,
        metavar="S",
        help="at exit, how long to keep trying to deliver queued spans (default: 30)",
    )
    common.add_argument(
        "--max-line-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"skip (and count) log lines longer than N bytes (default: {DEFAULT_MAX_LINE_BYTES})",
    )
    common.add_argument(
        "--console-format",
        choices=CONSOLE_FORMATS,
        default=None,
        help="how spans going to the console are printed: summary (a line per "
        "finished task: outcome, turns, tools, tokens, model, duration), "
        "tree (the span tree), json (one span per line, OpenTelemetry's "
        "console format). Default: summary on a terminal, json otherwise",
    )

    replay = commands.add_parser(
        "replay",
        parents=[common, logging_options],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="export the spans of session logs once, then exit",
        description="Read session logs from start to end and export their spans with their "
        "original timestamps. Spans still open at the end of a log are closed at "
        "its last event and marked copilot.incomplete=true.\n\nExit status: 0 when "
        "every log was read and exported, 1 when a log could not be read, was not "
        "a Copilot session log (no line was an event) or an exporter failed, 2 for "
        "a bad path or option.",
    )
    replay.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="an events.jsonl file, a session directory, or a session-state "
        "directory holding many sessions",
    )
    replay.add_argument(
        "--no-progress",
        action="store_true",
        help="do not draw the progress bar (it is drawn only on a terminal)",
    )

    run = commands.add_parser(
        "run",
        parents=[common, logging_options],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="follow session logs as they grow and export spans continuously",
        description="Watch session-state directories, follow every events.jsonl in them as it "
        "grows, pick up new sessions as they start, and export each interaction's "
        "spans when its agent loop ends. Stop with Ctrl-C or SIGTERM: finished "
        "spans are flushed first.",
    )
    run.add_argument(
        "--session-state",
        action="append",
        type=Path,
        metavar="DIR",
        help="a session-state directory to watch; repeatable (default: "
        "$COPILOT_HOME/session-state, COPILOT_HOME defaulting to ~/.copilot)",
    )
    run.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="where run keeps its checkpoints (resume points of every log), so "
        "that a restart neither loses nor repeats spans (default: "
        "$OTEL_BRIDGE_STATE_DIR, else $XDG_STATE_HOME/otel-bridge, else "
        "~/.local/state/otel-bridge)",
    )
    run.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="keep no checkpoints: every start is a first start",
    )
    run.add_argument(
        "--backfill",
        action="store_true",
        help="also read logs older than --catch-up-minutes from their beginning",
    )
    run.add_argument(
        "--catch-up-minutes",
        type=_non_negative_float,
        default=60.0,
        metavar="M",
        help="at start, read logs modified in the last M minutes from their "
        "beginning; older ones are followed from their end (default: 60)",
    )
    run.add_argument(
        "--idle-timeout",
        type=_non_negative_float,
        default=900.0,
        metavar="S",
        help="close an interaction whose log has been quiet for S seconds "
        "(default: 900; logs never say when an agent stopped for good)",
    )
    run.add_argument(
        "--poll-interval",
        type=_poll_interval,
        default=0.5,
        metavar="S",
        help="longest wait between checks for new lines, in seconds; file "
        "system notifications usually wake it sooner (default: 0.5)",
    )
    run.add_argument(
        "--prometheus-host",
        default=DEFAULT_PROMETHEUS_HOST,
        metavar="ADDR",
        help="address of the Prometheus /metrics endpoint (default: "
        f"{DEFAULT_PROMETHEUS_HOST}; 0.0.0.0 exposes it to the network)",
    )
    run.add_argument(
        "--prometheus-port",
        type=_port,
        default=DEFAULT_PROMETHEUS_PORT,
        metavar="PORT",
        help="port of the Prometheus endpoint (default: "
        f"{DEFAULT_PROMETHEUS_PORT}; 0 picks a free one)",
    )
    run.add_argument("--no-prometheus", action="store_true", help="do not serve Prometheus metrics")
    run.add_argument(
        "--metrics-interval",
        type=_metrics_interval,
        default=60.0,
        metavar="S",
        help="how often OTLP, console and file metrics are exported (default: 60)",
    )
    run.add_argument(
        "--queue-size",
        type=_positive_int,
        default=DEFAULT_QUEUE_SPANS,
        metavar="N",
        help="spans kept per exporter while its collector is down or "
        f"slow; beyond, the oldest are dropped and counted "
        f"(default: {DEFAULT_QUEUE_SPANS})",
    )
    run.add_argument(
        "--unready-after",
        type=_positive_float,
        default=60.0,
        metavar="S",
        help="/readyz says not ready once an exporter has failed this long on a "
        "batch (default: 60); also not ready while logs are caught up",
    )
    run.add_argument(
        "--status-interval",
        type=_non_negative_float,
        default=300.0,
        metavar="S",
        help="log a one-line status this often (default: 300; 0: never)",
    )
    run.add_argument(
        "--rescan-interval",
        type=_positive_float,
        default=5.0,
        metavar="S",
        help="look at every directory and file at least this often, in case a "
        "notification was lost (default: 5)",
    )

    stats = commands.add_parser(
        "stats",
        parents=[logging_options],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="print a table of what the sessions in some logs did",
        description="Read session logs and print, per session and in total: when it started, "
        "its model and\ndirectory, user messages, turns, main-agent turns per "
        "message, tool calls and failures,\ntasks by outcome and tokens. The numbers "
        "are the same the metrics export.\n\nThe table fits the terminal ($COLUMNS "
        "or its width; to a pipe or file it is printed whole).\nWhen narrow, the "
        "session id is cut to 8 characters and tokens shortened (12.3k); then the\n"
        "five outcome columns become one (completed/tasks); then messages and "
        "turns per message\nare dropped and the start shows its date only; then "
        "long model and directory names are cut.\n--json has everything.",
    )
    stats.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="as for replay")
    stats.add_argument(
        "--json",
        action="store_true",
        help="print JSON (one object with sessions and total) instead",
    )
    stats.add_argument(
        "--paths",
        dest="path_mode",
        choices=["keep", "basename", "hash"],
        default="basename",
        help="the directory a session ran in: the whole path, its last part, or "
        "a hash of it as spans carry with --paths hash (default: basename)",
    )

    doctor = commands.add_parser(
        "doctor",
        parents=[logging_options],
        help="check what run would watch and whether the exporters are reachable",
        description="Say which session-state directories run would watch and what is in them, "
        "which exporters the environment selects, and whether an OTLP endpoint "
        "accepts connections. Exit status 0 when all is well, 1 otherwise.",
    )
    doctor.add_argument(
        "--session-state",
        action="append",
        type=Path,
        metavar="DIR",
        help="as for run (default: $COPILOT_HOME/session-state)",
    )
    doctor.add_argument("--traces-file", type=Path, metavar="FILE", help="as for run")
    return parser


# Argument types. Each raises ArgumentTypeError for every bad input (never ValueError, which
# argparse reports as "invalid _ratio value", naming the function instead of what was expected):
# "argument --sample-ratio: 'abc' is not a number between 0 and 1", exit status 2.

#: Longest duration accepted: waits beyond threading.TIMEOUT_MAX (about 9.2e9 s) raise
#: OverflowError deep inside the exporters and the poll loop.
_MAX_SECONDS = 1e9


def _whole(text: str, low: int, high: int | None, expected: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{text!r} is not {expected}")
    return value


def _number(text: str, ok: Callable[[float], bool], expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not ok(value):  # nan and inf, too, make no duration
        raise argparse.ArgumentTypeError(f"{text!r} is not {expected}")
    return value


def _positive_int(text: str) -> int:
    return _whole(text, 1, None, "a whole number of 1 or more")


def _port(text: str) -> int:
    return _whole(text, 0, 65535, "a port number from 0 to 65535 (0: any free port)")


def _positive_float(text: str) -> float:
    return _number(
        text,
        lambda v: 0 < v <= _MAX_SECONDS,
        f"a number greater than 0 and at most {_MAX_SECONDS:.0f}",
    )


def _poll_interval(text: str) -> float:
    # A stop (SIGTERM, Ctrl-C) is noticed at the end of a wait: an hour's wait would ignore it.
    return _number(text, lambda v: 0 < v <= 60, "a number greater than 0 and at most 60")


def _metrics_interval(text: str) -> float:
    # The SDK's reader takes whole milliseconds and refuses 0.
    return _number(
        text, lambda v: 0.001 <= v <= _MAX_SECONDS, f"a number from 0.001 to {_MAX_SECONDS:.0f}"
    )


def _ratio(text: str) -> float:
    return _number(text, lambda v: 0 <= v <= 1, "a number between 0 and 1")


def _privacy(args: argparse.Namespace) -> tuple[Scrubber, TraceSampler]:
    try:
        config = ScrubberConfig(
            extra_patterns=tuple(args.scrub_pattern),
            deny_attributes=frozenset(args.deny_attribute),
            allow_attributes=frozenset(args.allow_attribute) if args.allow_attribute else None,
            paths=args.path_mode,
            content_max_chars=args.content_max_chars,
        )
    except re.error as exc:
        raise ConfigError(f"--scrub-pattern: not a regular expression: {exc}") from exc
    return Scrubber(config), TraceSampler(args.sample_ratio)


def _non_negative_float(text: str) -> float:
    return _number(text, lambda v: 0 <= v <= _MAX_SECONDS, f"a number from 0 to {_MAX_SECONDS:.0f}")


def _assembler_config(args: argparse.Namespace) -> AssemblerConfig:
    from_env = os.environ.get(_CONTENT_ENV, "").strip().lower() == "true"
    return AssemblerConfig(
        capture_content=args.capture_content or from_env,
        hash_salt=args.content_hash_salt,
        keep_unknown_events=args.keep_unknown_events,
    )


def _summarize_reading(stats: ReadStats) -> str:
    parts = [f"{stats.events} events"]
    if stats.malformed:
        parts.append(f"{stats.malformed} malformed lines skipped")
    if stats.oversized:
        parts.append(f"{stats.oversized} oversized lines skipped")
    if stats.torn:
        parts.append(f"{stats.torn} torn lines repaired")
    if stats.invalid_utf8:
        parts.append(f"{stats.invalid_utf8} lines with invalid UTF-8")
    if stats.unknown_types:
        parts.append(
            f"{sum(stats.unknown_types.values())} events of "
            f"{len(stats.unknown_types)} unknown types"
        )
    return ", ".join(parts)


def _cmd_replay(args: argparse.Namespace) -> int:
    logs = find_logs(args.paths)
    if sdk_disabled(os.environ):
        logger.warning(
            "OTEL_SDK_DISABLED=true: nothing is exported, no spans and no metrics "
            "(files included); unset it to export"
        )
    # Before anything is written (--traces-file is truncated): a collector that is not running
    # is one clear line now, not a minute of retries and then every span failed.
    unreachable = unreachable_collector(os.environ, traces_file=args.traces_file)
    if unreachable is not None:
        logger.error(
            "%s; nothing was replayed%s",
            unreachable,
            " (OTEL_TRACES_EXPORTER=none writes only --traces-file)"
            if args.traces_file is not None
            else "",
        )
        return 1
    resource = build_resource(os.environ)
    scrubber, sampler = _privacy(args)
    # Metrics only where asked: their points carry the current time, not the logs'
    # (docs/architecture.md, "Metrics and old logs").
    metrics = build_metrics(
        os.environ,
        resource,
        MetricsOptions(metrics_file=args.metrics_file, file_mode="w", prometheus_port=None),
        scrubber,
    )
    exporters = build_span_exporters(
        os.environ, traces_file=args.traces_file, file_mode="w", console_format=args.console_format
    )
    sink = SpanSink(
        exporters,
        resource,
        metrics=metrics.recorder,
        block_when_full=True,
        scrubber=scrubber,
        sampler=sampler,
    )
    assembler = Assembler(_assembler_config(args), metrics=metrics.recorder)
    total = sum(_size(log.path) for log in logs)
    bar = ProgressBar(
        total,
        f"replaying {len(logs)} log{'s' if len(logs) != 1 else ''}",
        enabled=False if args.no_progress else None,
    )
    try:
        summary = replay_logs(
            logs,
            assembler,
            sink.export,
            on_progress=bar.advance,
            max_line_bytes=args.max_line_bytes,
        )
    except KeyboardInterrupt:
        if sink.queued:
            logger.warning(
                "interrupted; delivering %d queued spans for up to %g s (Ctrl-C again to quit now)",
                sink.queued,
                args.export_timeout,
            )
        raise
    finally:
        bar.close()
        undelivered = sink.shutdown(timeout=args.export_timeout)
        metrics.shutdown()
    verdicts = []  # files that gave no event, each also said in its own line
    if summary.not_logs:
        verdicts.append(f"{len(summary.not_logs)} failed: not a Copilot session log")
    if summary.empty:
        verdicts.append(f"{len(summary.empty)} empty")
    logger.info(
        "replayed %d log%s%s: %s; %d spans exported in %d traces%s",
        summary.files,
        "" if summary.files == 1 else "s",
        f" ({', '.join(verdicts)})" if verdicts else "",
        _summarize_reading(summary.read),
        sink.stats.exported,
        assembler.stats.interactions,
        _sampled(sink) + _destinations(sink),
    )
    if summary.failed:
        logger.error(
            "%d logs could not be read: %s",
            len(summary.failed),
            "; ".join(f"{path}: {why}" for path, why in summary.failed),
        )
        return 1
    if summary.not_logs:  # each said so in its own line, already
        return 1
    if undelivered or sink.stats.dropped:
        logger.error("%d spans could not be exported", undelivered + sink.stats.dropped)
        return 1
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    logs = find_logs(args.paths)
    collector = StatsCollector(paths=args.path_mode)
    assembler = StatsAssembler(collector)
    summary = replay_logs(logs, assembler, lambda records: None)
    sessions = sorted(collector.sessions.values(), key=lambda s: (s.started or "", s.session))
    total = collector.total()
    if args.json:
        print(
            json.dumps(
                {"sessions": [s.to_dict() for s in sessions], "total": total.to_dict()}, indent=2
            )
        )
    else:
        print(render_table(sessions, total, table_width(os.environ, sys.stdout)))
    logger.info("read %d logs: %s", summary.files, _summarize_reading(summary.read))
    return 1 if summary.failed or summary.not_logs else 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    roots = args.session_state or [default_session_state(os.environ)]
    checks = diagnose(roots, os.environ, args.traces_file)
    print(f"otel-bridge {__version__}")
    for check in checks:
        mark = "!!" if not check.ok else "warn" if check.warning else "ok"
        print(f"  [{mark}] {check.message}")
    return 0 if all(check.ok for check in checks) else 1  # a warning alone is not a failure


def _cmd_run(args: argparse.Namespace) -> int:
    roots = args.session_state or [default_session_state(os.environ)]
    resource = build_resource(os.environ)
    scrubber, sampler = _privacy(args)
    disabled = sdk_disabled(os.environ)
    if disabled:  # checkpoints stay put: once it is unset, what was read now is exported then
        logger.warning(
            "OTEL_SDK_DISABLED=true: nothing is exported, no spans and no metrics "
            "(files included), and checkpoints are left where they are; unset it "
            "to export"
        )
    # A bad endpoint is an error (exit 2) before anything starts; one that refuses is a warning
    unreachable = unreachable_collector(
        os.environ, traces_file=args.traces_file, metric_defaults=("prometheus",)
    )
    metrics = build_metrics(
        os.environ,
        resource,
        MetricsOptions(
            default_exporters=("prometheus",),
            prometheus_host=args.prometheus_host,
            prometheus_port=None if args.no_prometheus else args.prometheus_port,
            metrics_file=args.metrics_file,
            file_mode="a",
            export_interval_millis=int(args.metrics_interval * 1000),
        ),
        scrubber,
    )
    exporters = build_span_exporters(
        os.environ, traces_file=args.traces_file, file_mode="a", console_format=args.console_format
    )
    sink = SpanSink(
        exporters,
        resource,
        metrics=metrics.recorder,
        queue_spans=args.queue_size,
        scrubber=scrubber,
        sampler=sampler,
    )
    assembler = Assembler(_assembler_config(args), metrics=metrics.recorder)
    options = TailOptions(
        backfill=args.backfill,
        catch_up_seconds=args.catch_up_minutes * 60,
        idle_timeout_seconds=args.idle_timeout,
        rescan_seconds=args.rescan_interval,
        max_line_bytes=args.max_line_bytes,
    )
    store = None if args.no_checkpoints or disabled else CheckpointStore(_state_dir(args.state_dir))
    tailer = Tailer(
        roots, assembler, sink.export, options, checkpoints=store, sequence=lambda: sink.sequence
    )

    def readiness() -> tuple[bool, str]:
        if tailer.catching_up:
            return False, f"catching up {tailer.catching_up} logs"
        failing = sink.failing()
        if failing is not None and failing[1] >= args.unready_after:
            return False, (
                f"{failing[0]} failing for {failing[1]:.0f}s, {sink.queued} spans queued"
            )
        return True, "ok"

    if metrics.server is not None:
        metrics.server.readiness = readiness
    status = _StatusLine(tailer, sink, args.status_interval)

    def after_poll() -> None:
        tailer.save_checkpoints(sink.watermark)  # never past spans still queued
        status.maybe_log()

    if metrics.recorder is not None:
        metrics.recorder.gauge("copilot.sessions.active", lambda: assembler.open_interactions)
        metrics.recorder.gauge("otel_bridge.files.followed", lambda: len(tailer.followed))
    signals: list[int] = []

    def _stop(signum: int, _frame: FrameType | None) -> None:
        # Only a list append: a handler that took a lock (Event.set, logging) could deadlock
        # with the very code it interrupted, which may hold that lock.
        signals.append(signum)

    def quit_now() -> bool:  # a second Ctrl-C (or SIGTERM) while stopping
        return len(signals) > 1

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    logger.info("otel-bridge %s watching %s", __version__, ", ".join(map(str, roots)))
    if unreachable is not None:  # run goes on: spans wait in the queue until it accepts them
        logger.warning("%s; spans are queued until it accepts them", unreachable)
    deadline = float("inf")
    try:
        tailer.run(lambda: bool(signals), poll_interval=args.poll_interval, after_poll=after_poll)
        deadline = time.monotonic() + args.export_timeout
        name = signal.Signals(signals[0]).name
        if sink.queued:
            logger.info(
                "received %s; delivering %d queued spans for up to %g s (Ctrl-C again "
                "to quit now; %s)",
                name,
                sink.queued,
                args.export_timeout,
                "what is not delivered is read again at the next start"
                if store is not None
                else "without checkpoints, what is not delivered is lost",
            )
        else:
            logger.info("received %s; stopping", name)
    finally:
        tailer.close()
        left = sink.shutdown(timeout=args.export_timeout, abort=quit_now)
        tailer.save_checkpoints(sink.watermark)  # only up to what was delivered
        if quit_now():
            logger.warning(
                "received %s again: quitting now, %d spans not delivered%s",
                signal.Signals(signals[1]).name,
                left,
                " (read again at the next start)" if store is not None else "",
            )
        # a last export of the metrics, in what is left of the time (at least a moment)
        metrics.shutdown(
            timeout=max(deadline - time.monotonic(), min(args.export_timeout, 1.0)), abort=quit_now
        )
        logger.info(
            "stopped: %s; %d spans exported%s",
            _summarize_reading(tailer.stats),
            sink.stats.exported,
            _destinations(sink),
        )
    return 128 + signals[1] if quit_now() else 0  # 130 after a second Ctrl-C


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
            "status: following %d logs (%d catching up), %.1f events/s, last lag %s, "
            "%d spans queued, %d exported, %d dropped, %d spans in failed attempts%s",
            len(self._tailer.followed),
            self._tailer.catching_up,
            rate,
            f"{lag:.1f}s" if lag is not None else "-",
            self._sink.queued,
            stats.exported,
            stats.dropped,
            stats.failed,
            _sampled(self._sink),
        )


def _destinations(sink: SpanSink) -> str:
    """ " (to each of 2 destinations; otlp ...: 6, file ...: 6)" when spans go to several, so
    that a destination that fell behind shows; else nothing."""
    if sink.destinations < 2:
        return ""
    return (
        f" (to each of {sink.destinations} destinations; "
        + ", ".join(f"{label}: {count}" for label, count in sink.stats.by_exporter.items())
        + ")"
    )


def _sampled(sink: SpanSink) -> str:
    """ ", N spans sampled out" when sampling is on, else nothing."""
    dropped = sink.sampler.dropped_spans
    return f", {dropped} spans sampled out" if sink.sampler.ratio < 1 else ""


def _state_dir(given: Path | None) -> Path:
    if given is not None:
        return given
    if os.environ.get("OTEL_BRIDGE_STATE_DIR"):
        return Path(os.environ["OTEL_BRIDGE_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME")
    return (Path(base) if base else Path.home() / ".local" / "state") / "otel-bridge"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    # Through the progress bar's terminal: a record never lands on the bar's line.
    logging.basicConfig(
        level=args.log_level,
        handlers=[TerminalHandler(sys.stderr)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "replay":
            return _cmd_replay(args)
        if args.command == "doctor":
            return _cmd_doctor(args)
        if args.command == "stats":
            return _cmd_stats(args)
        return _cmd_run(args)
    except BridgeError as exc:
        logger.error("%s", exc)
        return 2
    except KeyboardInterrupt:
        return 130
