"""The checkpoint journal on disk, apart from the store's table of it: the version line and
how a journal (or a version 1 file) is read back, line by line, each line checked; where a
line is, as one int (`digest`); and a file that cannot be used, set aside, never written
over (`set_aside_logged`). What the journal is and why: `_checkpoint`."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._entry import checked_entry
from ._file import FINGERPRINT_BYTES, FileCheckpoint, decode
from ._io import read_file, set_aside

__all__ = [
    "VERSION",
    "Journal",
    "digest_length",
    "digest_position",
    "line_digest",
    "lines_at",
    "read_journal",
    "read_v1",
    "same_line",
    "set_aside_logged",
    "why",
]

#: the name its log lines have always had
logger = logging.getLogger("otel_bridge.checkpoint._store")

VERSION = 2
_HASH_MASK = (1 << 64) - 1
_POSITION_SHIFT = 128
_CONTENT_MASK = (1 << _POSITION_SHIFT) - 1  # the hash and the length
#: Damaged checkpoint files kept aside (the oldest beyond go): enough to look into one.
_KEEP_ASIDE = 3


@dataclass
class Journal:
    """A journal as read (`read_journal`).

    Attributes:
        good: (path, line, where it starts) of each good line, in order (a log's last one
            wins).
        file_bytes: what the file takes.
        damaged: damaged lines met.
        cut: its last line was cut by a crash (not damage: the bridge stopped while appending
            it).
        header_lost: its header says checkpoints were lost while the bridge last ran.
        clean: it ends with a complete line and holds no damaged one (an append may follow).
    """

    good: list[tuple[str, str, int]] = field(default_factory=list)
    file_bytes: int = 0
    damaged: int = 0
    cut: bool = False
    header_lost: bool = False
    clean: bool = False


def read_journal(path: Path) -> Journal:
    """The journal's good lines, its damaged ones counted, a last line cut by a crash noted.

    Raises:
        OSError: it cannot be read.
        ValueError: its first line is not this version's header.
    """
    data = read_file(path)
    lines = data.split(b"\n")
    try:
        header = json.loads(lines[0])
    except ValueError:
        raise ValueError("not a checkpoint file") from None
    if not isinstance(header, dict) or header.get("version") != VERSION:
        version = header.get("version") if isinstance(header, dict) else None
        raise ValueError(
            f"version {version} (this bridge reads {VERSION})"
            if type(version) is int
            else "not a checkpoint file"
        )
    journal = Journal(file_bytes=len(data), header_lost=header.get("lost") is True)
    position = len(lines[0]) + 1
    for number, raw in enumerate(lines[1:], 2):
        start, position = position, position + len(raw) + 1
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
            checkpoint = decode(line)
        except (ValueError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
            if number == len(lines):  # no newline after it: cut while being appended
                journal.cut = True
                continue
            journal.damaged += 1
            if journal.damaged == 1:
                logger.warning("%s: line %d is damaged (%s)", path, number, exc)
            continue
        journal.good.append((checkpoint.path, line, start))
    journal.clean = data.endswith(b"\n") and not journal.damaged
    return journal


def read_v1(candidates: Sequence[Path]) -> tuple[dict[str, FileCheckpoint], bool]:
    """The version 1 file's checkpoints: its temporary file if a crash left a whole one,
    else the file itself (set aside if it cannot be used); and whether checkpoints may have
    been lost (a file set aside)."""
    lost = False
    for candidate in candidates:
        if not os.path.lexists(candidate):
            continue
        try:
            document = json.loads(read_file(candidate).decode("utf-8"))
            if not isinstance(document, dict) or document.get("version") != 1:
                raise ValueError("not a version 1 checkpoint file")
            files = document.get("files")
            if not isinstance(files, list) or not all(isinstance(e, dict) for e in files):
                raise ValueError("bad 'files'")
            entries = [FileCheckpoint(*checked_entry(entry, FINGERPRINT_BYTES)) for entry in files]
        except (OSError, ValueError) as exc:
            if candidate.name.endswith(".tmp"):  # cut by a crash: the file itself holds
                logger.warning("ignoring %s: %s", candidate, why(exc))
                continue
            lost = True
            set_aside_logged(candidate, why(exc))
            continue
        return {entry.path: entry for entry in entries}, lost
    return {}, lost


def set_aside_logged(path: Path, reason: str, *, raising: bool = False) -> bool:
    """A checkpoint file that cannot be used (damaged, unreadable, a newer version's) is
    renamed `<name>.damaged-<UTC time>`, mode 0600, never written over: a newer bridge's
    file survives a downgrade, and a damaged one can be looked into. The last
    `_KEEP_ASIDE` are kept. Logged once. Returns whether it was set aside (False: no
    regular file there, a directory say, left as it is).

    Raises:
        OSError: with `raising`, it could not be renamed (the failed save says so; without,
            logged here).
    """
    consequence = (
        "the logs without a checkpoint are read from their start (spans delivered "
        "before may be sent again)"
    )
    try:
        target = set_aside(path, _KEEP_ASIDE)
    except OSError as exc:
        if raising:
            raise
        logger.warning(
            "cannot use %s (%s), nor set it aside (%s): it is not written over while it "
            "is there; %s",
            path,
            reason,
            why(exc),
            consequence,
        )
        return False
    if target is None:
        if not raising:
            logger.warning("cannot use %s (%s): not a file; %s", path, reason, consequence)
        return False
    logger.warning(
        "cannot use %s (%s): kept aside as %s; %s", path, reason, target.name, consequence
    )
    return True


def why(exc: BaseException) -> str:
    """An error in a few words (an OS error's own, without its number and file name)."""
    return str(exc.strerror) if isinstance(exc, OSError) and exc.strerror else str(exc)


def line_digest(line: str, position: int) -> int:
    """A line's hash, its length in bytes and where it starts in the journal (-1: in none) in
    one int: enough to tell whether a checkpoint moved, and to read it back."""
    # (Lines are ASCII: `json.dumps` escapes the rest, so characters are bytes.)
    return (hash(line) & _HASH_MASK) | (len(line) << 64) | ((position + 1) << _POSITION_SHIFT)


def same_line(digest: int, line: str) -> bool:
    """Is `line` the one `digest` was taken of (wherever it is)?"""
    return digest & _CONTENT_MASK == line_digest(line, -1)


def digest_length(digest: int) -> int:
    """The length in bytes of the line `digest` was taken of."""
    return (digest >> 64) & _HASH_MASK


def digest_position(digest: int) -> int:
    """Where the line `digest` was taken of starts in the journal (-1: in none)."""
    return (digest >> _POSITION_SHIFT) - 1


def lines_at(lines: Mapping[str, str], start: int) -> tuple[bytes, dict[str, int]]:
    """`lines` as the bytes to write at byte `start` of the journal, and each one's digest."""
    chunks = []
    positions = {}
    position = start
    for path, line in lines.items():
        data = line.encode("utf-8") + b"\n"
        chunks.append(data)
        positions[path] = line_digest(line, position)
        position += len(data)
    return b"".join(chunks), positions
