"""The quiet-task policy: what an open task that writes nothing is, and what `run` does with it.

One place decides, from what the task is doing and two clocks, whether a quiet task waits for a
person, waits for background work, is stalled, or is idle and closed by the idle timeout, so
that the stalled signal (and CopilotAgentStalled, which reads it) and the idle timeout cannot
contradict each other:

- waiting for a person (a permission, a question, a plan to approve): never stalled; closed
  after `--person-timeout` of quiet;
- waiting for background work (its agent loop stopped, shells or sub-agents still run): never
  stalled, never closed by the idle timeout; it ends at its last event once the background
  wait has passed since then (event time, as `replay` ends it);
- otherwise, stalled once it has written nothing for the stall threshold, and closed after
  `--idle-timeout` of quiet.

The invariant: a stall is reported at least `STALL_REPORT_SECONDS` (the alert's `for:`, a
scrape and an evaluation, Alertmanager's group wait) before the idle timeout closes the task,
so that the alert fires, and is sent, before the task it is about goes. An idle timeout too
short for the configured stall threshold lowers the threshold (`QuietPolicy.stalled_seconds`),
and `QuietPolicy.conflict` says so once at start. Pure: no clock is read here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["STALL_REPORT_SECONDS", "QuietPolicy", "QuietTask", "Verdict"]

#: How long a stall is reported, at least, before the idle timeout closes its task: the
#: CopilotAgentStalled rule's `for:` (0), a scrape and an evaluation (15 s each in
#: deploy/prometheus/prometheus.yml, 60 s at most in common setups), and Alertmanager's
#: group_wait (30 s by default). tests/unit/feed/test_quiet.py holds it to those files.
STALL_REPORT_SECONDS = 120.0


class Verdict(enum.Enum):
    """What a quiet open task is, and so what `run` does with it."""

    ACTIVE = "active"  # quiet, but not for long: nothing to do
    STALLED = "stalled"  # silent past the stall threshold: the stalled signal is raised
    WAITING_PERSON = "waiting_person"  # waits for a person, within --person-timeout
    WAITING_BACKGROUND = "waiting_background"  # waits for its background work
    BACKGROUND_OVER = "background_over"  # the background wait is over: it ends at its last event
    IDLE = "idle"  # quiet past its timeout: closed (incomplete unless its loop had ended)


@dataclass(frozen=True, slots=True)
class QuietTask:
    """What an open task is doing, and for how long it has been quiet.

    Attributes:
        asks_person: it waits for a person's answer (`assembler._in_flight.waits`).
        background: its agent loop has stopped and it waits for work it left running.
        silent_seconds: since its last event, by event time against the caller's clock.
        quiet_seconds: since its log last gave anything, counting only time the bridge was
            polling (a pause of the process or the machine is not the log being quiet); None
            where no log is followed (the running-now watch): then it is never idle.
    """

    asks_person: bool = False
    background: bool = False
    silent_seconds: float = 0.0
    quiet_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class QuietPolicy:
    """The thresholds, and the verdict they give (`verdict`).

    Attributes:
        idle_timeout_seconds: `--idle-timeout`.
        person_timeout_seconds: `--person-timeout`, the idle timeout of a task that waits for
            a person.
        stall_seconds: `--trouble-stalled-seconds` as configured (0: never stalled).
        background_wait_seconds: `AssemblerConfig.background_wait_seconds`.
    """

    idle_timeout_seconds: float = 900.0
    person_timeout_seconds: float = 86_400.0
    stall_seconds: float = 600.0
    background_wait_seconds: float = 900.0
    #: The stall threshold in force: the configured one, lowered where needed so that a stall
    #: is reported `STALL_REPORT_SECONDS` before the idle timeout closes its task; 0 (never
    #: stalled) when the idle timeout leaves no room for a report. Worked out once: it is read
    #: for every open task at every look of the clock.
    stalled_seconds: float = field(init=False, compare=False)

    def __post_init__(self) -> None:
        for name in (
            "idle_timeout_seconds",
            "person_timeout_seconds",
            "stall_seconds",
            "background_wait_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        room = self.idle_timeout_seconds - STALL_REPORT_SECONDS
        stalled = min(self.stall_seconds, room) if self.stall_seconds and room > 0 else 0.0
        object.__setattr__(self, "stalled_seconds", stalled)

    def conflict(self) -> str | None:
        """One line for the start when the idle timeout overrides the stall threshold."""
        if not self.stall_seconds or self.stalled_seconds == self.stall_seconds:
            return None
        idle, stall = _figure(self.idle_timeout_seconds), _figure(self.stall_seconds)
        if not self.stalled_seconds:
            return (
                f"--idle-timeout {idle} closes a quiet task before --trouble-stalled-seconds "
                f"{stall} can report it (a stall is reported {_figure(STALL_REPORT_SECONDS)} s "
                "before the idle timeout at least): no task is reported stalled"
            )
        return (
            f"--idle-timeout {idle} closes a quiet task before --trouble-stalled-seconds "
            f"{stall} can report it: a task is reported stalled after "
            f"{_figure(self.stalled_seconds)} s, {_figure(STALL_REPORT_SECONDS)} s before its "
            "idle timeout"
        )

    def timeout(self, task: QuietTask) -> float:
        """The quiet after which the task is closed: the person timeout if it waits for a
        person, else the idle timeout (a task waiting for background work has none: see
        `verdict`)."""
        return self.person_timeout_seconds if task.asks_person else self.idle_timeout_seconds

    def verdict(self, task: QuietTask) -> Verdict:
        """What the quiet task is: a person's wait first (never stalled, however long), then
        a background wait (never stalled, never idle: the background wait ends it), then
        idle past its timeout, then stalled past the threshold."""
        if task.background:
            if task.silent_seconds > self.background_wait_seconds:
                return Verdict.BACKGROUND_OVER
            return Verdict.WAITING_BACKGROUND
        if task.quiet_seconds is not None and task.quiet_seconds >= self.timeout(task):
            return Verdict.IDLE
        if task.asks_person:
            return Verdict.WAITING_PERSON
        if self.may_stall(task.silent_seconds):
            return Verdict.STALLED
        return Verdict.ACTIVE

    def may_stall(self, silent_seconds: float) -> bool:
        """Silent long enough to be stalled, unless it waits: only then is it worth asking
        what the task does (the clock's check runs every 5 s over every open task)."""
        return 0.0 < self.stalled_seconds <= silent_seconds


def _figure(seconds: float) -> str:
    return f"{seconds:g}"
