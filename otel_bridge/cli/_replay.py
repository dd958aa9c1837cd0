"""`otel-bridge replay`: flags to the replay's settings, and the replay
(`otel_bridge.app.replay`: logs, shards, workers and the exit verdict are there)."""

from __future__ import annotations

import argparse
import logging
import os
import signal

from ..app import SigtermStops, signum_of
from ..app import replay as replay_logs
from ..export import sdk_disabled
from ._settings import replay_settings

__all__ = ["replay"]

logger = logging.getLogger("otel_bridge")


def replay(args: argparse.Namespace) -> int:
    """Exit status 0 when every log was read and exported, 1 when a log could not be read or
    was not a session log or an exporter failed (or its collector refused at the start).

    Ctrl-C or SIGTERM (`Interrupted`, 128 + the signal as exit status) stops the reading and
    the workers; what is queued is delivered for --export-timeout seconds. A SIGINT ignored
    at start (a script's background job) stays ignored: Python does not install its handler
    then, nor does this command."""
    with SigtermStops() as sigterm:
        try:
            settings = replay_settings(args, os.environ)
            if sdk_disabled(os.environ):
                logger.warning(
                    "OTEL_SDK_DISABLED=true: nothing is exported, no spans and no metrics "
                    "(files included); unset it to export"
                )
            return replay_logs(settings.pipeline, settings.replay, os.environ, sigterm)
        except KeyboardInterrupt as exc:  # before the reading began (it says so itself)
            if not sigterm.said:
                name = signal.Signals(signum_of(exc)).name
                logger.info("received %s; stopping", name)
            raise
