"""The `otel-bridge` command: `replay` session logs once, `run` as a daemon that follows them,
`stats` and `doctor`; `install-service` makes `run` a systemd or launchd service.

The command line is the one part of the bridge that reads flags and the process environment:
parse (`_parser.py`), then a `--config` file under the flags (`_config_file.py`,
`_settings.apply_config`), then the checks of contradicting options (`_checks.py`), then the
settings each command's application takes (`_settings.py`: a `PipelineConfig` and the
`DaemonOptions` or `ReplayOptions` of `otel_bridge.app`), then the application.

Modules: `_parser.py`, `_run_flags.py`, `_options.py`, `_types.py`, `_texts.py`, `_help.py`
(flags and help), `_config_file.py` and `_settings.py` (the file and the settings),
`_errors.py` (one-line errors: a misspelt flag, a path that cannot be used), `_replay.py` and
`_run.py` (signals around the application), `_inspect.py` (stats and
doctor), `_service.py` (install-service).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import _env as env
from .._exceptions import BridgeError
from .._progress import TerminalHandler, printable
from ..export import CredentialFilter
from ._checks import contradiction
from ._common import Interrupted
from ._config_file import ConfigFileError
from ._parser import build_parser, command_parser

__all__ = ["OneLineFormatter", "main"]

logger = logging.getLogger("otel_bridge")

#: Each command's module and function, imported when the command runs: a command pays at
#: start-up only for what it uses (`replay` never loads the daemon, doctor or the service
#: writer).
_COMMANDS: dict[str, tuple[str, str]] = {
    "replay": ("._replay", "replay"),
    "run": ("._run", "run"),
    "stats": ("._inspect", "stats"),
    "doctor": ("._inspect", "doctor"),
    "install-service": ("._service", "install_service"),
}


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    module, function = _COMMANDS[name]
    command: Callable[[argparse.Namespace], int] = getattr(
        importlib.import_module(module, __name__), function
    )
    return command


class OneLineFormatter(logging.Formatter):
    """Every record on one line, whatever its arguments hold: a session directory, a branch
    or an exception's text can come from a file another user wrote, and a newline in it
    would forge a log line, an escape sequence clear or recolour the screen. Control
    characters are written as escapes (`printable`); a traceback (DEBUG) keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:
        return printable(super().formatException(ei), newlines=True)

    def formatStack(self, stack_info: str) -> str:
        return printable(super().formatStack(stack_info), newlines=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "config", None) is not None:
        sub = command_parser(parser, args.command)
        from ._settings import apply_config

        try:
            apply_config(parser, sub, args, sys.argv[1:] if argv is None else argv)
        except ConfigFileError as exc:
            if args.command != "doctor":  # one line naming the file: no usage
                sub.exit(2, f"{sub.prog}: error: {exc}\n")
            args.config_problem = str(exc)  # doctor says it among its checks
    # Through the progress bar's terminal: a record never lands on the bar's line.
    handler = TerminalHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # On the handler, not a logger: the SDK's, gRPC's and urllib3's records propagate to it
    # from loggers of their own, and quote the endpoint with its password or key.
    handler.addFilter(CredentialFilter())
    logging.basicConfig(level=args.log_level, handlers=[handler])
    for line in env.boolean_warnings(os.environ):  # `OTEL_SDK_DISABLED=yes` is not silent
        logger.warning("%s", line)
    if args.command is None:
        parser.print_help()
        return 2
    problem = contradiction(args, os.environ)
    if problem is not None:
        command_parser(parser, args.command).error(problem)  # exit status 2
    try:
        return _command(args.command)(args)
    except BridgeError as exc:
        logger.error("%s", exc)
        return 2
    except KeyboardInterrupt as exc:  # 130 after Ctrl-C, 143 after SIGTERM (replay)
        return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
