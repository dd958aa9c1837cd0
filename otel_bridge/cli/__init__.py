"""The `otel-bridge` command: `replay` session logs once, `run` as a daemon that follows them,
`stats` and `doctor`; `install-service` makes `run` a systemd or launchd service.

The command line is the one part of the bridge that reads flags and the process environment.
Each command turns them into a `PipelineConfig` and builds the one pipeline
(`otel_bridge._pipeline`); `LiveBridge` builds the same one from its arguments.

Modules: `_parser.py` (flags and help), `_types.py` (option types), `_common.py` (flags to
pipeline options, summaries), `_replay.py`, `_run.py` (the daemon loop, status line,
readiness, signals), `_inspect.py` (stats and doctor), `_service.py` (install-service).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from .._exceptions import BridgeError
from .._progress import TerminalHandler
from ._inspect import doctor, stats
from ._parser import build_parser
from ._replay import replay
from ._run import run
from ._service import install_service

__all__ = ["main"]

logger = logging.getLogger("otel_bridge")

_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "replay": replay,
    "run": run,
    "stats": stats,
    "doctor": doctor,
    "install-service": install_service,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
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
        return _COMMANDS[args.command](args)
    except BridgeError as exc:
        logger.error("%s", exc)
        return 2
    except KeyboardInterrupt:
        return 130
