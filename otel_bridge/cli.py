"""The `otel-bridge` command: `replay` session logs once, or `run` as a daemon that follows them.

This is the one module that reads the process environment and parses flags; it builds the
pipeline (source -> assembler -> sink) and owns its lifecycle.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from ._assembler import Assembler, AssemblerConfig
from ._doctor import diagnose
from ._exceptions import BridgeError
from ._lines import DEFAULT_MAX_LINE_BYTES, ReadStats
from ._progress import ProgressBar
from ._version import __version__
from .export import SpanSink, build_resource, build_span_exporters
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
With nothing set, spans are printed to the console (one JSON object per line).
"""

_EPILOG = """\
examples:
  otel-bridge run                              follow ~/.copilot/session-state, print spans
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 otel-bridge run
  otel-bridge replay ~/.copilot/session-state --traces-file traces.jsonl
  otel-bridge replay ~/.copilot/session-state/<session-id>
  otel-bridge doctor                           check directories and the collector
"""


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otel-bridge", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-level", default="INFO",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="what the bridge logs about itself, on stderr (default: INFO)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traces-file", type=Path, metavar="FILE",
                        help="write spans as OTLP JSON Lines (one ExportTraceServiceRequest per "
                             "line) to FILE; alone, this is the only output unless "
                             "OTEL_TRACES_EXPORTER says otherwise")
    common.add_argument("--capture-content", action="store_true",
                        help=f"put text from the logs (error messages) on spans; also on with "
                             f"{_CONTENT_ENV}=true. Off by default: logs hold prompts and code")
    common.add_argument("--max-line-bytes", type=_positive_int, default=DEFAULT_MAX_LINE_BYTES,
                        metavar="N", help="skip (and count) log lines longer than N bytes "
                                          f"(default: {DEFAULT_MAX_LINE_BYTES})")

    replay = commands.add_parser(
        "replay", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="export the spans of session logs once, then exit",
        description="Read session logs from start to end and export their spans with their "
                    "original timestamps. Spans still open at the end of a log are closed at "
                    "its last event and marked copilot.incomplete=true.\n\nExit status: 0 when "
                    "every log was read and exported, 1 when a log could not be read or an "
                    "exporter failed, 2 for a bad path or option.")
    replay.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="an events.jsonl file, a session directory, or a session-state "
                             "directory holding many sessions")
    replay.add_argument("--no-progress", action="store_true",
                        help="do not draw the progress bar (it is drawn only on a terminal)")

    run = commands.add_parser(
        "run", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="follow session logs as they grow and export spans continuously",
        description="Watch session-state directories, follow every events.jsonl in them as it "
                    "grows, pick up new sessions as they start, and export each interaction's "
                    "spans when its agent loop ends. Stop with Ctrl-C or SIGTERM: finished "
                    "spans are flushed first.")
    run.add_argument("--session-state", action="append", type=Path, metavar="DIR",
                     help="a session-state directory to watch; repeatable (default: "
                          "$COPILOT_HOME/session-state, COPILOT_HOME defaulting to ~/.copilot)")
    run.add_argument("--backfill", action="store_true",
                     help="also read logs older than --catch-up-minutes from their beginning")
    run.add_argument("--catch-up-minutes", type=_non_negative_float, default=60.0, metavar="M",
                     help="at start, read logs modified in the last M minutes from their "
                          "beginning; older ones are followed from their end (default: 60)")
    run.add_argument("--idle-timeout", type=_non_negative_float, default=900.0, metavar="S",
                     help="close an interaction whose log has been quiet for S seconds "
                          "(default: 900; logs never say when an agent stopped for good)")
    run.add_argument("--poll-interval", type=_positive_float, default=0.5, metavar="S",
                     help="longest wait between checks for new lines, in seconds; file "
                          "system notifications usually wake it sooner (default: 0.5)")
    run.add_argument("--rescan-interval", type=_positive_float, default=5.0, metavar="S",
                     help="look at every directory and file at least this often, in case a "
                          "notification was lost (default: 5)")

    doctor = commands.add_parser(
        "doctor", help="check what run would watch and whether the exporters are reachable",
        description="Say which session-state directories run would watch and what is in them, "
                    "which exporters the environment selects, and whether an OTLP endpoint "
                    "accepts connections. Exit status 0 when all is well, 1 otherwise.")
    doctor.add_argument("--session-state", action="append", type=Path, metavar="DIR",
                        help="as for run (default: $COPILOT_HOME/session-state)")
    doctor.add_argument("--traces-file", type=Path, metavar="FILE", help="as for run")
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive whole number")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be greater than zero")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _assembler_config(args: argparse.Namespace) -> AssemblerConfig:
    from_env = os.environ.get(_CONTENT_ENV, "").strip().lower() == "true"
    return AssemblerConfig(capture_content=args.capture_content or from_env)


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
        parts.append(f"{sum(stats.unknown_types.values())} events of "
                     f"{len(stats.unknown_types)} unknown types")
    return ", ".join(parts)


def _cmd_replay(args: argparse.Namespace) -> int:
    logs = find_logs(args.paths)
    exporters = build_span_exporters(os.environ, traces_file=args.traces_file, file_mode="w")
    sink = SpanSink(exporters, build_resource(os.environ))
    assembler = Assembler(_assembler_config(args))
    total = sum(_size(log.path) for log in logs)
    bar = ProgressBar(total, f"replaying {len(logs)} log{'s' if len(logs) != 1 else ''}",
                      enabled=False if args.no_progress else None)
    try:
        summary = replay_logs(logs, assembler, sink.export, on_progress=bar.advance,
                              max_line_bytes=args.max_line_bytes)
    finally:
        bar.close()
        sink.shutdown()
    logger.info("replayed %d logs: %s; %d spans exported in %d traces",
                summary.files, _summarize_reading(summary.read), sink.stats.exported,
                assembler.stats.interactions)
    if summary.failed:
        logger.error("%d logs could not be read: %s", len(summary.failed),
                     "; ".join(f"{path}: {why}" for path, why in summary.failed))
        return 1
    if sink.stats.failed:
        logger.error("%d spans could not be exported", sink.stats.failed)
        return 1
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    roots = args.session_state or [default_session_state(os.environ)]
    checks = diagnose(roots, os.environ, args.traces_file)
    print(f"otel-bridge {__version__}")
    for check in checks:
        print(f"  [{'ok' if check.ok else '!!'}] {check.message}")
    return 0 if all(check.ok for check in checks) else 1


def _cmd_run(args: argparse.Namespace) -> int:
    roots = args.session_state or [default_session_state(os.environ)]
    exporters = build_span_exporters(os.environ, traces_file=args.traces_file, file_mode="a")
    sink = SpanSink(exporters, build_resource(os.environ))
    assembler = Assembler(_assembler_config(args))
    options = TailOptions(backfill=args.backfill, catch_up_seconds=args.catch_up_minutes * 60,
                          idle_timeout_seconds=args.idle_timeout,
                          rescan_seconds=args.rescan_interval,
                          max_line_bytes=args.max_line_bytes)
    tailer = Tailer(roots, assembler, sink.export, options)
    stop = threading.Event()

    def _stop(signum: int, _frame: FrameType | None) -> None:
        logger.info("received %s; flushing and stopping", signal.Signals(signum).name)
        stop.set()
        tailer.wake.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    logger.info("otel-bridge %s watching %s", __version__, ", ".join(map(str, roots)))
    try:
        tailer.run(stop, poll_interval=args.poll_interval, after_poll=sink.flush)
    finally:
        tailer.close()
        sink.shutdown()
        logger.info("stopped: %s; %d spans exported", _summarize_reading(tailer.stats),
                    sink.stats.exported)
    return 0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "replay":
            return _cmd_replay(args)
        if args.command == "doctor":
            return _cmd_doctor(args)
        return _cmd_run(args)
    except BridgeError as exc:
        logger.error("%s", exc)
        return 2
    except KeyboardInterrupt:
        return 130
