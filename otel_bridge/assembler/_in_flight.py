"""What runs now: the figures of the open tasks (`in_flight`, read by `run`'s gauges) and the
signals of a task in trouble while it runs (repeated calls, a tool failing again and again,
many turns, a long silence, a long task), raised once per task and signal.

Everything comes from the open state the assembler holds, so that nothing is counted twice
and a restart, which reads an open task's events again from its checkpoint, finds the same
figures. Pure: the time of "now" is the caller's (`run`'s clock), never read here.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from .. import semconv as sc
from .._records import AttributeValue, SpanEventRecord
from ._state import Interaction, SessionFacts

if TYPE_CHECKING:
    from ._parts import Parts

__all__ = [
    "Glance",
    "InFlight",
    "Labels",
    "OpenTask",
    "check_clock",
    "check_length",
    "glance",
    "in_flight",
    "raise_signal",
]

logger = logging.getLogger(__name__)

#: Distinct (tool, arguments) a task counts calls of; past it, new ones are not counted (the
#: ones counted go on), so that a task of a million different calls stays small.
MAX_CALLS = 2_000
#: Tools whose failures in a row a task counts, and live questions it keeps.
MAX_TOOLS = 200
#: A label set of the running-now gauges: (mode, repository owner, repository name, agent).
Labels = tuple[str, str | None, str | None, str]
#: The gauges' values: metric name -> label set (a wait kind or signal first for the
#: metrics that have one) -> value.
InFlight = dict[str, dict[tuple[str | None, ...], float]]


# --- the signals -----------------------------------------------------------------------------


def tool_called(
    parts: Parts, interaction: Interaction, name: str, arguments: object, ns: int
) -> None:
    """A tool call started: count it by its tool and arguments (their hash only)."""
    watch = interaction.watch
    try:
        text = json.dumps(arguments, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):  # a live SDK object may be anything
        return
    key = hash((name, text))
    count = watch.calls.get(key, 0) + 1
    if count == 1 and len(watch.calls) >= MAX_CALLS:
        return
    watch.calls[key] = count
    watch.repeats = max(watch.repeats, count)
    threshold = parts.config.trouble.repeated_calls
    if threshold and count >= threshold:
        raise_signal(parts, interaction, sc.TROUBLE_REPEATED_CALL, count, threshold, ns, name)


def tool_ended(parts: Parts, interaction: Interaction, name: str, failed: bool, ns: int) -> None:
    """A tool call completed: a failure adds to its tool's failures in a row, a success
    ends them."""
    failing = interaction.watch.failing
    if not failed:
        failing.pop(name, None)
        return
    if name not in failing and len(failing) >= MAX_TOOLS:
        return
    count = failing[name] = failing.get(name, 0) + 1
    interaction.watch.failures = max(interaction.watch.failures, count)
    threshold = parts.config.trouble.tool_failures
    if threshold and count >= threshold:
        raise_signal(parts, interaction, sc.TROUBLE_TOOL_FAILURES, count, threshold, ns, name)


def turn_started(parts: Parts, interaction: Interaction, ns: int) -> None:
    """A main-agent turn started: past the threshold, the task has many turns."""
    threshold = parts.config.trouble.turns
    turns = interaction.main.turns
    if threshold and turns >= threshold:
        raise_signal(parts, interaction, sc.TROUBLE_TURNS, turns, threshold, ns)


def check_length(parts: Parts, interaction: Interaction, now_ns: int) -> None:
    """The task has been open past its mode's length, by event time (as events come; between
    them `check_clock` tells it by the caller's clock)."""
    threshold = _past_length(parts, interaction, now_ns)
    if threshold:
        _raise_long(parts, interaction, now_ns, threshold, now_ns)


def _past_length(parts: Parts, interaction: Interaction, now_ns: int) -> float:
    """The length of the task's mode when the task has been open past it, else 0."""
    threshold = parts.config.trouble.long_task(parts.facts.mode)
    if threshold and now_ns - interaction.root.start_ns >= threshold * 1e9:
        return threshold
    return 0.0


def _raise_long(
    parts: Parts, interaction: Interaction, now_ns: int, threshold: float, at: int | None
) -> None:
    """Raise the long-task signal (`at` None: told by a clock, no span event)."""
    seconds = (now_ns - interaction.root.start_ns) / 1e9
    raise_signal(parts, interaction, sc.TROUBLE_LONG, round(seconds), threshold, at)


def check_clock(parts: Parts, interaction: Interaction, now_ns: int, stalled: float) -> None:
    """What only a clock tells (`run`, between events): the task is stalled (`stalled`: the
    stall threshold in force when the quiet-task policy, `feed._quiet`, says so, else 0:
    never while it waits for a person or for its background work), and it is open past its
    mode's length: counted and said, never put on a span (the clock is not in the log). A
    stall is remembered at the task's last event, so that it is over, for the running-now
    gauge, as soon as the task writes again. Not long either while the task waits for a
    person: it is open because of that person; the waiting gauges tell it
    (`copilot.tasks.waiting_for_user.oldest`)."""
    if stalled:
        interaction.watch.stalled_at = interaction.last_ns
        silence = (now_ns - interaction.last_ns) / 1e9
        raise_signal(parts, interaction, sc.TROUBLE_STALLED, round(silence), stalled, None)
    threshold = _past_length(parts, interaction, now_ns)
    # the person's wait is looked for only past the length (every 5 s, every open task)
    if threshold and not waits(interaction, parts.permissions):
        _raise_long(parts, interaction, now_ns, threshold, None)


def raise_signal(
    parts: Parts,
    interaction: Interaction,
    signal: str,
    value: float,
    threshold: float,
    ns: int | None,
    tool: str | None = None,
) -> None:
    """Once per task and signal: a span event on the task's root (the evidence, there when it
    ends), a count in copilot.task.trouble, and a log line (never the tool's name or
    arguments: they come from the log). The span event goes at `ns`, the time of the event
    that told the signal; without one (`ns` None: the clock told it, not the log), no span
    event: a span is what its log says, the same however and whenever the log
    is read (a re-export after a crash must be identical), and a clock is neither."""
    watch = interaction.watch
    if signal in watch.raised:
        return
    watch.raised.add(signal)
    attributes: dict[str, AttributeValue] = {
        sc.COPILOT_TROUBLE_SIGNAL: signal,
        sc.COPILOT_TROUBLE_VALUE: value,
        sc.COPILOT_TROUBLE_THRESHOLD: threshold,
    }
    if tool is not None:
        attributes[sc.GEN_AI_TOOL_NAME] = tool
    if ns is not None and not interaction.root_exported:
        parts.spans.factory.add_event(
            interaction.root, SpanEventRecord(sc.EVENT_TROUBLE, ns, attributes)
        )
    parts.meter.add(
        sc.METRIC_TASK_TROUBLE,
        {sc.COPILOT_TROUBLE_SIGNAL: signal, sc.COPILOT_MODE: parts.facts.mode},
    )
    logger.warning(
        "%s: task %016x may be in trouble (%s): %s; counted in %s",
        parts.stream,
        interaction.root.span_id,
        signal,
        _SAID[signal].format(value=_figure(value), threshold=_figure(threshold)),
        sc.METRIC_TASK_TROUBLE,
    )


#: What a signal's log line says, with its figure and threshold.
_SAID = {
    sc.TROUBLE_REPEATED_CALL: "one tool called {value} times with the same arguments "
    "(threshold {threshold})",
    sc.TROUBLE_TOOL_FAILURES: "one tool failed {value} times in a row (threshold {threshold})",
    sc.TROUBLE_TURNS: "{value} turns (threshold {threshold})",
    sc.TROUBLE_STALLED: "no event for {value} s (threshold {threshold} s)",
    sc.TROUBLE_LONG: "open for {value} s (threshold {threshold} s)",
    sc.TROUBLE_COMPACTIONS: "its context compacted {value} times (threshold {threshold})",
}


def _figure(value: float) -> str:
    return f"{value:g}"


# --- the figures of the open tasks -------------------------------------------------------------


#: An open task as the figures read it: its session's facts, the task, and the session's
#: open permission requests (when each was asked, ns, and the tool).
OpenTask = tuple[SessionFacts, Interaction, Mapping[str, tuple[int, str | None]]]


class Glance(NamedTuple):
    """What runs now, at a glance (run's status line)."""

    open: int  # tasks open
    waiting: int  # of which waiting for a person
    troubled: int  # of which raised a signal of trouble


def glance(tasks: Iterable[OpenTask]) -> Glance:
    """Count the open tasks, those that wait for a person, those that raised a signal."""
    opened = waiting = troubled = 0
    for _facts, interaction, permissions in tasks:
        opened += 1
        waiting += bool(waits(interaction, permissions))
        troubled += bool(interaction.watch.raised)
    return Glance(opened, waiting, troubled)


def in_flight(tasks: Iterable[OpenTask], now_ns: int) -> InFlight:
    """The running-now gauges' values over the open tasks: (facts, interaction, the session's
    open permission requests) each. Every metric of `TASK_METRICS` has a series for each
    label set that has an open task (0 where it counts nothing), so that a series goes back
    to 0 rather than away while tasks are open; all go when none is. The context gauges, by
    model too, have a series only for the open tasks whose context is known (`_context`)."""
    out: InFlight = {name: defaultdict(float) for name in TASK_METRICS}
    for facts, interaction, permissions in tasks:
        labels = _labels(facts, interaction)
        start = interaction.root.start_ns
        _add(out, sc.METRIC_TASKS_OPEN, labels, 1)
        _max(out, sc.METRIC_TASKS_OPEN_OLDEST, labels, (now_ns - start) / 1e9)
        _max(out, sc.METRIC_TASKS_OPEN_SILENCE, labels, (now_ns - interaction.last_ns) / 1e9)
        _add(out, sc.METRIC_TASKS_OPEN_TURNS, labels, interaction.main.turns)
        _add(out, sc.METRIC_TASKS_OPEN_TOOL_CALLS, labels, interaction.tool_calls)
        running = sum(
            1 for a in list(interaction.subagents.values()) if not a.done and not a.orphan
        )
        _add(out, sc.METRIC_SUBAGENTS_RUNNING, labels, running)
        _add(out, sc.METRIC_SHELLS_RUNNING, labels, len(interaction.shells))
        watch = interaction.watch
        _max(out, sc.METRIC_TASKS_OPEN_REPEATS, labels, watch.repeats)
        _max(out, sc.METRIC_TASKS_OPEN_TOOL_FAILURES, labels, watch.failures)
        waiting = waits(interaction, permissions)
        for kind in sc.WAIT_KINDS:  # at 0 too: a wait answered goes back to 0
            key: tuple[str | None, ...] = (kind, *labels)
            out[sc.METRIC_TASKS_WAITING_FOR_USER][key] += kind in waiting
            since = waiting.get(kind)
            waited = 0.0 if since is None else (now_ns - since) / 1e9
            _max(out, sc.METRIC_TASKS_WAITING_OLDEST, key, waited)
        for signal in sc.TROUBLE_SIGNALS:
            key = (signal, *labels)
            out[sc.METRIC_TASKS_TROUBLED][key] += _troubled(interaction, signal)
        context = interaction.context
        if context.current is not None:  # no figure, no series (never a 0 made up)
            key = (context.model or facts.model or sc.UNKNOWN, *labels)
            _max(out, sc.METRIC_TASKS_OPEN_CONTEXT, key, context.current)
            out[sc.METRIC_TASKS_OPEN_CONTEXT_HIGH][key] += context.current > sc.CONTEXT_HIGH
    return out


def _troubled(interaction: Interaction, signal: str) -> bool:
    """Has the task raised `signal`? A stall only while it lasts: until the task's next
    event (CopilotAgentStalled resolves then); the others for the rest of the task."""
    watch = interaction.watch
    if signal == sc.TROUBLE_STALLED:
        return signal in watch.raised and watch.stalled_at == interaction.last_ns
    return signal in watch.raised


def waits(
    interaction: Interaction, permissions: Mapping[str, tuple[int, str | None]]
) -> dict[str, int]:
    """What the task waits for a person for now (`semconv.WAIT_KINDS`), each with when its
    oldest open wait began (ns): a permission asked during it and not answered, a tool that
    asks (ask_user, exit_plan_mode) still running, a live request not answered."""
    since: dict[str, int] = {}

    def wait(kind: str, ns: int) -> None:
        since[kind] = min(since.get(kind, ns), ns)

    for kind, asked in list(interaction.watch.questions.values()):
        wait(kind, asked)
    start = interaction.root.start_ns
    for asked, _ in list(permissions.values()):
        if asked >= start:
            wait(sc.WAIT_PERMISSION, asked)
    for tool in list(interaction.tools.values()):
        asks = sc.WAITING_TOOLS.get(str(tool.span.attributes.get(sc.GEN_AI_TOOL_NAME)))
        if asks is not None:
            wait(asks, tool.span.start_ns)
    return since


#: The gauges `in_flight` computes.
TASK_METRICS = (
    sc.METRIC_TASKS_OPEN,
    sc.METRIC_TASKS_OPEN_OLDEST,
    sc.METRIC_TASKS_OPEN_SILENCE,
    sc.METRIC_TASKS_OPEN_TURNS,
    sc.METRIC_TASKS_OPEN_TOOL_CALLS,
    sc.METRIC_SUBAGENTS_RUNNING,
    sc.METRIC_SHELLS_RUNNING,
    sc.METRIC_TASKS_OPEN_REPEATS,
    sc.METRIC_TASKS_OPEN_TOOL_FAILURES,
    sc.METRIC_TASKS_WAITING_FOR_USER,
    sc.METRIC_TASKS_WAITING_OLDEST,
    sc.METRIC_TASKS_TROUBLED,
    sc.METRIC_TASKS_OPEN_CONTEXT,
    sc.METRIC_TASKS_OPEN_CONTEXT_HIGH,
)


def _labels(facts: SessionFacts, interaction: Interaction) -> Labels:
    """mode, repository (owner, name) and agent: bounded values, never a session id."""
    attribution = facts.attribution
    owner = attribution.get(sc.VCS_OWNER_NAME)
    name = attribution.get(sc.VCS_REPOSITORY_NAME)
    agent = interaction.main.span.attributes.get(sc.GEN_AI_AGENT_NAME)
    return (
        facts.mode,
        owner if isinstance(owner, str) else None,
        name if isinstance(name, str) else None,
        agent if isinstance(agent, str) else facts.agent_name or sc.MAIN_AGENT_NAME,
    )


def _add(out: InFlight, name: str, labels: Labels, value: float) -> None:
    out[name][labels] += value


def _max(out: InFlight, name: str, labels: tuple[str | None, ...], value: float) -> None:
    series = out[name]
    series[labels] = max(series.get(labels, 0.0), value, 0.0)


def label_dict(name: str, key: tuple[str | None, ...]) -> dict[str, AttributeValue]:
    """The labels of one of `in_flight`'s series, by name (a label without a value left
    out, as the meter leaves out a repository outside a git checkout)."""
    keys: tuple[str, ...] = (
        sc.COPILOT_MODE,
        sc.VCS_OWNER_NAME,
        sc.VCS_REPOSITORY_NAME,
        sc.GEN_AI_AGENT_NAME,
    )
    if name in (sc.METRIC_TASKS_WAITING_FOR_USER, sc.METRIC_TASKS_WAITING_OLDEST):
        keys = (sc.COPILOT_WAIT_KIND, *keys)
    elif name == sc.METRIC_TASKS_TROUBLED:
        keys = (sc.COPILOT_TROUBLE_SIGNAL, *keys)
    elif name in (sc.METRIC_TASKS_OPEN_CONTEXT, sc.METRIC_TASKS_OPEN_CONTEXT_HIGH):
        keys = (sc.GEN_AI_REQUEST_MODEL, *keys)
    return {k: v for k, v in zip(keys, key, strict=True) if v is not None}
