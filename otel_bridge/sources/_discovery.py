"""Finding session logs: a file, a session directory, or a whole session-state directory.

The CLI keeps `$COPILOT_HOME/session-state/<sessionId>/events.jsonl`; the directory name is the
session id, which is how a log whose `session.start` was lost (or that is read from its middle)
still gets the right `gen_ai.conversation.id` and the same span ids.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._exceptions import ConfigError

__all__ = ["EVENTS_FILE", "LogFile", "default_session_state", "find_logs", "scan_session_state"]

EVENTS_FILE = "events.jsonl"

logger = logging.getLogger(__name__)
_REPORTED_LINKS: set[Path] = set()  # warned about once


@dataclass(frozen=True, slots=True)
class LogFile:
    """One session log and the session id its place implies."""

    path: Path
    session_hint: str


def default_session_state(environ: dict[str, str] | os._Environ[str]) -> Path:
    """`$COPILOT_HOME/session-state`, COPILOT_HOME defaulting to ~/.copilot as the CLI does."""
    home = environ.get("COPILOT_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".copilot"
    return base / "session-state"


def log_file(path: Path) -> LogFile:
    """A log at `path`; its directory name is the session hint."""
    return LogFile(path, path.parent.name or path.stem)


def scan_session_state(root: Path) -> list[LogFile]:
    """Every `<session>/events.jsonl` directly under `root`, sorted by path; [] if none.

    Lock and other dot-directories are skipped; so are entries that vanish while scanning, and
    symbolic links that lead out of `root`: the daemon reads only the tree it was pointed at,
    whatever a session directory contains.
    """
    found: list[LogFile] = []
    try:
        entries = list(os.scandir(root))
        real_root = root.resolve()
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        candidate = Path(entry.path) / EVENTS_FILE
        try:
            inside = candidate.resolve().is_relative_to(real_root)
        except OSError:
            continue
        if not inside:
            if candidate not in _REPORTED_LINKS:
                _REPORTED_LINKS.add(candidate)
                logger.warning("not following %s: it links outside %s", candidate, root)
            continue
        if candidate.is_file():
            found.append(log_file(candidate))
    return sorted(found, key=lambda f: str(f.path))


def find_logs(paths: Sequence[Path]) -> list[LogFile]:
    """Resolve what the user named to session logs, in the order given.

    Raises:
        ConfigError: a path does not exist, or holds no session log; the message says what
            each kind of path should look like.
    """
    logs: list[LogFile] = []
    for path in paths:
        logs.extend(_find_one(path))
    return list(_unique(logs))


def _find_one(path: Path) -> list[LogFile]:
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if path.is_file():
        return [log_file(path)]
    if (path / EVENTS_FILE).is_file():
        return [log_file(path / EVENTS_FILE)]
    for root in (path, path / "session-state"):
        logs = scan_session_state(root)
        if logs:
            return logs
    raise ConfigError(
        f"{path}: no session log found. Give an events.jsonl file, a session directory that "
        f"holds one, or a session-state directory (e.g. ~/.copilot/session-state)"
    )


def _unique(logs: Iterable[LogFile]) -> Iterable[LogFile]:
    seen: set[Path] = set()
    for log in logs:
        key = log.path.resolve()
        if key not in seen:
            seen.add(key)
            yield log
