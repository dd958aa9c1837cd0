"""Finding session logs: a file, a session directory, or a whole session-state directory.

The CLI keeps `$COPILOT_HOME/session-state/<sessionId>/events.jsonl`; the directory name is the
session id, which is how a log whose `session.start` was lost (or that is read from its middle)
still gets the right `gen_ai.conversation.id` and the same span ids.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import _env as env
from .._exceptions import ConfigError
from ..files._safe_open import kind, open_regular

__all__ = [
    "DEFAULT_MAX_LOG_BYTES",
    "EVENTS_FILE",
    "LogFile",
    "Refused",
    "default_session_state",
    "find_logs",
    "not_a_session_state",
    "read_client_name",
    "read_session_name",
    "scan_session_state",
    "session_log",
    "shown",
]

EVENTS_FILE = "events.jsonl"
#: Beside each log the CLI keeps the session's workspace.yaml (`id`, `cwd`, `client_name`,
#: `name`...): flat `key: value` lines, a few hundred bytes.
WORKSPACE_FILE = "workspace.yaml"
_WORKSPACE_MAX = 64 * 1024
#: Logs larger than this are not read (`--max-log-bytes`): sessions of days write some hundreds
#: of MB; a log of 4 GiB is a sparse or runaway file, whose reading would never end.
DEFAULT_MAX_LOG_BYTES = 4 << 30
_CLIENT_NAME_MAX = 64

logger = logging.getLogger(__name__)
_REPORTED: set[Path] = set()  # refusals said once (replay, stats and doctor scan once)


@dataclass(frozen=True, slots=True)
class LogFile:
    """One session log and the session id its place implies.

    `root`: the directory it was found in (a session-state directory, or the session directory
    the user named); every open of the log goes from there without following a symbolic link
    (`_safe_open`). None: a file the user named, opened as named."""

    path: Path
    session_hint: str
    root: Path | None = None


@dataclass(frozen=True, slots=True)
class Refused:
    """A session directory's log that is not to be read: why, for a log line, and the reason
    as the label of `otel_bridge.files.skipped` (`link`, `not_regular`, `name`, `denied`)."""

    path: Path
    why: str
    reason: str


def default_session_state(environ: dict[str, str] | os._Environ[str]) -> Path:
    """`$COPILOT_HOME/session-state`, COPILOT_HOME defaulting to ~/.copilot as the CLI does."""
    home = environ.get(env.COPILOT_HOME)
    base = Path(home).expanduser() if home else Path.home() / ".copilot"
    return base / "session-state"


def not_a_session_state(root: Path) -> str | None:
    """What to pass instead, when a directory given to watch (`run --session-state`, doctor)
    is a log or one session's directory rather than a session-state directory; None
    otherwise. Watched as given, a session's directory follows no log (its files are taken
    for sessions) and a log is no directory: run said nothing useful, doctor said this."""
    replay = f"or read this one with `otel-bridge replay {root}`"
    if _is_file(root):
        where = (  # a session's log: the session-state directory it is in
            f"--session-state {root.parent.parent}, to follow every session there"
            if root.name == EVENTS_FILE
            else "e.g. ~/.copilot/session-state"
        )
        return (
            f"{root} is a file: pass the session-state directory ({where}), "
            f"{replay.replace('this one', 'this log')}"
        )
    if _is_file(root / EVENTS_FILE):
        return (
            f"{root} is one session's directory (it holds {EVENTS_FILE}): pass "
            f"its parent, --session-state {root.parent}, to follow every "
            f"session, {replay}"
        )
    return None


def _is_file(path: Path) -> bool:
    """`path.is_file()`, False where it cannot be looked at: a root the bridge's user cannot
    read is said by the tailer and /readyz, not by a traceback here."""
    try:
        return path.is_file()
    except OSError:
        return False


def log_file(path: Path, root: Path | None = None) -> LogFile:
    """A log at `path` (found below `root`, if given); its directory name is the session
    hint."""
    return LogFile(path, path.parent.name or path.stem, root)


def scan_session_state(root: Path) -> list[LogFile]:
    """Every `<session>/events.jsonl` directly under `root`, sorted by path; [] if none.

    Lock and other dot-directories are skipped; so are entries that vanish while scanning, and
    (said once each) logs that are not to be read: a session directory or log that is a
    symbolic link (the daemon reads only the tree it was pointed at, whatever a session
    directory contains), a log that is not a regular file (a FIFO would block its reader), a
    directory whose name is not printable. Two paths of one file (a hard link) give one log.
    """
    try:
        with os.scandir(root) as entries:
            directories = [Path(entry.path) for entry in entries]
    except OSError:
        return []
    found = []
    for directory in directories:
        log = session_log(root, directory)
        if isinstance(log, LogFile):
            found.append(log)
        elif isinstance(log, Refused) and log.path not in _REPORTED:
            _REPORTED.add(log.path)
            logger.warning("not reading %s: %s", shown(log.path), log.why)
    return list(_unique(sorted(found, key=lambda f: str(f.path))))


def session_log(root: Path, directory: Path) -> LogFile | Refused | None:
    """The log of the session directory `directory` directly under `root`: a `LogFile` to
    read, `Refused` (with why) when it is there but not to be read, None when there is none
    (yet), or the directory is a dot-directory (the CLI's locks) or gone.

    Looked at with `lstat`, never following a link; the reader's every open is checked again
    (`_safe_open`), since any of it may be swapped after this look."""
    name = directory.name
    if name.startswith("."):
        return None
    if not name.isprintable():  # a newline, a control character, bytes that are not UTF-8
        return Refused(
            directory / EVENTS_FILE, "its session directory's name is not printable", "name"
        )
    candidate = directory / EVENTS_FILE
    try:
        if stat.S_ISLNK(os.lstat(directory).st_mode):
            return Refused(
                candidate, f"its session directory is a symbolic link ({_NO_LINKS})", "link"
            )
        mode = os.lstat(candidate).st_mode
    except PermissionError as exc:
        return Refused(candidate, f"cannot look at it: {exc.strerror or exc}", "denied")
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return Refused(candidate, f"a symbolic link ({_NO_LINKS})", "link")
    if not stat.S_ISREG(mode):
        return Refused(candidate, f"not a regular file ({kind(mode)})", "not_regular")
    return LogFile(candidate, name, root)


_NO_LINKS = "no link is followed inside the session-state directory"


def shown(path: Path | str) -> str:
    """A path for a log line: as it is when printable, else escaped (a newline in a directory
    name must not make a line of its own)."""
    text = str(path)
    return text if text.isprintable() else ascii(text)


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
    if (path / EVENTS_FILE).is_file():  # a session directory: its log stays in it
        return [log_file(path / EVENTS_FILE, path)]
    for root in (path, path / "session-state"):
        logs = scan_session_state(root)
        if logs:
            return logs
    raise ConfigError(
        f"{path}: no session log found. Give an events.jsonl file, a session directory that "
        f"holds one, or a session-state directory (e.g. ~/.copilot/session-state)"
    )


def _unique(logs: Iterable[LogFile]) -> Iterable[LogFile]:
    """The first path of each file: one named twice, or linked (a hard link in another
    session's directory), is read once."""
    seen: set[object] = set()
    for log in logs:
        try:
            st = os.stat(log.path)
            key: object = (st.st_dev, st.st_ino)
        except OSError:
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
    log = Path(os.path.abspath(stream))
    try:  # held to its log's rule: a regular file, no link followed in the session directory
        with open_regular(log.with_name(WORKSPACE_FILE), log.parent.parent) as file:
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
