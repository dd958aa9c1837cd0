"""The command line's flags: the parser of every command and their help.

Only the command line reads flags and the process environment (the --content-hash-salt default
in `_options`, `os.environ` in the commands); the pipeline is built from what they give
(`otel_bridge._pipeline`).

`run` and `replay` group their options by what they are about (sources, checkpoints, export,
metrics, privacy, scale; the groups they share are in `_options`); help is laid out by
`_help.HelpFormatter`, and each subcommand's ends with examples. The options a flag can
contradict note when they are given (`_options.Given`), so that `_checks` can tell a flag
given from its default.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._version import __version__
from ..export._metrics import DEFAULT_PROMETHEUS_HOST, DEFAULT_PROMETHEUS_PORT
from ..export._sink import DEFAULT_QUEUE_SPANS
from ..feed._parallel import WORKERS_FROM_BYTES, usable_cores
from ..sources._shard import Shard, parse_shard
from ._help import NO_BREAK, HelpFormatter
from ._options import Given, background_wait, export, limits, metrics, paths, privacy, user_id
from ._types import (
    metrics_interval,
    non_negative_float,
    poll_interval,
    port,
    positive_float,
    positive_int,
)

__all__ = ["build_parser", "command_parser", "shard", "user_id"]

_LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]
_LOG_LEVEL_HELP = "what the bridge logs about itself, on stderr (default: INFO)"

_DESCRIPTION = """\
Turn GitHub Copilot CLI sessions into OpenTelemetry traces: one trace per user message, a span \
per agent turn, with the turn's LLM calls and tool calls (and sub-agents) below it.

Where spans go is set the standard OpenTelemetry way:
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318  send OTLP (HTTP/protobuf)
  OTEL_EXPORTER_OTLP_PROTOCOL=grpc                   ... or gRPC (port 4317)
  OTEL_TRACES_EXPORTER=otlp,console                  otlp, console or none
  OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES        the spans' resource
With nothing set, spans are printed to the console: a line per finished task on a terminal, \
one JSON object per span in a pipe (--console-format summary, tree or json to choose).
"""

_EPILOG = """\
examples:
  # follow ~/.copilot/session-state, print a line per finished task
  otel-bridge run
  # the same, sending spans to a collector on this machine
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 otel-bridge run
  # every past session once, to a file
  otel-bridge replay --traces-file traces.jsonl
  # a table of messages, turns, tools and tasks per session
  otel-bridge stats
  # what run would watch, and whether the collector answers
  otel-bridge doctor
"""

_RUN_EPILOG = """\
examples:
  # follow every session, the older ones read from their beginning first
  otel-bridge run --backfill
  # spans and metrics to a collector; OTEL_METRICS_EXPORTER=prometheus keeps the
  # metrics on /metrics only (a backend such as Jaeger takes no OTLP metrics)
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 otel-bridge run
  # with an endpoint set, each finished task's span tree on this terminal too
  otel-bridge run --console-format tree
"""

_REPLAY_EPILOG = """\
examples:
  # every session in $COPILOT_HOME/session-state, to a file
  otel-bridge replay --traces-file traces.jsonl
  # one session, to the collector of OTEL_EXPORTER_OTLP_ENDPOINT
  otel-bridge replay ~/.copilot/session-state/<session-id>
  # last month's logs in 4 worker processes
  otel-bridge replay /backup/session-state --jobs 4 --traces-file traces.jsonl
"""

_STATS_EPILOG = """\
examples:
  # the sessions in $COPILOT_HOME/session-state
  otel-bridge stats
  # one session, as JSON, its directory as a hash
  otel-bridge stats ~/.copilot/session-state/<session-id> --json --paths hash
"""

_DOCTOR_EPILOG = """\
examples:
  # the set-up of `otel-bridge run`, with the OTEL_* variables of this shell
  otel-bridge doctor
  # that of a run with other options: give doctor the same
  otel-bridge doctor --session-state /srv/copilot/session-state --prometheus-port 9465
"""

_SERVICE_EPILOG = """\
examples:
  # run at login, with the OTEL_* variables of this shell
  otel-bridge install-service
  # the same, reading every older session once at its first start
  otel-bridge install-service -- --backfill
  # only show the unit it would write
  otel-bridge install-service --print
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otel-bridge",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-level", default="INFO", choices=_LOG_LEVELS, help=_LOG_LEVEL_HELP)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _replay(commands)
    _run(commands)
    _stats(commands)
    _doctor(commands)
    _install_service(commands)
    return parser


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of one subcommand (for its own "usage: otel-bridge run ..." errors)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[command]
            return found
    raise KeyError(command)


def _command(
    commands: Any, name: str, *, summary: str, description: str, epilog: str
) -> argparse.ArgumentParser:
    sub: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=description, epilog=epilog, formatter_class=HelpFormatter
    )
    # Also after the command (`run --log-level DEBUG`); SUPPRESS: the one before the command
    # (or its default) stays unless this one is given.
    sub.add_argument(
        "--log-level", default=argparse.SUPPRESS, choices=_LOG_LEVELS, help=_LOG_LEVEL_HELP
    )
    return sub


# --- the commands ------------------------------------------------------------------------------


def _replay(commands: Any) -> None:
    replay = _command(
        commands,
        "replay",
        summary="export the spans of session logs once, then exit",
        description="Read session logs from start to end and export their spans with their "
        "original timestamps. Spans still open at the end of a log are closed at its last "
        "event and marked copilot.incomplete=true.\n\n"
        "Ctrl-C or SIGTERM stops reading and delivers the spans already queued for "
        "--export-timeout seconds (a second one quits at once). Started with Ctrl-C ignored "
        "(a script's background job), replay keeps ignoring it: stop it with SIGTERM.\n\n"
        "Exit status: 0 when every log was read and exported, 1 when a log could not be read, "
        "was not a Copilot session log (no line was an event) or an exporter failed, 2 for a "
        "bad path or option, 130 after Ctrl-C, 143 after SIGTERM.",
        epilog=_REPLAY_EPILOG,
    )
    paths(replay, "repeatable")
    sources = replay.add_argument_group("sources")
    background_wait(sources)
    sources.add_argument(
        "--no-progress",
        action="store_true",
        help="do not draw the progress bar (it is drawn only on a terminal)",
    )
    export(replay.add_argument_group("export"), "replay")
    metrics(replay.add_argument_group("metrics"), "replay")
    privacy(replay.add_argument_group("privacy"))
    scale = replay.add_argument_group("scale")
    cores = usable_cores()
    scale.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="read and assemble the logs in N worker processes (1: in this process, no "
        "workers); the spans, their order, the metrics and the summary are the same "
        f"whatever N (default: the usable CPU cores, {cores} here, for logs of "
        f"{WORKERS_FROM_BYTES >> 20} MiB or more in all; 1 below, where starting "
        "workers costs more than they save)",
    )
    scale.add_argument(
        "--shard",
        type=shard,
        metavar="I/N",
        help="replay only the sessions of shard I of N (I from 0 to N-1): those whose "
        "directory name (the session id) hashes to I. N replays given 0/N to N-1/N cover "
        "every session once (give each its own --traces-file); a log named on the command "
        "line outside the shard is skipped and said (default: every session)",
    )
    limits(scale, "replay")


def _run(commands: Any) -> None:
    run = _command(
        commands,
        "run",
        summary="follow session logs as they grow and export spans continuously",
        description="Watch session-state directories, follow every events.jsonl in them as it "
        "grows, pick up new sessions as they start, and export each interaction's spans when "
        "its agent loop ends.\n\n"
        "Stop with Ctrl-C or SIGTERM: finished spans are delivered first, for "
        "--export-timeout seconds (a second one quits at once). Started with Ctrl-C ignored "
        "(a script's background job), run keeps ignoring it: stop it with SIGTERM.",
        epilog=_RUN_EPILOG,
    )
    sources = run.add_argument_group("sources", "what run reads, and from where in each log")
    sources.add_argument(
        "--session-state",
        action="append",
        type=Path,
        metavar="DIR",
        help="a session-state directory to watch; repeatable (default: "
        "$COPILOT_HOME/session-state, COPILOT_HOME defaulting to ~/.copilot); a "
        "COPILOT_HOME given instead means its session-state directory",
    )
    sources.add_argument(
        "--catch-up-minutes",
        action=Given,
        type=non_negative_float,
        default=60.0,
        metavar="M",
        help="at start, read logs modified in the last M minutes from their beginning; "
        "older ones are followed from their end (default: 60)",
    )
    sources.add_argument(
        "--backfill",
        action="store_true",
        help="at start, read every log from its beginning, however old: those without a "
        "checkpoint, and those an earlier run only followed from their end and never read "
        "since (a log resumed from a checkpoint past what it read is not read again: "
        "otel-bridge replay does that)",
    )
    sources.add_argument(
        "--idle-timeout",
        type=non_negative_float,
        default=900.0,
        metavar="S",
        help="close an interaction whose log has been quiet for S seconds (default: 900; "
        "logs never say when an agent stopped for good)",
    )
    background_wait(sources)
    sources.add_argument(
        "--no-progress",
        action="store_true",
        help="do not draw the progress bar of the catch-up at start (drawn only on a terminal)",
    )
    checkpoints = run.add_argument_group(
        "checkpoints", "where each log resumes after a restart or a crash"
    )
    checkpoints.add_argument(
        "--state-dir",
        action=Given,
        type=Path,
        metavar="DIR",
        help="where run keeps its checkpoints (resume points of every log), so that a "
        "restart neither loses nor repeats spans (default: $OTEL_BRIDGE_STATE_DIR, else "
        "$XDG_STATE_HOME/otel-bridge, else ~/.local/state/otel-bridge)",
    )
    checkpoints.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="keep no checkpoints: every start is a first start",
    )
    spans = run.add_argument_group("export", "where spans go, besides the OTEL_* variables")
    export(spans, "run")
    spans.add_argument(
        "--queue-size",
        type=positive_int,
        default=DEFAULT_QUEUE_SPANS,
        metavar="N",
        help="spans kept per exporter while its collector is down or slow; while a queue "
        f"is half full, logs are not read (they wait on disk) (default: {DEFAULT_QUEUE_SPANS})",
    )
    probes = run.add_argument_group(
        "metrics and probes", "Prometheus /metrics, /healthz and /readyz share one port"
    )
    probes.add_argument(
        "--prometheus-host",
        action=Given,
        default=DEFAULT_PROMETHEUS_HOST,
        metavar="ADDR",
        help="address of the /metrics, /healthz and /readyz endpoint (default: "
        f"{DEFAULT_PROMETHEUS_HOST}; 0.0.0.0 exposes it to the network)",
    )
    probes.add_argument(
        "--prometheus-port",
        action=Given,
        type=port,
        default=DEFAULT_PROMETHEUS_PORT,
        metavar="PORT",
        help=f"its port (default: {DEFAULT_PROMETHEUS_PORT}; 0 picks a free one)",
    )
    probes.add_argument(
        "--no-prometheus",
        action="store_true",
        help="serve no port: no Prometheus metrics, no /healthz nor /readyz",
    )
    metrics(probes, "run")
    probes.add_argument(
        "--metrics-interval",
        action=Given,
        type=metrics_interval,
        default=60.0,
        metavar="S",
        help="how often OTLP, console and file metrics are exported (Prometheus scrapes when "
        "it likes) (default: 60)",
    )
    probes.add_argument(
        "--unready-after",
        action=Given,
        type=positive_float,
        default=60.0,
        metavar="S",
        help="/readyz says not ready once an exporter has failed this long on a batch "
        "(default: 60); also not ready while logs are caught up",
    )
    probes.add_argument(
        "--stuck-after",
        action=Given,
        type=positive_float,
        default=120.0,
        metavar="S",
        help="/healthz answers 503 once the main loop has neither finished a poll nor read a "
        "log for this long, beyond --poll-interval (default: 120)",
    )
    probes.add_argument(
        "--status-interval",
        type=non_negative_float,
        default=300.0,
        metavar="S",
        help="log a one-line status this often (default: 300; 0: never)",
    )
    privacy(run.add_argument_group("privacy"))
    scale = run.add_argument_group("scale", "many sessions, many replicas, hostile files")
    scale.add_argument(
        "--shard",
        type=shard,
        metavar="I/N",
        help="follow only the sessions of shard I of N (I from 0 to N-1): those whose "
        "directory name (the session id) hashes to I, so that N replicas given 0/N to "
        "N-1/N share one session-state directory without overlap or gap. Each replica "
        "needs its own --state-dir (default: every session)",
    )
    scale.add_argument(
        "--poll-interval",
        type=poll_interval,
        default=0.5,
        metavar="S",
        help="longest wait between checks for new lines, in seconds; file system "
        "notifications usually wake it sooner (default: 0.5)",
    )
    scale.add_argument(
        "--rescan-interval",
        type=positive_float,
        default=5.0,
        metavar="S",
        help="look at every directory and file at least this often, in case a notification "
        "was lost (default: 5)",
    )
    limits(scale, "run")


def _stats(commands: Any) -> None:
    stats = _command(
        commands,
        "stats",
        summary="print a table of what the sessions in some logs did",
        description="Read session logs and print, per session and in total: when it started, "
        "its model, directory and repository (owner/name, - outside a git checkout), user "
        "messages, turns, main-agent turns per message, tool calls and failures, tasks by "
        "how they ended (done: no completion signal, the way of interactive mode; completed, "
        "failed, error, aborted, unfinished), tokens (n/a when the CLI wrote no usage records), "
        f'premium requests and lines added/removed ("premium{NO_BREAK}req", '
        f'"lines{NO_BREAK}+/-": what the session\'s shutdowns report, once across resumes; '
        f"n/a{NO_BREAK}(BYOK) for bring-your-own-key calls only). The numbers are the same the "
        "metrics export.\n\n"
        "The table fits the terminal ($COLUMNS or its width; to a pipe or file it is printed "
        "whole). When narrow, the session id is cut to 8 characters and tokens shortened "
        "(12k); then the outcome columns become one (ok/tasks: done or completed, of all); then "
        "the repository is dropped; then messages, turns per message, premium requests and "
        "lines are dropped and the start shows its date only; then long model and directory "
        "names are shortened (g-4.1-mini). --json has everything.",
        epilog=_STATS_EPILOG,
    )
    paths(stats, "repeatable")
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
        help="the directory a session ran in: the whole path, its last part, or a hash of it "
        "as spans carry with --paths hash (default: basename)",
    )


def _doctor(commands: Any) -> None:
    doctor = _command(
        commands,
        "doctor",
        summary="check what run would watch and whether the exporters are reachable",
        description="Say which session-state directories run would watch and what is in them "
        "(and which logs it could not read), whether its port is free and its state "
        "directory usable, which exporters the environment selects, and whether each OTLP "
        "endpoint takes what run would send it (an empty export is sent). Give it the "
        "options you give run. Exit status 0 when all is well, 1 otherwise.",
        epilog=_DOCTOR_EPILOG,
    )
    doctor.add_argument(
        "--session-state",
        action="append",
        type=Path,
        metavar="DIR",
        help="as for run (default: $COPILOT_HOME/session-state)",
    )
    doctor.add_argument("--traces-file", type=Path, metavar="FILE", help="as for run")
    doctor.add_argument("--state-dir", action=Given, type=Path, metavar="DIR", help="as for run")
    doctor.add_argument(
        "--no-checkpoints", action="store_true", help="as for run: no state directory to check"
    )
    doctor.add_argument(
        "--prometheus-host",
        action=Given,
        default=DEFAULT_PROMETHEUS_HOST,
        metavar="ADDR",
        help="as for run",
    )
    doctor.add_argument(
        "--prometheus-port",
        action=Given,
        type=port,
        default=DEFAULT_PROMETHEUS_PORT,
        metavar="PORT",
        help="as for run",
    )
    doctor.add_argument("--no-prometheus", action="store_true", help="as for run: no port to check")


def _install_service(commands: Any) -> None:
    service = _command(
        commands,
        "install-service",
        summary="start `run` at login: a systemd user unit (Linux) or a launchd agent (macOS)",
        description="Write a systemd user unit (Linux) or a launchd agent (macOS) that runs "
        "`otel-bridge run` at login with this executable, and print the command that "
        "enables it.\n\n"
        "  systemd: ~/.config/systemd/user/otel-bridge.service; state in "
        "$XDG_STATE_HOME/otel-bridge (~/.local/state/otel-bridge), log in the journal "
        "(journalctl --user -u otel-bridge)\n"
        "  launchd: ~/Library/LaunchAgents/local.otel-bridge.plist; state in "
        "~/Library/Application Support/otel-bridge, log in ~/Library/Logs/otel-bridge/\n\n"
        "The OTEL_* variables and COPILOT_HOME of this shell are copied into it. Arguments "
        "after -- go to run, and are checked as run checks them.",
        epilog=_SERVICE_EPILOG,
    )
    service.add_argument(
        "run_args",
        nargs="*",
        metavar="RUN_ARG",
        help="arguments for run, after -- (default: none beyond --state-dir, and "
        "--console-format summary when spans go to the console)",
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


def shard(text: str) -> Shard:
    """--shard I/N, or what was expected: "argument --shard: '3/3' is not a shard: ..."."""
    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shard: {exc}") from exc
