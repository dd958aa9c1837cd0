"""One followed log while it is awake: which file it is, where reading goes on, its decoder,
and its ledger (what the feeder keeps of it: safe place, delivered spans, evicted state).

What a log is when it sleeps, and what a restart resumes from, is its checkpoint
(`FileCheckpoint`: identity, fingerprint, safe offset, session state, delivered ids); a
`Reader` is made from one (`Tailer._new_reader`) and makes one (`checkpoint`).
"""

from __future__ import annotations

from ...checkpoint._file import FINGERPRINT_BYTES, FileCheckpoint, fingerprint
from ...decode._lines import JsonLinesDecoder, ReadStats
from .._discovery import LogFile
from ._downstream import StreamLedger

__all__ = ["Reader"]


class Reader:
    """One awake log. Slotted, and holding nothing it does not need while its log is quiet: a
    daemon keeps one per awake log, tens of thousands of them."""

    __slots__ = (
        "_max_line_bytes",
        "_stats",
        "at_end",
        "caught_up",
        "decoder",
        "end_seen",
        "error",
        "fingerprint",
        "identity",
        "last_activity",
        "ledger",
        "log",
        "not_a_log_said",
        "raised",
        "read_pos",
        "released",
        "stream",
    )

    def __init__(
        self,
        log: LogFile,
        offset: int,
        identity: tuple[int, int],
        mtime: float,
        ledger: StreamLedger,
        max_line_bytes: int,
        stats: ReadStats,
    ) -> None:
        self.log = log
        self.stream = str(log.path)
        self.identity = identity
        self.last_activity = mtime  # wall-clock seconds of the last growth seen
        self._max_line_bytes = max_line_bytes
        self._stats = stats
        self.decoder = JsonLinesDecoder(
            self.stream, start_offset=offset, max_line_bytes=max_line_bytes, stats=stats
        )
        self.read_pos = offset  # next byte to read (the decoder may hold a partial line)
        # Bytes before `read_pos` of a partial last line the decoder let go (`release_partial`):
        # read again, from the line's start, with what follows.
        self.released = 0
        self.ledger = ledger
        self.fingerprint: tuple[str, int] | None = None
        self.error: str | None = None  # why it could not be read last time (logged once)
        self.not_a_log_said = False  # "does not look like a Copilot session log" (logged once)
        self.raised = False  # reading it raised (logged once)
        # Has read to the end once: later events are live. Until then (a log caught up at
        # start, or one copied in whole) events are late by design and their lag not counted.
        self.caught_up = False
        self.at_end = False  # the last read reached the end of the file
        # Wall-clock time a read last reached the end of the file: what is read after it was
        # written after it, so an event's read lag is counted from then at most, however old
        # its timestamp (a copied or restored log arriving in several writes).
        self.end_seen = 0.0

    def restart(self, identity: tuple[int, int], ledger: StreamLedger) -> None:
        """The file was truncated or replaced: read the new content from its start, with a
        new ledger."""
        self.identity = identity
        self.read_pos = 0
        self.released = 0
        self.ledger = ledger
        self.fingerprint = None
        self.not_a_log_said = False
        self.decoder = JsonLinesDecoder(
            self.stream, max_line_bytes=self._max_line_bytes, stats=self._stats
        )

    def release_partial(self) -> None:
        """Let go of the partial last line the decoder holds: it is on disk, and read again
        from its start when the file grows (`rewind`). A log that stopped in the middle of a
        long line (a crash mid-write) then holds nothing of it while it waits."""
        self.released += self.decoder.drop_partial()

    def rewind(self) -> int:
        """Before a read: go back to the start of a partial line let go, so that it is read
        again whole. Returns how many bytes are read again."""
        released, self.released = self.released, 0
        self.read_pos -= released
        return released

    def checkpoint(self, watermark: int | None) -> FileCheckpoint | None:
        """Where this log may resume: the latest safe place whose spans were all exported
        (sequence number up to `watermark`; None: all emitted spans were), with the spans
        after it that were delivered too. None when the file cannot be read to fingerprint
        it."""
        self.ledger.advance(watermark)
        if self.fingerprint is None or self.fingerprint[1] < FINGERPRINT_BYTES:
            try:
                self.fingerprint = fingerprint(self.log.path, root=self.log.root)
            except OSError:
                return None
        digest, length = self.fingerprint
        offset, session, sent, blocks = self.ledger.named(watermark)
        return FileCheckpoint(
            self.stream,
            self.identity[0],
            self.identity[1],
            digest,
            length,
            offset,
            session,
            sent,
            blocks,
        )

    @property
    def at_rest(self) -> bool:
        """Would waking it from its saved checkpoint give it back as it is? Read to its end,
        with nothing held or failing, and its ledger at rest there."""
        return (
            self.caught_up
            and self.at_end
            and self.error is None
            and not self.decoder.pending_bytes
            and self.ledger.at_rest(self.read_pos)
        )
