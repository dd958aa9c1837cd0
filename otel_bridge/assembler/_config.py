"""What the caller chooses (`AssemblerConfig`) and what the assembler counts (`AssemblerStats`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..metrics._recorder import OPTIONAL_LABELS
from ..semconv import (
    MODE_AUTOPILOT,
    MODE_INTERACTIVE,
    MODE_PLAN,
    SEMCONV_MODES,
    SEMCONV_RELEASED,
)
from ._root_name import check_root_name

__all__ = ["AssemblerConfig", "AssemblerStats", "TroubleOptions"]


@dataclass(frozen=True, slots=True)
class TroubleOptions:
    """The thresholds of the signals of a task in trouble while it runs (docs/metrics.md,
    "Running now"). Each signal is raised once per task: a span event on its root, a count in
    copilot.task.trouble, a log line. 0 turns a signal off.

    Attributes:
        repeated_calls: calls of one tool with the same arguments in one task.
        tool_failures: failures in a row of one tool in one task.
        turns: main-agent turns of one task.
        compactions: compactions of its context in one task (`session.compaction_complete`,
            failed ones too): a task that compacts again and again loses what it was doing.
        stalled_seconds: seconds without an event while a task is open (`run` only: it needs
            a clock).
        long_task_seconds: how long a task may be open, by mode (a mode not named: the
            longest named); event time as the events come, the clock in `run` between them.
    """

    repeated_calls: int = 5
    tool_failures: int = 5
    turns: int = 100
    compactions: int = 3
    stalled_seconds: float = 600.0
    long_task_seconds: tuple[tuple[str, float], ...] = (
        (MODE_INTERACTIVE, 3600.0),
        (MODE_PLAN, 3600.0),
        (MODE_AUTOPILOT, 4 * 3600.0),
    )

    def __post_init__(self) -> None:
        for name in ("repeated_calls", "tool_failures", "turns", "compactions", "stalled_seconds"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} may not be negative")
        if any(seconds < 0 for _, seconds in self.long_task_seconds):
            raise ValueError("long_task_seconds may not be negative")

    def long_task(self, mode: str) -> float:
        """The length past which a task of `mode` is long (0: never)."""
        for name, seconds in self.long_task_seconds:
            if name == mode:
                return seconds
        return max((seconds for _, seconds in self.long_task_seconds), default=0.0)


@dataclass(frozen=True, slots=True)
class AssemblerConfig:
    """Choices that change what the spans carry.

    Attributes:
        capture_content: put text from the log (tool error messages) on spans. Off by default:
            logs hold prompts, code and secrets (docs/privacy.md).
        parent: (trace id, span id) of a span the interactions hang under (an app's request,
            a CI job); None: each interaction is its own trace.
        hash_salt: if set, prompts, answers and tool arguments and results also get a salted
            SHA-256 (content off or on), so equal texts can be matched without being sent.
        background_wait_seconds: how long, in event time, a task whose agent loop has stopped
            waits for the work it left running (background shells and sub-agents, an autopilot
            nudge) before it ends at its last event. Event time, so that `replay` and `run`
            end it at the same place (docs/architecture.md, "When an interaction ends").
        keep_unknown_events: put each event of a type the bridge does not know on the open
            interaction's root as a span event (its id, and its data's size; the data itself
            only with content capture on), so that nothing a newer CLI writes is dropped
            silently. Off by default: they are only counted (otel_bridge.events.unknown).
        client_name_of: given a stream (a log's path), the `client_name` of its session
            (github/cli, sdk: the CLI's workspace.yaml beside the log), or None; called when a
            segment starts. A function of the source's, since the assembler does no I/O
            (`sources.read_client_name`; `LiveBridge` says sdk). None: no client name.
        session_name_of: given a stream, the session's name (`name` of the CLI's workspace.yaml
            beside the log), or None; called for each user message, and only with content
            capture on (`sources.read_session_name`; docs/viewers.md). None: no session name.
        metric_labels: attribution labels to add, beside the repository, to the metrics that
            carry it (`_metrics.OPTIONAL_LABELS`: branch, repository host, provider, client;
            docs/metrics.md, "Attribution labels"). None by default: each multiplies the series.
        semconv: the span attribute names the GenAI conventions renamed (`semconv.RENAMED`):
            released (default), previous, or both keys. Metrics are named at the recorder
            (`export.MetricsOptions.semconv_mode`).
        root_name: a template for the name of each task's root span (`--root-name`), with
            fields of its bounded facts: `{agent} {mode} {outcome} {model} {repository}
            {branch} {client}`, and `{title}` (content: only with content capture on), so that
            a trace list tells tasks apart (_root_name.py). None (default): the GenAI
            name, `invoke_agent {agent}`. Each field multiplies the operations a backend keeps.
        trouble: the thresholds of the signals of a task in trouble (`TroubleOptions`).
    """

    capture_content: bool = False
    parent: tuple[int, int] | None = None
    hash_salt: str | None = None
    background_wait_seconds: float = 900.0
    keep_unknown_events: bool = False
    client_name_of: Callable[[str], str | None] | None = None
    session_name_of: Callable[[str], str | None] | None = None
    metric_labels: tuple[str, ...] = ()
    semconv: str = SEMCONV_RELEASED
    root_name: str | None = None
    trouble: TroubleOptions = field(default_factory=TroubleOptions)

    def __post_init__(self) -> None:
        if self.root_name is not None:
            check_root_name(self.root_name)
        if self.semconv not in SEMCONV_MODES:
            raise ValueError(f"semconv: one of {', '.join(SEMCONV_MODES)}, not {self.semconv!r}")
        unknown = [label for label in self.metric_labels if label not in OPTIONAL_LABELS.values()]
        if unknown:
            raise ValueError(
                f"not an optional metric label: {', '.join(unknown)} "
                f"(one of {', '.join(OPTIONAL_LABELS.values())})"
            )


@dataclass
class AssemblerStats:
    """Events the assembler could not place, by type, and other health counts."""

    unplaced: Counter[str] = field(default_factory=Counter)
    unknown_types: Counter[str] = field(default_factory=Counter)
    duplicates: int = 0
    #: steps that raised (a bug met by an unusual log) and were skipped, by step
    #: (`otel_bridge.step`: feed, end_of_input, expire, snapshot, restore)
    failures: Counter[str] = field(default_factory=Counter)
    #: values of spans made valid, by what was wrong (`otel_bridge.reason`: text, number, time)
    repaired: Counter[str] = field(default_factory=Counter)
    #: bounds of what an open task holds that were reached, by bound (`otel_bridge.limit`)
    limits: Counter[str] = field(default_factory=Counter)
    #: sessions whose session.start named another session id than their directory
    mismatched: int = 0
    interactions: int = 0
    spans: int = 0
