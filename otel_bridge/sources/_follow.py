"""What the tailer keeps per followed log, the watchdog hints, and the start-up summary.

`Follower` holds one log's reading position, decoder and resume points (`checkpoint()`);
`Hints` collects the paths watchdog saw change, from its own thread, without reading anything.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from .._checkpoint import FINGERPRINT_BYTES, FileCheckpoint, fingerprint
from .._lines import DEFAULT_MAX_LINE_BYTES, JsonLinesDecoder, ReadStats
from .._records import SpanRecord
from .._safe_open import open_regular
from .._words import plural
from ._delivered import DeliveredSpans, ReReadBlocks
from ._discovery import DEFAULT_MAX_LOG_BYTES, LogFile
from ._shard import Shard

__all__ = ["Follower", "Hints", "TailOptions", "end_of_last_line", "start_summary"]


@dataclass(frozen=True, slots=True)
class TailOptions:
    """How `run` follows logs.

    Attributes:
        backfill: read logs that were already there at start from their beginning, however old.
        catch_up_seconds: without backfill, logs modified this recently are read from their
            beginning at start; older ones are followed from their current end.
        idle_timeout_seconds: an interaction whose log has been quiet this long is closed
            (marked incomplete unless its loop had ended); time the tailer was not polling
            (the process stopped, the machine asleep) does not count. One whose loop has stopped and
            only waits for background work ends instead when the assembler's background wait
            has passed since its last event (`AssemblerConfig.background_wait_seconds`).
        rescan_seconds: how often the session-state directories are looked at for new
            sessions without a hint, and every log for growth when there are no file-system
            notifications (with them, every log is looked at every 12th rescan as a safety
            net, and at once when the kernel says it dropped some).
        max_line_bytes: lines longer than this are skipped and counted.
        watch: use file-system notifications (inotify) as hints; without, poll only.
        checkpoint_seconds: checkpoints are saved right after spans are delivered, but not
            more often than this: a crash repeats at most the spans delivered in this time.
        evict_seconds: a log quiet this long with no interaction open leaves memory (its
            session's state is kept, small, and taken back when the log grows again).
        shard: follow only the sessions of this shard (`_shard.in_shard` of the session
            directory's name); None: every session.
        max_log_bytes: a log larger than this is not read (said once, counted): far above
            anything the CLI writes, it is a sparse or runaway file that would keep `run`
            catching up for good.
    """

    backfill: bool = False
    catch_up_seconds: float = 3600.0
    idle_timeout_seconds: float = 900.0
    rescan_seconds: float = 5.0
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    watch: bool = True
    checkpoint_seconds: float = 0.05
    evict_seconds: float = 60.0
    shard: Shard | None = None
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES

    def __post_init__(self) -> None:
        if self.max_log_bytes < 1:
            raise ValueError("max_log_bytes must be positive")
        for name in (
            "catch_up_seconds",
            "idle_timeout_seconds",
            "rescan_seconds",
            "checkpoint_seconds",
            "evict_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


class Follower:
    """One followed log: where reading goes on, and which file (device, inode) it is.

    Slotted, and holding nothing it does not need while its log is quiet: a daemon keeps one
    per log, tens of thousands of them."""

    __slots__ = (
        "_options",
        "_stats",
        "at_end",
        "caught_up",
        "decoder",
        "error",
        "evicted",
        "fingerprint",
        "identity",
        "last_activity",
        "log",
        "not_a_log_said",
        "pending",
        "raised",
        "read_pos",
        "reread",
        "safe_offset",
        "safe_seq",
        "safe_session",
        "saved_once",
        "sent",
        "skip",
        "stream",
        "waiting_said",
    )

    def __init__(
        self,
        log: LogFile,
        offset: int,
        identity: tuple[int, int],
        mtime: float,
        options: TailOptions,
        stats: ReadStats,
    ) -> None:
        self.log = log
        self.stream = str(log.path)
        self.identity = identity
        self.last_activity = mtime  # wall-clock seconds of the last growth seen
        self._options = options
        self._stats = stats
        self.decoder = JsonLinesDecoder(
            self.stream, start_offset=offset, max_line_bytes=options.max_line_bytes, stats=stats
        )
        self.read_pos = offset  # next byte to read (the decoder may hold a partial line)
        # Where a restart may resume: after the last line past which no interaction was open,
        # with the session's state there (see _checkpoint.py), and the sequence number of the
        # last span emitted before it.
        self.safe_offset = offset
        # As JSON, the form it is saved in, and a third of a dict's size: one is kept per log
        # however quiet (and shared with `evicted` when they are the same).
        self.safe_session = "{}"
        self.safe_seq = 0
        # Safe places whose spans may still be queued for export: (sequence number of the
        # last span emitted before it, offset, session state). See Tailer.save_checkpoints.
        self.pending: list[tuple[int, int, dict[str, Any]]] = []
        # Spans handed to the exporters since the last safe place: those delivered go into
        # the checkpoint, so that a restart reading the open interaction again does not
        # export them again. Only kept with checkpoints.
        self.sent = DeliveredSpans()
        self.saved_once = False  # a checkpoint was taken (or resumed from)
        # After a restart, what the checkpoint said was delivered, dropped when the re-read
        # gives it again: the ids of the last block, and the full blocks (`ReReadBlocks`).
        self.skip: set[int] | None = None
        self.reread: ReReadBlocks[SpanRecord] | None = None
        # The session's state while its assembler is out of memory (a quiet log, its
        # interactions closed), as JSON (a third of a dict's size): restored when the log
        # grows again. None while resident.
        self.evicted: str | None = None
        self.fingerprint: tuple[str, int] | None = None
        self.error: str | None = None  # why it could not be read last time (logged once)
        self.not_a_log_said = False  # "does not look like a Copilot session log" (logged once)
        self.raised = False  # reading it raised (logged once)
        # Has read to the end once: later events are live. Until then (a log caught up at
        # start, or one copied in whole) events are late by design and their lag not counted.
        self.caught_up = False
        self.at_end = False  # the last read reached the end of the file
        # the task (its root span id) said to wait for background work (logged once a task)
        self.waiting_said: int | None = None

    def restart(self, identity: tuple[int, int]) -> None:
        """The file was truncated or replaced: read the new content from its start."""
        self.identity = identity
        self.read_pos = 0
        self.safe_offset = 0
        self.safe_session = "{}"
        self.safe_seq = 0
        self.pending = []
        self.sent = DeliveredSpans()
        self.skip = None
        self.reread = None
        self.evicted = None
        self.fingerprint = None
        self.not_a_log_said = False
        self.decoder = JsonLinesDecoder(
            self.stream, max_line_bytes=self._options.max_line_bytes, stats=self._stats
        )

    def resume_sent(self, sent: Sequence[int], blocks: Sequence[int] = ()) -> None:
        """Resumed from a checkpoint that names `sent` (and `blocks`) as delivered after its
        safe place: the re-read drops them, and until it passes a safe place every later
        checkpoint names them too. Without that, a second crash while the same task is still
        open would repeat what was delivered before the first one."""
        self.skip = set(sent) or None
        self.reread = ReReadBlocks(blocks) if blocks else None
        self.sent = DeliveredSpans.resumed(sent, blocks)
        self.saved_once = True

    def checkpoint(self, watermark: int | None) -> FileCheckpoint | None:
        """Where this log may resume: the latest safe place whose spans were all exported
        (sequence number up to `watermark`; None: all emitted spans were), with the spans
        after it that were delivered too. None when the file cannot be read to fingerprint
        it."""
        done = [p for p in self.pending if watermark is None or p[0] <= watermark]
        if done:
            self.safe_seq, self.safe_offset, session = done[-1]
            self.safe_session = json.dumps(session)
            self.pending = self.pending[len(done) :]
            self.sent.passed(self.safe_seq)
        if self.fingerprint is None or self.fingerprint[1] < FINGERPRINT_BYTES:
            try:
                self.fingerprint = fingerprint(self.log.path, root=self.log.root)
            except OSError:
                return None
        digest, length = self.fingerprint
        # A restart resumes at `safe_offset` and re-reads every span emitted after it: those
        # delivered already are named, so that it does not export them again.
        sent, blocks = self.sent.named(watermark)
        self.saved_once = True
        return FileCheckpoint(
            self.stream,
            self.identity[0],
            self.identity[1],
            digest,
            length,
            self.safe_offset,
            json.loads(self.safe_session),
            sent,
            blocks,
        )

    def moved(self, watermark: int | None) -> bool:
        """Would `checkpoint(watermark)` differ from the last one taken? (Cheap: an idle or
        stalled log is not fingerprinted and encoded again at every save.)"""
        if not self.saved_once:
            return True
        if self.pending and (watermark is None or self.pending[0][0] <= watermark):
            return True
        return self.sent.moved(watermark)

    @property
    def settled(self) -> bool:
        """Nothing a later checkpoint could add: no safe place or sent span waiting."""
        return self.saved_once and not self.pending and self.sent.settled


class Hints(FileSystemEventHandler):
    """Collects changed paths from watchdog's thread; never reads files itself."""

    def __init__(self, wake: threading.Event) -> None:
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self._wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path:
                self.add(os.fsdecode(path))

    def add(self, path: str) -> None:
        """One changed path (from the watcher's thread)."""
        with self._lock:
            self._paths.add(path)
        self._wake.set()

    def take(self) -> set[str]:
        with self._lock:
            paths, self._paths = self._paths, set()
        return paths


def start_summary(options: TailOptions, starts: Counter[str]) -> str:
    """One line for the start-up (each log's own is at DEBUG): how many logs, and where
    each is read from. Logs followed from their end give no span until they grow, so a
    first run among old sessions would show nothing without a word: say why, and how to
    read them."""
    followed = sum(n for start, n in starts.items() if start)  # "": vanished meanwhile
    # where: said by `run` as it starts ("watching DIR"), not again here
    text = f"following {plural(followed, 'session log')}"
    parts = []
    if starts["checkpoint"]:
        parts.append(
            f"{starts['checkpoint']} resumed from {_their(starts['checkpoint'])} checkpoint"
        )
    if starts["beginning"]:
        recent = (
            ""
            if options.backfill
            else f" (modified in the last {_minutes(options.catch_up_seconds)})"
        )
        parts.append(
            f"{starts['beginning']} read from {_their(starts['beginning'])} beginning{recent}"
        )
    if parts:
        text += ": " + ", ".join(parts)
    if starts["end"]:
        one = starts["end"] == 1
        text += (
            f"; {starts['end']} older log{' is' if one else 's are'} followed from "
            f"{_their(starts['end'])} end; `--backfill` or `otel-bridge replay` "
            f"reads {'it' if one else 'them'}"
        )
    return text


def _their(count: int) -> str:
    return "its" if count == 1 else "their"


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes / 60:g} h" if minutes >= 120 and not minutes % 60 else f"{minutes:g} min"


def end_of_last_line(log: LogFile, size: int, max_line_bytes: int) -> int:
    """Where to start following a file from its end: after its last complete line. Looked
    for in the last `max_line_bytes` only: a line longer would be skipped anyway, so when
    there is no newline there, following starts at the end (and a file of a terabyte of
    zeros is not read backwards)."""
    if size == 0:
        return 0
    window = min(size, max_line_bytes + 1)
    try:
        with open_regular(log.path, log.root) as handle:
            position = size
            while position > size - window:
                step = min(65536, position - (size - window))
                block = handle.read_at(position - step, step)
                newline = block.rfind(b"\n")
                if newline >= 0:
                    return position - step + newline + 1
                position -= step
    except OSError:
        return size
    return 0 if window == size else size
