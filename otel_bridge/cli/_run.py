"""`otel-bridge run`: flags to the daemon's settings, the signal handlers, and the daemon
(`otel_bridge.app.Daemon`: checkpoints, probes, the status line and the stop are there)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
from types import FrameType

from ..app import Daemon
from ..export import sdk_disabled
from ._settings import run_settings

__all__ = ["run"]

logger = logging.getLogger("otel_bridge")


def run(args: argparse.Namespace) -> int:
    """Follow the logs until a signal (SIGINT, SIGTERM or SIGHUP: each stops it cleanly);
    exit status 0, or 128 + the signal after a second one (130 after two Ctrl-C)."""
    settings = run_settings(args, os.environ)
    if sdk_disabled(os.environ):  # checkpoints stay put: what was read now is exported then
        logger.warning(
            "OTEL_SDK_DISABLED=true: nothing is exported, no spans and no metrics "
            "(files included), and checkpoints are left where they are; unset it "
            "to export"
        )
    signals: list[int] = []

    def _stop(signum: int, _frame: FrameType | None) -> None:
        # Only a list append: a handler that took a lock (Event.set, logging) could deadlock
        # with the very code it interrupted, which may hold that lock.
        signals.append(signum)

    # Python leaves SIGINT ignored when it was at start (the signal module's documentation:
    # SIGINT becomes KeyboardInterrupt "if the parent process has not changed it"): a
    # script's background job, which POSIX shells start with SIGINT ignored so that the
    # terminal's Ctrl-C leaves it running. Kept so: such a run stops on SIGTERM.
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    # SIGHUP (the terminal closed, or a service manager's `reload`) killed run on the spot,
    # by default: nothing delivered, no checkpoint saved, every span of the last interval
    # sent again at the next start. It stops run as SIGTERM does (the daemon says that a
    # changed config needs a restart: reading it again in place is not done, since most
    # options shape state already built). Ignored at start (`nohup`), it stays ignored, as
    # SIGINT does: whoever started run so asked for it to outlive the terminal.
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
        signal.signal(hangup, _stop)
    # Built after the handlers: a SIGTERM while it takes the state lock and reads the
    # checkpoints waits in `signals` for the daemon's first look, instead of killing run
    # with the lock held and nothing said.
    daemon = Daemon(settings.pipeline, settings.daemon, os.environ)
    return daemon.run(signals)
