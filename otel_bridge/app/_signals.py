"""A stop asked for by a signal, as replay takes it: SIGTERM (or SIGHUP) raised as Ctrl-C's
KeyboardInterrupt, with the signal's number for the exit status."""

from __future__ import annotations

import os
import signal
from typing import Any

__all__ = ["Interrupted", "SigtermStops"]


class Interrupted(KeyboardInterrupt):
    """A stop asked for by a signal (Ctrl-C's SIGINT, or SIGTERM): the exit status is
    128 + `signum`, as a shell reports a process the signal ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class SigtermStops:
    """Within the block, SIGTERM and SIGHUP stop the command as Ctrl-C does (`Interrupted`,
    raised in the main thread); the handlers there before are put back after. SIGHUP (the
    terminal closed) ended a replay at once, by default, with nothing queued delivered; one
    ignored at start (`nohup`) stays ignored, as SIGINT does: so asked, the command outlives
    its terminal.

    A worker process forked meanwhile inherits the handler (fork copies the interpreter's
    handler table): there it ends the worker as the default disposition does, silently,
    since a worker is ended by SIGTERM (`feed._parallel`) and its parent tells the story.
    """

    def __init__(self) -> None:
        self.received: int | None = None  # the signal that came, if one did
        self.said = False  # the command said it is stopping
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SigtermStops:
        owner = os.getpid()

        def interrupt(signum: int, _frame: object) -> None:
            if os.getpid() != owner:  # a forked worker: die of it, as by default
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            self.received = signum
            raise Interrupted(signum)

        self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, interrupt)
        hangup = getattr(signal, "SIGHUP", None)  # none on Windows
        if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
            self._previous[hangup] = signal.signal(hangup, interrupt)
        return self

    def __exit__(self, *_: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
