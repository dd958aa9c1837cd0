"""The command line's flags: the parser of every command and their help.

Only the command line reads flags and the process environment (the --content-hash-salt default
in `_options`, `os.environ` in the commands); the pipeline is built from what they give
(`otel_bridge.app._pipeline`).

`run` and `replay` group their options by what they are about (sources, checkpoints, export,
metrics, privacy, scale; the groups they share are in `_options`); help is laid out by
`_help.HelpFormatter`, and each subcommand's ends with examples. The options a flag can
contradict note when they are given (`_options.Given`), so that `_checks` can tell a flag
given from its default.
"""

from __future__ import annotations

import argparse
from typing import Any

from .._version import __version__
from ..export import DEFAULT_PROMETHEUS_HOST, DEFAULT_PROMETHEUS_PORT, trace_exporter_choices
from ..feed import WORKERS_FROM_BYTES, usable_cores
from ..sources import Shard, parse_shard
from . import _run_flags as run_flags
from . import _texts as texts
from ._errors import Parser
from ._help import NO_BREAK, HelpFormatter
from ._options import Given, background_wait, export, limits, metrics, paths, privacy, user_id
from ._types import path, port, positive_int

__all__ = ["build_parser", "command_parser", "shard", "user_id"]

_LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]
_LOG_LEVEL_HELP = "what the bridge logs about itself, on stderr (default: INFO)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="otel-bridge",
        description=texts.DESCRIPTION.format(exporters=trace_exporter_choices()),
        epilog=texts.EPILOG,
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
    if name in ("run", "replay"):
        sub.add_argument(
            "--config",
            type=path,
            metavar="FILE",
            help="read options from this TOML file: each key a long flag without its dashes "
            '(catch-up-minutes = 30, no-prometheus = true, session-state = ["/srv/a"]), '
            f"at the top or in a [{name}] table; flags given override it, the OTEL_* "
            "variables apply as always (docs/configuration.md lists every key)",
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
        epilog=texts.REPLAY_EPILOG,
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
        description=texts.RUN_DESCRIPTION,
        epilog=texts.RUN_EPILOG,
    )
    run_flags.sources(run)
    run_flags.checkpoints(run)
    run_flags.export_group(run)
    run_flags.probes(run)
    run_flags.trouble(run)
    privacy(run.add_argument_group("privacy"))
    run_flags.scale(run, shard)


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
        "the repository is dropped; then messages, premium requests and lines are dropped, "
        "the start shows its date only and one space parts the columns (turns per message "
        "stays, as t/msg); then long model and directory names are shortened (g-4.1-mini). "
        "Tasks that raised a trouble signal (a tool called again and again, many turns...) "
        "are counted under the table, by session. --json has everything.",
        epilog=texts.STATS_EPILOG,
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
        epilog=texts.DOCTOR_EPILOG,
    )
    doctor.add_argument(
        "--config",
        type=path,
        metavar="FILE",
        help="as for run: run's configuration file, of which doctor takes the options it has "
        "(those below)",
    )
    doctor.add_argument(
        "--session-state",
        action="append",
        type=path,
        metavar="DIR",
        help="as for run (default: $COPILOT_HOME/session-state)",
    )
    doctor.add_argument("--traces-file", type=path, metavar="FILE", help="as for run")
    doctor.add_argument("--state-dir", action=Given, type=path, metavar="DIR", help="as for run")
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
        epilog=texts.SERVICE_EPILOG,
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
