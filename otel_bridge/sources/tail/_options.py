"""How `run` follows logs (`TailOptions`), where a log found old is followed from, and the
start-up summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..._words import plural
from ...decode._lines import DEFAULT_MAX_LINE_BYTES
from ...files._safe_open import open_regular
from .._discovery import DEFAULT_MAX_LOG_BYTES, LogFile
from .._shard import Shard

__all__ = ["TailOptions", "end_of_last_line", "start_summary"]


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
        person_timeout_seconds: the idle timeout of an interaction whose agent waits for a
            person (a permission, a question, a plan to approve): its log is quiet because
            nobody answered, and the task is still running (the waiting gauges say so).
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
    person_timeout_seconds: float = 86_400.0
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
            "person_timeout_seconds",
            "rescan_seconds",
            "checkpoint_seconds",
            "evict_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


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
