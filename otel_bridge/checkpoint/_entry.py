"""One checkpoint as the journal holds it: checked field by field when read back, scrubbed of
secrets when written.

A checkpoint file is input like any other: a disk can damage it, a newer bridge can write
fields this one does not know, anyone with the user's rights can edit it. An entry is used only
if every field has the type and the range this version writes (a negative or huge offset, a
path that is not one, thousands of ids would otherwise make a log unreadable or the daemon
slow); anything else is a damaged line. What an entry stores of a session (its working
directory, branch, repository URL, model) comes from the log, so its text goes through the
secret scrubber before it is written, as spans do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ENTRY_FIELDS", "MAX_SENT", "MAX_SENT_BLOCKS", "checked_entry", "scrubbed_session"]

#: The fields of an entry, in the order of `FileCheckpoint`'s.
ENTRY_FIELDS = (
    "path",
    "device",
    "inode",
    "fingerprint",
    "fingerprint_bytes",
    "offset",
    "session",
    "sent",
    "sent_blocks",
)
_REQUIRED = frozenset(ENTRY_FIELDS) - {"session", "sent", "sent_blocks"}
#: Bounds of what an entry may hold. A written one never exceeds them (`sent` and
#: `sent_blocks` are cut when encoded: a repeat rather than a loss); beyond them the line is
#: damaged. A block stands for 1,024 delivered spans (feed/_delivered.py): 100,000 of them
#: are a task of a hundred million spans.
MAX_SENT = 50_000
MAX_SENT_BLOCKS = 100_000
_MAX_PATH = 4096  # Linux's PATH_MAX
_MAX_LINE = 4 << 20  # characters: a session's state is a few KiB, 50,000 span ids under 1 MiB
_MAX_UINT64 = (1 << 64) - 1
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
#: Fields of a session's state that are ids, not text from the log: never scrubbed (the span
#: ids derive from them; a scrubbed one would give other ids after a restart).
_ID_FIELDS = frozenset({"session_id", "previous", "previous_ids"})

#: path, device, inode, fingerprint, fingerprint_bytes, offset, session, sent, sent_blocks
Entry = tuple[str, int, int, str, int, int, dict[str, Any], tuple[int, ...], tuple[int, ...]]


def checked_entry(line: str | Mapping[str, Any], max_fingerprint_bytes: int) -> Entry:
    """The fields of an entry (a journal line, or a version 1 file's decoded entry), each of
    the type and in the range this version writes.

    Raises:
        ValueError: a field missing, unknown, of another type or out of range; not JSON. The
            message names the field only: the line is not quoted.
    """
    if isinstance(line, str):
        if len(line) > _MAX_LINE:
            raise ValueError("line too long")
        entry = json.loads(line)
        if not isinstance(entry, dict):
            raise ValueError("not an object")
    else:
        entry = line
    unknown = entry.keys() - set(ENTRY_FIELDS)
    if unknown:
        raise ValueError(f"{len(unknown)} unknown fields")
    missing = _REQUIRED - entry.keys()
    if missing:
        raise ValueError(f"no {', '.join(sorted(missing))}")
    path = entry["path"]
    if not isinstance(path, str) or not 0 < len(path) <= _MAX_PATH or "\x00" in path:
        raise ValueError("bad 'path'")
    for name in ("device", "inode", "offset"):
        if not _uint64(entry[name]):
            raise ValueError(f"bad {name!r}")
    digest = entry["fingerprint"]
    if not isinstance(digest, str) or _SHA256_HEX.fullmatch(digest) is None:
        raise ValueError("bad 'fingerprint'")
    size = entry["fingerprint_bytes"]
    if not _uint64(size) or size > max_fingerprint_bytes:
        raise ValueError("bad 'fingerprint_bytes'")
    session = entry.get("session", {})
    if not isinstance(session, dict):
        raise ValueError("bad 'session'")
    sent = entry.get("sent", [])
    if not isinstance(sent, list) or len(sent) > MAX_SENT or not all(map(_uint64, sent)):
        raise ValueError("bad 'sent'")
    blocks = entry.get("sent_blocks", [])
    if (
        not isinstance(blocks, list)
        or len(blocks) > MAX_SENT_BLOCKS
        or not all(map(_uint64, blocks))
    ):
        raise ValueError("bad 'sent_blocks'")
    return (
        path,
        entry["device"],
        entry["inode"],
        digest,
        size,
        entry["offset"],
        session,
        tuple(sent),
        tuple(blocks),
    )


def scrubbed_session(session: Mapping[str, Any], scrub: Callable[[str], str]) -> dict[str, Any]:
    """A session's state with the secrets in its text redacted (a token in a working
    directory, a branch, a repository URL): the file is private, but no place for them.
    Only secrets: `--paths` applies on export, to a restored state as to any, and doing it
    here too would hash a path twice. Ids are kept as they are (`_ID_FIELDS`)."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return scrub(value)
        if isinstance(value, list | tuple):
            return [walk(item) for item in value]
        if isinstance(value, Mapping):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in value.items()}
        return value

    return {key: value if key in _ID_FIELDS else walk(value) for key, value in session.items()}


def _uint64(value: Any) -> bool:
    """An int (not a bool) from 0 to 2**64 - 1: an offset, a device, an inode, a span id."""
    return type(value) is int and 0 <= value <= _MAX_UINT64
