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

__all__ = [
    "EVENTS_FILE",
    "LogFile",
    "default_session_state",
    "find_logs",
    "read_client_name",
    "read_session_name",
    "scan_session_state",
    "session_log",
]

EVENTS_FILE = "events.jsonl"
#: Beside each log the CLI keeps the session's workspace.yaml (`id`, `cwd`, `client_name`,
#: `name`...): flat `key: value` lines, a few hundred bytes.
WORKSPACE_FILE = "workspace.yaml"
_WORKSPACE_MAX = 64 * 1024
_CLIENT_NAME_MAX = 64

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
    try:
        with os.scandir(root) as entries:
            directories = [Path(entry.path) for entry in entries]
    except OSError:
        return []
    try:
        real_root = root.resolve()
    except OSError:
        return []
    found = [log for d in directories if (log := session_log(root, d, real_root)) is not None]
    return sorted(found, key=lambda f: str(f.path))


def session_log(root: Path, directory: Path, real_root: Path | None = None) -> LogFile | None:
    """The log of the session directory `directory` directly under `root`, if it has one
    and it is to be read (the rules of `scan_session_state`; `real_root`: `root` resolved,
    when the caller has it)."""
    if directory.name.startswith("."):
        return None
    candidate = directory / EVENTS_FILE
    try:
        if directory.is_symlink() or not candidate.is_file():
            return None
        inside = candidate.resolve().is_relative_to(real_root or root.resolve())
    except OSError:
        return None
    if not inside:
        if candidate not in _REPORTED_LINKS:
            _REPORTED_LINKS.add(candidate)
            logger.warning("not following %s: it links outside %s", candidate, root)
        return None
    return log_file(candidate)


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


def read_client_name(stream: str) -> str | None:
    """The `client_name` of the session whose log is `stream` (a path), from the workspace.yaml
    beside it: `github/cli` for the CLI, `sdk` for an SDK app. None when there is no such file
    or line. Given to the assembler as `AssemblerConfig.client_name_of`, called when a segment
    starts."""
    return _workspace_value(stream, "client_name", _CLIENT_NAME_MAX)


def read_session_name(stream: str) -> str | None:
    """The `name` of the session whose log is `stream` (a path), from the workspace.yaml beside
    it: what the CLI lists the session as (its first message, unless the user renamed it).
    None when there is no such file or line. Given to the assembler as
    `AssemblerConfig.session_name_of`, called for each user message when content capture is
    on (the name is text from the log; docs/viewers.md). Not cut here: the scrubber redacts
    it, then cuts it to `--content-max-chars`."""
    return _workspace_value(stream, "name")


def _workspace_value(stream: str, wanted: str, limit: int | None = None) -> str | None:
    """One top-level key of the workspace.yaml beside the log `stream`, cut to `limit`
    characters if given (not text from the log: that is cut on export, after its secrets are
    redacted, which a cut before could hide). Read with a line scan, not a YAML parser: the
    CLI writes each key on one line as a plain scalar or a quoted one, and nothing else of
    the file is needed."""
    try:
        with open(Path(stream).with_name(WORKSPACE_FILE), "rb") as file:
            text = file.read(_WORKSPACE_MAX).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key == wanted:
            value = value.strip()
            if value[:1] in ("|", ">"):  # a block scalar, on the lines after: not read
                return None
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                quote, value = value[0], value[1:-1]
                if quote == "'":  # YAML's one escape in single quotes: '' for '
                    value = value.replace("''", "'")
            return value[:limit] or None
    return None
