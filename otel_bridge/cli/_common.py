"""What the commands share: where the sessions are, the signal stop, and the summaries they
log (flags become pipeline options in `_settings`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from .. import _env as env
from .._exceptions import ConfigError
from ..app import Interrupted, SigtermStops, destinations, sampled, summarize_reading
from ..sources import (
    EVENTS_FILE,
    default_session_state,
)

__all__ = [
    "CONTENT_ENV",
    "Interrupted",
    "SigtermStops",
    "destinations",
    "log_paths",
    "sampled",
    "session_state_roots",
    "summarize_reading",
]

logger = logging.getLogger("otel_bridge")

#: The GenAI conventions' switch for content capture, read beside --capture-content.
CONTENT_ENV = env.OTEL_CAPTURE_MESSAGE_CONTENT


def session_state_roots(
    given: Sequence[Path] | None, environ: Mapping[str, str], *, say: bool = True
) -> list[tuple[Path, Path]]:
    """The session-state directories to watch, each with what was given for it: the
    `--session-state` values, else $COPILOT_HOME/session-state.

    A directory given that holds no session but a `session-state` directory is a
    COPILOT_HOME given for its session-state directory (`--session-state ~/.copilot`):
    that one is watched, and said once (`say`), as `replay ~/.copilot` reads it. Watched as
    given, it would have followed no log, and taken the CLI's other directories (logs,
    pkg...) for sessions that have not written their log yet.
    """
    roots = []
    for root in given or [default_session_state(dict(environ))]:
        inner = root / "session-state"
        if _is_dir(inner) and not _holds_sessions(root):
            if say:
                logger.info(
                    "%s holds no session log but a session-state directory: watching %s",
                    root,
                    inner,
                )
            roots.append((inner, root))
        else:
            roots.append((root, root))
    return roots


def _is_dir(path: Path) -> bool:
    """`path.is_dir()`, False where it cannot be looked at (a root the bridge's user cannot
    read raised PermissionError here and stopped `run`; the tailer says why, /readyz too)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def log_paths(given: Sequence[Path], environ: Mapping[str, str]) -> list[Path]:
    """The PATHs of replay and stats: those given, else $COPILOT_HOME/session-state, as run
    watches.

    Raises:
        ConfigError: none given, and that directory does not exist.
    """
    if given:
        return list(given)
    default = default_session_state(dict(environ))
    if not default.is_dir():
        raise ConfigError(
            f"{default}: no such directory (the default PATH, $COPILOT_HOME/session-state, "
            "COPILOT_HOME defaulting to ~/.copilot): has the Copilot CLI run as this user? "
            "Give the PATH of a log, a session or a session-state directory"
        )
    return [default]


def _holds_sessions(root: Path) -> bool:
    """Whether some directory in `root` holds a session log."""
    try:
        return any((entry / EVENTS_FILE).is_file() for entry in root.iterdir())
    except OSError:
        return False
