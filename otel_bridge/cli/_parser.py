"""The command line's flags: the parser of every command and their help.

Only the command line reads flags and the process environment (the --content-hash-salt default
here, `os.environ` in the commands); the pipeline is built from what they give
(`otel_bridge._pipeline`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .._lines import DEFAULT_MAX_LINE_BYTES
from .._version import __version__
from ..export._console import CONSOLE_FORMATS
from ..export._metrics import DEFAULT_PROMETHEUS_HOST, DEFAULT_PROMETHEUS_PORT
from ..export._sink import DEFAULT_QUEUE_SPANS
from ..semconv import SEMCONV_MODES, SEMCONV_RELEASED
from ..sources._discovery import DEFAULT_MAX_LOG_BYTES
from ..sources._parallel import WORKERS_FROM_BYTES, usable_cores
from ..sources._shard import Shard, parse_shard
from ._common import CONTENT_ENV
from ._types import (
    metric_labels,
    metrics_interval,
    non_negative_float,
    poll_interval,
    port,
    positive_float,
    positive_int,
    ratio,
)

__all__ = ["build_parser", "shard"]

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


def build_parser() -> argparse.ArgumentParser:
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
        f"error messages) on spans; also on with {CONTENT_ENV}=true. Off "
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
        type=positive_int,
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
        "--user",
        default=None,
        metavar="os|ID",
        help="put enduser.id on the resource of every span and metric: the name of the OS "
        "user running the bridge (os) or the ID given. Off by default: it is personal data "
        "(docs/attribution.md)",
    )
    common.add_argument(
        "--metric-labels",
        type=metric_labels,
        default=(),
        metavar="LIST",
        help="also label the metrics that carry the repository (tokens, latency, cost, code "
        "changes, tasks) by "
        "these, comma-separated: branch, host (the repository's), provider, client (github/cli, "
        "sdk). Each multiplies the series (docs/metrics.md); paths, commits and session ids "
        "are never labels (default: none)",
    )
    common.add_argument(
        "--semconv",
        choices=list(SEMCONV_MODES),
        default=SEMCONV_RELEASED,
        help="GenAI names: those of the semantic-conventions-genai repository (released), "
        "those of semantic-conventions 1.41.0 (previous: gen_ai.client.token.usage, "
        "gen_ai.client.operation.duration...), or both, for dashboards built on the previous "
        'ones (docs/metrics.md, "Convention version"; default: released)',
    )
    common.add_argument(
        "--sample-ratio",
        type=ratio,
        default=1.0,
        metavar="R",
        help="export R (0 to 1) of the traces that went well; every trace with "
        "an error, an abort, a failed tool or a failed task is kept, and "
        "metrics count everything (default: 1)",
    )
    common.add_argument(
        "--export-timeout",
        type=non_negative_float,
        default=30.0,
        metavar="S",
        help="at exit, how long to keep trying to deliver queued spans (default: 30)",
    )
    common.add_argument(
        "--background-wait",
        type=non_negative_float,
        default=900.0,
        metavar="S",
        help="how long a task whose agent loop has stopped waits for the work it left "
        "running (background shells and sub-agents) to report, counted from its last "
        "event; past that it ends at its last event (default: 900; give run and "
        "replay the same value to get the same spans)",
    )
    common.add_argument(
        "--max-line-bytes",
        type=positive_int,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"skip (and count) log lines longer than N bytes (default: {DEFAULT_MAX_LINE_BYTES})",
    )
    common.add_argument(
        "--max-log-bytes",
        type=positive_int,
        default=DEFAULT_MAX_LOG_BYTES,
        metavar="N",
        help="do not read a log larger than N bytes, far above what the CLI writes: a sparse "
        "or runaway file that would never be read to its end (said once; run counts it in "
        f"otel_bridge.files.skipped) (default: {DEFAULT_MAX_LOG_BYTES})",
    )
    common.add_argument(
        "--console-format",
        choices=CONSOLE_FORMATS,
        default=None,
        help="how spans going to the console are printed: summary (a line per "
        "finished task: how it ended, tools, tokens, duration, model), "
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
    cores = usable_cores()
    replay.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="read and assemble the logs in N worker processes (1: in this process, no "
        "workers); the spans, their order, the metrics and the summary are the same "
        f"whatever N (default: the usable CPU cores, {cores} here, for logs of "
        f"{WORKERS_FROM_BYTES >> 20} MiB or more in all; 1 below, where starting "
        "workers costs more than they save)",
    )
    replay.add_argument(
        "--shard",
        type=shard,
        metavar="I/N",
        help="replay only the sessions of shard I of N (I from 0 to N-1): those whose "
        "directory name (the session id) hashes to I. N replays given 0/N to N-1/N cover "
        "every session once (give each its own --traces-file); a log named on the command "
        "line outside the shard is skipped and said (default: every session)",
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
        "--shard",
        type=shard,
        metavar="I/N",
        help="follow only the sessions of shard I of N (I from 0 to N-1): those whose "
        "directory name (the session id) hashes to I, so that N replicas given 0/N to "
        "N-1/N share one session-state directory without overlap or gap. Each replica "
        "needs its own --state-dir (default: every session)",
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
        type=non_negative_float,
        default=60.0,
        metavar="M",
        help="at start, read logs modified in the last M minutes from their "
        "beginning; older ones are followed from their end (default: 60)",
    )
    run.add_argument(
        "--idle-timeout",
        type=non_negative_float,
        default=900.0,
        metavar="S",
        help="close an interaction whose log has been quiet for S seconds "
        "(default: 900; logs never say when an agent stopped for good)",
    )
    run.add_argument(
        "--poll-interval",
        type=poll_interval,
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
        type=port,
        default=DEFAULT_PROMETHEUS_PORT,
        metavar="PORT",
        help="port of the Prometheus endpoint (default: "
        f"{DEFAULT_PROMETHEUS_PORT}; 0 picks a free one)",
    )
    run.add_argument("--no-prometheus", action="store_true", help="do not serve Prometheus metrics")
    run.add_argument(
        "--metrics-interval",
        type=metrics_interval,
        default=60.0,
        metavar="S",
        help="how often OTLP, console and file metrics are exported (default: 60)",
    )
    run.add_argument(
        "--queue-size",
        type=positive_int,
        default=DEFAULT_QUEUE_SPANS,
        metavar="N",
        help="spans kept per exporter while its collector is down or "
        "slow; while a queue is half full, logs are not read (they wait on disk) "
        f"(default: {DEFAULT_QUEUE_SPANS})",
    )
    run.add_argument(
        "--unready-after",
        type=positive_float,
        default=60.0,
        metavar="S",
        help="/readyz says not ready once an exporter has failed this long on a "
        "batch (default: 60); also not ready while logs are caught up",
    )
    run.add_argument(
        "--stuck-after",
        type=positive_float,
        default=120.0,
        metavar="S",
        help="/healthz answers 503 once the main loop has neither finished a poll nor "
        "read a log for this long, beyond --poll-interval (default: 120)",
    )
    run.add_argument(
        "--status-interval",
        type=non_negative_float,
        default=300.0,
        metavar="S",
        help="log a one-line status this often (default: 300; 0: never)",
    )
    run.add_argument(
        "--rescan-interval",
        type=positive_float,
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
        "its model,\ndirectory and repository (owner/name, - outside a git checkout), "
        "user messages, turns,\nmain-agent turns per message, tool calls and failures, "
        "tasks by how they ended (done:\nno completion signal, the way of interactive "
        "mode; completed, failed, error, aborted,\nunfinished), tokens (n/a when the "
        'CLI wrote no usage records), premium requests and\nlines added/removed ("premium '
        'req", "lines +/-": what the session\'s shutdowns report,\nonce across '
        "resumes; n/a (BYOK) for bring-your-own-key calls only). The numbers are the\n"
        "same the metrics export.\n\nThe table fits the terminal ($COLUMNS "
        "or its width; to a pipe or file it is printed whole).\nWhen narrow, the "
        "session id is cut to 8 characters and tokens shortened (12k); then the\n"
        "outcome columns become one (ok/tasks: done or completed, of all); then the "
        "repository is\ndropped; then messages, turns per message, premium requests "
        "and lines are dropped and the\nstart shows its date only; then long model and "
        "directory names are shortened (g-4.1-mini).\n--json has everything.",
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

    service = commands.add_parser(
        "install-service",
        parents=[logging_options],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="start `run` at login: a systemd user unit (Linux) or a launchd agent (macOS)",
        description="Write a systemd user unit (Linux) or a launchd agent (macOS) that runs "
        "`otel-bridge run` at\nlogin with this executable, and print the command that "
        "enables it.\n\n"
        "  systemd: ~/.config/systemd/user/otel-bridge.service; state in "
        "$XDG_STATE_HOME/otel-bridge\n"
        "           (~/.local/state/otel-bridge), log in the journal "
        "(journalctl --user -u otel-bridge)\n"
        "  launchd: ~/Library/LaunchAgents/local.otel-bridge.plist; state in\n"
        "           ~/Library/Application Support/otel-bridge, log in "
        "~/Library/Logs/otel-bridge/\n\n"
        "The OTEL_* variables and COPILOT_HOME of this shell are copied into it. Arguments "
        "after --\ngo to run:  otel-bridge install-service -- --backfill",
    )
    service.add_argument(
        "run_args",
        nargs="*",
        metavar="RUN_ARG",
        help="arguments for run, after -- (default: none beyond --state-dir and "
        "--console-format summary)",
    )
    service.add_argument(
        "--print",
        action="store_true",
        help="print the unit or plist instead of writing it",
    )
    service.add_argument(
        "--force", action="store_true", help="overwrite a unit or plist that differs"
    )
    service.add_argument(
        "--platform",
        choices=["systemd", "launchd"],
        help="the service manager (default: systemd on Linux, launchd on macOS)",
    )
    return parser


def shard(text: str) -> Shard:
    """--shard I/N, or what was expected: "argument --shard: '3/3' is not a shard: ..."."""
    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shard: {exc}") from exc
