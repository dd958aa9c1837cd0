"""What agents cost and what they change: per LLM call, per session segment, per tool call.

Three sources in the log, and which one each figure counts (docs/metrics.md, "Cost and code
changes"):

- **per call**: `session.usage_record` (live: `assistant.usage`) carries the call's `cost` (its
  premium requests: the model's multiplier) and, from the Copilot API, AI credits in nano-AIU
  (`copilotUsage.totalNanoAiu`) with `aiCreditsStatus`. They go on the chat span and into
  `copilot.premium_requests` and `copilot.ai_credits`.
- **per session**: `session.shutdown` carries the CLI's own accounting (`accountingSnapshot`),
  cumulative over the whole session, resumes included: a resumed session's second shutdown
  repeats the first one's figures plus what the new segment added. Only the difference from
  the previous snapshot is counted (`copilot.session.premium_requests`,
  `copilot.session.ai_credits`, `copilot.code.lines`, `copilot.code.files_modified`), so no
  figure is counted twice; the previous snapshot's figures are part of the session's facts and
  of its checkpoint (`Totals.to_json`), so a restart of the bridge between two segments still
  counts only the difference.
- **per tool call**: the built-in edit tools (`create`, `edit`) report the lines they added
  and removed (`toolTelemetry.metrics`) and the files they wrote (`fileEdits`): on the tool's
  span, and summed on its task's root (`copilot.task.lines_*`). Not counted in metrics (the
  snapshot is, once).

The two cost sources can disagree: the snapshot's `totalPremiumRequestCost` is the
user-initiated cost (CLI schema: "User-initiated premium request cost (with multiplier
applied)") while every usage record has a `cost`; and a session whose CLI was killed has usage
records but no shutdown of that segment until it is resumed. So each metric counts one source
and says which.

A bring-your-own-key provider (`isByok`) reports a cost of 0 and no AI credits
(`aiCreditsStatus: unavailable`): not a fact that the call was free, so the span says
`copilot.usage.byok=true` and carries no cost, and no cost is counted for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import semconv as sc
from .._events import Event
from .._records import AttributeValue, clamp_int
from ._fields import compact, read_int, read_num, read_obj, read_str
from ._state import Interaction, OpenSpan

if TYPE_CHECKING:
    from ._session import SessionAssembler

__all__ = [
    "Totals",
    "call_attributes",
    "count_call",
    "on_shutdown_accounting",
    "tool_changes",
]

#: aiCreditsStatus when no amount was reported (CLI schema, `AiCreditsStatus`): a numeric zero
#: is then "not a zero-cost claim".
CREDITS_UNAVAILABLE = "unavailable"
#: At most this many models are remembered per snapshot (a bound on the checkpoint's size).
MAX_MODELS = 64


@dataclass(slots=True)
class Totals:
    """The figures of one accounting snapshot (cumulative over the session), or a difference
    of two."""

    premium: float = 0.0
    nano_aiu: float = 0.0
    credits_status: str | None = None
    lines_added: int = 0
    lines_removed: int = 0
    files: int = 0
    #: per model: [premium request cost, nano-AIU]
    models: dict[str, list[float]] = field(default_factory=dict)

    def minus(self, previous: Totals | None) -> Totals:
        """What this snapshot adds to `previous` (none: all of it). A figure never goes down:
        one that did (a snapshot of something else) counts nothing rather than a negative."""
        if previous is None:
            return self
        models = {}
        for model, (cost, credits) in self.models.items():
            before = previous.models.get(model, [0.0, 0.0])
            models[model] = [max(0.0, cost - before[0]), max(0.0, credits - before[1])]
        return Totals(
            premium=max(0.0, self.premium - previous.premium),
            nano_aiu=max(0.0, self.nano_aiu - previous.nano_aiu),
            credits_status=self.credits_status,
            lines_added=max(0, self.lines_added - previous.lines_added),
            lines_removed=max(0, self.lines_removed - previous.lines_removed),
            files=max(0, self.files - previous.files),
            models=models,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "premium": self.premium,
            "nano_aiu": self.nano_aiu,
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
            "files": self.files,
            "models": {m: list(v) for m, v in self.models.items()},
        }

    @classmethod
    def from_json(cls, saved: Any) -> Totals | None:
        """A `to_json()` taken back; None if it is not one."""
        if not isinstance(saved, Mapping):
            return None
        models: dict[str, list[float]] = {}
        raw = saved.get("models")
        if isinstance(raw, Mapping):
            for model, pair in list(raw.items())[:MAX_MODELS]:
                if isinstance(model, str) and isinstance(pair, list) and len(pair) == 2:
                    models[model] = [_number(pair[0]), _number(pair[1])]
        return cls(
            premium=_number(saved.get("premium")),
            nano_aiu=_number(saved.get("nano_aiu")),
            lines_added=int(_number(saved.get("lines_added"))),
            lines_removed=int(_number(saved.get("lines_removed"))),
            files=int(_number(saved.get("files"))),
            models=models,
        )


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def read_totals(data: Mapping[str, Any]) -> Totals | None:
    """The figures of a session.shutdown: its `accountingSnapshot` (CLI 1.0.102), else the
    older top-level fields (`totalPremiumRequests`, `totalNanoAiu`, `codeChanges`,
    `modelMetrics`); None when it has neither (CLI 1.0.81 and 1.0.92 write no accounting)."""
    snapshot = read_obj(data, "accountingSnapshot")
    source: Mapping[str, Any]
    if snapshot is not None:
        premium = read_num(snapshot, "totalPremiumRequestCost")
        nano = read_num(snapshot, "totalNanoAiu")
        status = read_str(snapshot, "aiCreditsStatus")
        source = snapshot
    else:
        premium = read_num(data, "totalPremiumRequests")
        nano = read_num(data, "totalNanoAiu")
        status = None
        source = data
    changes = read_obj(source, "codeChanges")
    if premium is None and nano is None and changes is None:
        return None
    # The list of distinct paths, rather than `filesModifiedCount`: CLI 1.0.102 was seen to
    # list two files with a count of 1 after a resume (the edit_subagent fixture).
    listed = changes.get("filesModified") if changes is not None else None
    files = len(listed) if isinstance(listed, list) else read_int(changes, "filesModifiedCount")
    models: dict[str, list[float]] = {}
    metrics = read_obj(source, "modelMetrics") or {}
    for model, metric in list(metrics.items())[:MAX_MODELS]:
        cost = read_num(read_obj(metric, "requests"), "cost")
        models[str(model)] = [cost or 0.0, read_num(metric, "totalNanoAiu") or 0.0]
    return Totals(
        premium=premium or 0.0,
        nano_aiu=nano or 0.0,
        credits_status=status,
        lines_added=read_int(changes, "linesAdded") or 0,
        lines_removed=read_int(changes, "linesRemoved") or 0,
        files=files or 0,
        models=models,
    )


# --- per LLM call ------------------------------------------------------------------------------


def call_attributes(usage: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """A usage record's cost on its chat span: `copilot.usage.cost` (premium requests) and
    `copilot.usage.ai_credits` (nano-AIU, when the call reported an amount), or, for a
    bring-your-own-key call, `copilot.usage.byok=true` and no cost (its 0 is not a price; a
    cost above 0, which the CLI does not write for one, would be kept, so that the chat spans'
    costs always sum to the usage records')."""
    status = read_str(usage, "aiCreditsStatus")
    cost = read_num(usage, "cost")
    if usage.get("isByok") is True and not cost:
        return compact({sc.COPILOT_USAGE_BYOK: True, sc.COPILOT_USAGE_AI_CREDITS_STATUS: status})
    credits = read_num(read_obj(usage, "copilotUsage"), "totalNanoAiu")
    if status == CREDITS_UNAVAILABLE:
        credits = None
    return compact(
        {
            sc.COPILOT_USAGE_COST: cost,
            sc.COPILOT_USAGE_AI_CREDITS: credits,
            sc.COPILOT_USAGE_AI_CREDITS_STATUS: status,
        }
    )


def count_call(session: SessionAssembler, attributes: Mapping[str, AttributeValue]) -> None:
    """Tally a call as billed or bring-your-own-key (a session of BYOK calls only has no cost
    to show). Its cost is counted from its chat span (`_spanmetrics`)."""
    if attributes.get(sc.COPILOT_USAGE_BYOK) is True:
        session.facts.byok_calls += 1
    else:
        session.facts.billed_calls += 1


# --- per tool call -----------------------------------------------------------------------------


def tool_changes(
    interaction: Interaction, span: OpenSpan, data: Mapping[str, Any], *, to_root: bool = True
) -> None:
    """A built-in edit tool's changes (`toolTelemetry.metrics.linesAdded/linesRemoved`, the
    paths of `fileEdits`) on its span, and the lines summed on its task's root (not those of
    a junk sub-agent's tool: `to_root` False). The paths are text like any other: `--paths`
    rewrites them on export."""
    metrics = read_obj(read_obj(data, "toolTelemetry"), "metrics")
    added = read_int(metrics, "linesAdded")
    removed = read_int(metrics, "linesRemoved")
    edits = data.get("fileEdits")
    paths = (
        [p for e in edits if isinstance(e, dict) and (p := read_str(e, "path"))]
        if isinstance(edits, list)
        else []
    )
    if added is None and removed is None and not paths:
        return
    span.attributes.update(
        compact(
            {
                sc.COPILOT_CODE_LINES_ADDED: added,
                sc.COPILOT_CODE_LINES_REMOVED: removed,
                sc.COPILOT_CODE_FILES: paths or None,
            }
        )
    )
    if interaction.root_exported or not to_root:
        return  # late work: the task's root is gone already
    root = interaction.root.attributes
    for key, value in (
        (sc.COPILOT_TASK_LINES_ADDED, added),
        (sc.COPILOT_TASK_LINES_REMOVED, removed),
    ):
        if value is not None:
            previous = root.get(key, 0)
            # saturated: a sum of counts from the log must stay a value OTLP carries
            root[key] = clamp_int((previous if isinstance(previous, int) else 0) + value)


# --- per session -------------------------------------------------------------------------------


def on_shutdown_accounting(session: SessionAssembler, event: Event) -> None:
    """session.shutdown: count what its snapshot adds to the previous one, and put it on the
    task the shutdown ends, if one is still open (called before the shutdown closes it). A
    task already exported (the usual case: an interactive task ends with its last turn) cannot
    be changed any more: then the figures are in the metrics and `stats` only."""
    totals = read_totals(event.data)
    if totals is None:
        return
    facts = session.facts
    added = totals.minus(facts.accounting)
    facts.accounting = totals
    byok = facts.byok_calls > 0 and facts.billed_calls == 0
    # A cost of 0 is a fact only when some call of the session was billed (not BYOK): a
    # session of BYOK calls, or of an older CLI that writes no usage records, reports 0
    # whatever it cost.
    priced = not byok and (facts.billed_calls > 0 or added.premium > 0)
    _count_segment(session, added, priced)
    interaction = session.interaction
    if interaction is not None and not interaction.root_exported:
        interaction.root.attributes.update(_segment_attributes(added, byok, priced))


def _segment_attributes(added: Totals, byok: bool, priced: bool) -> dict[str, AttributeValue]:
    credits = added.credits_status not in (None, CREDITS_UNAVAILABLE) and not byok
    return compact(
        {
            sc.COPILOT_SESSION_PREMIUM_REQUESTS: added.premium if priced else None,
            sc.COPILOT_USAGE_BYOK: True if byok else None,
            sc.COPILOT_SESSION_AI_CREDITS: added.nano_aiu if credits else None,
            sc.COPILOT_SESSION_AI_CREDITS_STATUS: added.credits_status,
            sc.COPILOT_SESSION_LINES_ADDED: added.lines_added,
            sc.COPILOT_SESSION_LINES_REMOVED: added.lines_removed,
            sc.COPILOT_SESSION_FILES_MODIFIED: added.files,
        }
    )


def _count_segment(session: SessionAssembler, added: Totals, priced: bool) -> None:
    meter = session.meter
    if not meter.observing:
        return
    if priced:
        models = added.models or {sc.UNKNOWN: [added.premium, added.nano_aiu]}
        credits = added.credits_status not in (None, CREDITS_UNAVAILABLE)
        for model, (cost, nano) in models.items():
            labels = {sc.GEN_AI_REQUEST_MODEL: model}
            meter.add_value(sc.METRIC_SESSION_PREMIUM_REQUESTS, cost, labels)
            if credits:
                meter.add_value(sc.METRIC_SESSION_AI_CREDITS, nano, labels)
    for change, lines in (
        (sc.CHANGE_ADDED, added.lines_added),
        (sc.CHANGE_REMOVED, added.lines_removed),
    ):
        if lines:
            meter.add_value(sc.METRIC_CODE_LINES, lines, {sc.COPILOT_CHANGE: change})
    if added.files:
        meter.add_value(sc.METRIC_CODE_FILES_MODIFIED, added.files, {})
