"""Checkpoints: where `run` may resume each log after a restart or a crash.

A checkpoint is taken only at a safe place: the end of a line after which no interaction was
open, with everything before it handed to the exporters. Resuming there re-reads the open
interaction from its first event, so nothing is lost, and whatever was exported twice is the
same span (deterministic ids, the same events, the session state restored from the snapshot).
To keep that re-reading from exporting again what was delivered before a crash, a checkpoint
also lists the ids of the spans of the open interaction already delivered (`sent`): the
follower drops those when they come again.

The store is a journal, `checkpoints.jsonl` in the state directory: a version line, then one
line per checkpoint written, the last line of a log winning. A save appends only the logs whose
checkpoint moved (one small write and one fsync, however many logs are followed), so saving
after every delivered batch stays cheap, and an idle daemon writes nothing. When the journal
has grown to twice what its live entries take (and past 256 KiB), it is compacted: rewritten
the crash-safe way (a temp file, fsync, rename over the old one, fsync of the directory; as Vector's
checkpointer does), which is also how a save goes on after a failed append (a line cut by a
full disk is ignored on load: the one before it for the same log still holds). Mode 0600.

The store remembers, per log, only where its live line is in the journal (and a hash of it, to
tell whether a checkpoint moved): `get` reads that one line back. So a daemon can let a quiet
log's whole state live on disk and take it back when the log grows again (`Tailer`'s sleeping
logs), and a log costs a few dozen bytes in memory however many are followed.

A file is known by its device and inode and a fingerprint of its first bytes (as the
OpenTelemetry Collector's filelog receiver does), so a log that was replaced or truncated is
read again from its start. The version 1 file (`checkpoints.json`, one document) is still read,
and replaced by the journal at the first save.

A checkpoint file is trusted no further than it can be checked: every field of an entry is
validated when read (types, ranges, sizes), and a file that cannot be read, is of an unknown (a
newer) version or holds damaged lines is never overwritten: it is renamed aside
(`checkpoints.jsonl.damaged-<UTC time>`, the last few kept) and `lost` tells the tailer, which
then reads every log without a usable checkpoint from its start, however old: repeats, never a
loss. What a checkpoint stores of a session (its working directory, branch, model...) is taken
from the log, so it is scrubbed of secrets before it is written, as spans are.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._exceptions import CheckpointError
from ..files._safe_open import open_regular
from ..processors import Scrubber, ScrubberConfig
from ._file import FINGERPRINT_BYTES, FileCheckpoint, decode, encode, fingerprint
from ._io import append_file, replace_file
from ._journal import (
    VERSION,
    digest_length,
    digest_position,
    line_digest,
    lines_at,
    read_journal,
    read_v1,
    same_line,
    set_aside_logged,
    why,
)

__all__ = ["FINGERPRINT_BYTES", "CheckpointStore", "FileCheckpoint", "fingerprint"]

logger = logging.getLogger(__name__)

_NAME = "checkpoints.jsonl"
_V1_NAME = "checkpoints.json"
#: The journal is compacted when it is larger than this many times its live entries (and
#: larger than `_COMPACT_MIN_BYTES`): appends stay cheap, the file stays bounded. Twice, not
#: more: what the state directory takes stays within its live checkpoints and as much again
#: (or the floor), so that it follows the sessions there now, not those seen since the last
#: compaction. A daemon cleaning up after deleted sessions at a few hundred live logs swung
#: between 0.2 and 1 MiB with 4 and a floor of 1 MiB, which reads as growth over any window
#: shorter than a cycle. Compacting more often costs nothing measurable: a save's append and
#: fsync dominate (30,000 saves over 200 logs: 8.1 s of CPU before, 8.0 s after).
_COMPACT_RATIO = 2
_COMPACT_MIN_BYTES = 256 << 10


class CheckpointStore:
    """The checkpoint journal in a state directory (created 0700 if missing).

    Args:
        directory: the state directory.
        scrubber: the export's scrubber settings: their secret patterns and entropy check
            redact the session state a checkpoint stores, so that a restored state, scrubbed
            again on export, gives the spans an unbroken run gives. Only those: paths are not
            rewritten here (a path would be hashed twice). Default: the built-in patterns.

    Attributes:
        lost: after `load`, whether checkpoints may have been lost (a file or a line that
            could not be used): the logs without one must then be read from their start.

    Raises:
        CheckpointError: the directory cannot be created.
    """

    def __init__(self, directory: Path, scrubber: ScrubberConfig | None = None) -> None:
        self.directory = directory
        self.path = directory / _NAME
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise CheckpointError(
                f"cannot create the state directory {directory}: "
                f"{exc.strerror or exc}; choose another with --state-dir"
            ) from exc
        secrets = ScrubberConfig(
            extra_patterns=scrubber.extra_patterns if scrubber else (),
            entropy=scrubber.entropy if scrubber else True,
        )
        self._scrub = Scrubber(secrets).text
        # path -> what its line as last written was and where: its hash, length and position
        # in the journal in one int (`_digest`; the lines themselves are read back from the
        # journal by `get` and when it is compacted), so that a log costs a few dozen bytes
        # here however many are followed.
        self._saved: dict[str, int] = {}
        # Read from a version 1 file, or from a journal set aside: these checkpoints have no
        # line in the journal until the first save compacts (rewrites) it, so `get` takes
        # them from here until then.
        self._legacy: dict[str, FileCheckpoint] = {}
        self._live_bytes = 0  # what the live lines take
        self._file_bytes = 0  # what the journal takes (live lines and superseded ones)
        self._clean = False  # the journal ends with a complete line we wrote or read
        self._damaged = 0  # damaged lines met when it was last read
        self._cut = False  # its last line was cut (a crash while appending)
        self.lost = False
        # checkpoints lost while this process ran (a journal damaged under it): the journal
        # it writes says so (`"lost": true`), for the next start
        self._lost_since_loaded = False
        self._header_lost = False  # the journal read said so
        self.writes = 0  # appends and compactions done (for tests and benchmarks)

    def load(self) -> dict[str, FileCheckpoint]:
        """The checkpoints of the last run. A file that cannot be used whole is set aside
        (renamed, logged) and its good lines kept; `lost` then says that the logs without a
        checkpoint are to be read from their start. A line cut by a crash loses only itself:
        the log it was for resumes from its previous line, if any."""
        entries: dict[str, FileCheckpoint] = {}
        self.lost = False
        v1 = [self.directory / (_V1_NAME + ".tmp"), self.directory / _V1_NAME]
        if os.path.lexists(self.path):
            entries = self._load_journal()
        elif any(os.path.lexists(candidate) for candidate in v1):
            entries, lost = read_v1(v1)
            self.lost = self.lost or lost
            self._keep_in_memory(entries)
        if entries:
            # at DEBUG: `run` says where its checkpoints are, and the tailer how many resume
            logger.debug("resuming %d logs from %s", len(entries), self.directory)
        self._live_bytes = sum(digest_length(d) + 1 for d in self._saved.values())
        return entries

    def get(self, path: str) -> FileCheckpoint | None:
        """The checkpoint of `path` as last saved (or loaded), read back from the journal;
        None when it has none, or when its line cannot be read back (logged)."""
        digest = self._saved.get(path)
        if digest is None:
            return None
        position = digest_position(digest)
        if position < 0:
            return self._legacy.get(path)
        try:
            with open_regular(self.path, self.directory) as handle:  # never a FIFO's wait
                line = handle.read_at(position, digest_length(digest)).decode("utf-8")
            checkpoint = decode(line)
            if checkpoint.path != path or line_digest(line, position) != digest:
                raise ValueError("the journal changed under the bridge")
        except (OSError, ValueError, TypeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            logger.warning("cannot read %s's checkpoint back from %s: %s", path, self.path, why)
            return None
        return checkpoint

    def save(self, checkpoints: Mapping[str, FileCheckpoint]) -> int:
        """Record these checkpoints (the logs not named keep theirs); only those that changed
        since they were last written are appended. Returns how many were written.

        Raises:
            CheckpointError: the journal cannot be written (a full disk, a read-only volume):
                what was saved before still holds; the next save tries again.
        """
        lines = {}
        for path, checkpoint in checkpoints.items():
            line = encode(checkpoint, self._scrub)
            saved = self._saved.get(path)
            if saved is None or not same_line(saved, line):
                lines[path] = line
        if not lines:
            return 0
        live = self._live_bytes + sum(
            len(line) + 1 - (digest_length(self._saved[path]) + 1 if path in self._saved else 0)
            for path, line in lines.items()
        )
        try:
            if not self._clean or self._file_bytes > max(_COMPACT_MIN_BYTES, _COMPACT_RATIO * live):
                positions = self._compact(lines)
            else:
                positions = self._append(lines)
        except OSError as exc:
            self._clean = False  # a line may be half written: the next save rewrites it all
            raise CheckpointError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self._saved.update(positions)
        self._live_bytes = live
        self.writes += 1
        return len(lines)

    def forget(self, paths: Sequence[str]) -> None:
        """Logs that are gone: their checkpoints leave the journal at its next compaction."""
        for path in paths:
            digest = self._saved.pop(path, None)
            if digest is not None:
                self._live_bytes -= digest_length(digest) + 1

    # --- internals -------------------------------------------------------------------------

    def _append(self, lines: Mapping[str, str]) -> dict[str, int]:
        """Append `lines`; returns each one's `_digest` (with where it now is)."""
        data, positions = lines_at(lines, self._file_bytes)
        append_file(self.path, data)
        self._file_bytes += len(data)
        return positions

    def _compact(self, lines: Mapping[str, str]) -> dict[str, int]:
        """Rewrite the journal with the live line of every log: those given, and for the
        others their last line in the journal as it is (read back: not kept in memory).
        A journal that cannot be read back whole (damaged since it was loaded) is set aside,
        not written over. Returns the `_digest` of every line written (with where it now is).

        Raises:
            OSError: it cannot be written (or a damaged one set aside).
        """
        kept: dict[str, str] = {}
        journal: list[tuple[str, str, int]] = []
        damaged = False
        if os.path.lexists(self.path):
            try:
                journal = self._journal_lines()
            except (OSError, ValueError) as exc:
                damaged = set_aside_logged(self.path, why(exc), raising=True)
            else:
                if self._damaged:
                    reason = f"{self._damaged} damaged lines"
                    damaged = set_aside_logged(self.path, reason, raising=True)
        for path, line, _ in journal:
            if path in self._saved and path not in lines:
                kept[path] = line
        for path, checkpoint in self._legacy.items():  # not in the journal
            if path in self._saved and path not in lines:
                kept.setdefault(path, encode(checkpoint, self._scrub))
        kept.update(lines)
        if damaged:
            # Damaged while the bridge ran: the logs whose lines were lost with it have no
            # checkpoint now. They are read from their start when they wake, and the new
            # journal says so to the next start too (`lost`), which reads them likewise.
            for path in [p for p in self._saved if p not in kept]:
                del self._saved[path]
                self._lost_since_loaded = True
        header_fields: dict[str, Any] = {"version": VERSION}
        if self._lost_since_loaded:
            header_fields["lost"] = True
        header = (json.dumps(header_fields) + "\n").encode("utf-8")
        body, positions = lines_at(kept, len(header))
        data = header + body
        replace_file(self.path, data)
        self._file_bytes = len(data)
        self._clean = True
        self._legacy = {}
        for old in (_V1_NAME, _V1_NAME + ".tmp"):  # the version 1 file is superseded
            with contextlib.suppress(FileNotFoundError):
                (self.directory / old).unlink()
        return positions

    def _journal_lines(self) -> list[tuple[str, str, int]]:
        """(path, line, where it starts) of each good line of the journal, in order
        (`read_journal`), noting what it says of itself: its damaged lines (`_damaged`), a
        last line cut by a crash (`_cut`), checkpoints lost in a previous run.

        Raises:
            OSError: it cannot be read.
            ValueError: its first line is not this version's header.
        """
        journal = read_journal(self.path)
        self._header_lost = journal.header_lost
        self._file_bytes = journal.file_bytes
        self._damaged = journal.damaged
        self._cut = journal.cut
        self._clean = journal.clean
        return journal.good

    def _load_journal(self) -> dict[str, FileCheckpoint]:
        try:
            good = self._journal_lines()
        except (OSError, ValueError) as exc:
            self.lost = True
            set_aside_logged(self.path, why(exc))
            return {}
        last = {path: (line, start) for path, line, start in good}
        entries = {path: decode(line) for path, (line, _) in last.items()}
        if self._damaged:  # what was read stays; the file goes aside, to look into
            self.lost = True
            set_aside_logged(self.path, f"{self._damaged} damaged lines")
            self._keep_in_memory(entries)
            return entries
        if self._header_lost:
            self.lost = True
            logger.warning(
                "%s: checkpoints were lost while the bridge last ran (a damaged file was set "
                "aside); the logs without a checkpoint are read from their start",
                self.path,
            )
        if self._cut:
            self.lost = True  # it may have been a log's first checkpoint
            logger.warning(
                "%s: its last line was cut (the bridge stopped while saving it); the logs "
                "without a checkpoint are read from their start",
                self.path,
            )
        self._saved = {path: line_digest(line, start) for path, (line, start) in last.items()}
        return entries

    def _keep_in_memory(self, entries: Mapping[str, FileCheckpoint]) -> None:
        """Checkpoints with no line in the journal (a version 1 file's, a set-aside
        journal's): `get` gives them from memory, and the first save writes them."""
        self._legacy = dict(entries)
        self._saved = {path: line_digest(encode(c, self._scrub), -1) for path, c in entries.items()}
        self._clean = False
        self._file_bytes = 0
