"""A stop asked for by a signal, as replay takes it: SIGTERM raised as Ctrl-C's
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
    """Within the block, SIGTERM stops the command as Ctrl-C does (`Interrupted`, raised in
    the main thread); the handler there before is put back after.

    A worker process forked meanwhile inherits the handler (fork copies the interpreter's
    handler table): there it ends the worker as the default disposition does, silently,
    since a worker is ended by SIGTERM (`feed._parallel`) and its parent tells the story.
    """

    def __init__(self) -> None:
        self.received = False
        self.said = False  # the command said it is stopping
        self._previous: Any = None

    def __enter__(self) -> SigtermStops:
        owner = os.getpid()

        def interrupt(signum: int, _frame: object) -> None:
            if os.getpid() != owner:  # a forked worker: die of it, as by default
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            self.received = True
            raise Interrupted(signum)

        self._previous = signal.signal(signal.SIGTERM, interrupt)
        return self

    def __exit__(self, *_: object) -> None:
        signal.signal(signal.SIGTERM, self._previous)
