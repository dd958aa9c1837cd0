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
from typing import TYPE_CHECKING, Any

from .. import semconv as sc
from .._records import AttributeValue, Repairs, clamp_int
from ..decode._events import Event
from ._fields import compact, read_int, read_num, read_obj, read_str
from ._state import Interaction, OpenSpan, SessionFacts
from ._totals import Totals, read_totals

if TYPE_CHECKING:
    from ._meter import SessionMeter

__all__ = [
    "call_attributes",
    "count_call",
    "on_shutdown_accounting",
    "tool_changes",
]

#: aiCreditsStatus when no amount was reported (CLI schema, `AiCreditsStatus`): a numeric zero
#: is then "not a zero-cost claim".
CREDITS_UNAVAILABLE = "unavailable"
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


#: The most one LLM call can report, beyond which a usage record's number is taken for broken
#: or hostile and left out of the chat span (and so of every sum and metric made from it):
#: tokens of each kind (context windows are millions of tokens; a billion is far past any),
#: its cost in premium requests (a model's multiplier: 0 to some tens), its AI credits in
#: nano-AIU (a thousand AIU). A negative number is left out too. docs/metrics.md says them.
MAX_CALL_TOKENS = 1_000_000_000
MAX_CALL_COST = 1_000.0
MAX_CALL_NANO_AIU = 1e12
_COST_BOUNDS: dict[str, float] = {
    sc.COPILOT_USAGE_COST: MAX_CALL_COST,
    sc.COPILOT_USAGE_AI_CREDITS: MAX_CALL_NANO_AIU,
}


def drop_implausible(attributes: dict[str, AttributeValue]) -> int:
    """Take out of a chat span's attributes every usage number no call can have: one record
    with 1e30 tokens or cost would otherwise own every total and dashboard of its model for
    good (a counter never goes back). Returns how many were taken out, for
    otel_bridge.values.repaired (reason implausible)."""
    dropped = []
    for key, value in attributes.items():
        if key in _COST_BOUNDS:
            bound = _COST_BOUNDS[key]
        elif key.startswith("gen_ai.usage.") and key.endswith("tokens"):
            bound = MAX_CALL_TOKENS
        else:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not 0 <= value <= bound:
            dropped.append(key)
    for key in dropped:
        del attributes[key]
    return len(dropped)


#: A usage record's token counts (`read_int`): a number beyond 64 bits among them reads as
#: none, and is counted as implausible by `unreadable_tokens`.
_TOKEN_FIELDS = (
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "reasoningTokens",
    "cacheWriteTokens",
)


def unreadable_tokens(usage: Mapping[str, Any]) -> int:
    """Token counts of a usage record that are numbers no integer holds (1e30, a 31-digit
    integer): `read_int` gives None for them, so they never reach the span for
    `drop_implausible` to count; they are as implausible as 2e9, and counted the same."""
    count = 0
    for key in _TOKEN_FIELDS:
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            count += read_int(usage, key) is None
    return count


def count_call(facts: SessionFacts, attributes: Mapping[str, AttributeValue]) -> None:
    """Tally a call as billed or bring-your-own-key (a session of BYOK calls only has no cost
    to show). Its cost is counted from its chat span (`_spanmetrics`)."""
    if attributes.get(sc.COPILOT_USAGE_BYOK) is True:
        facts.byok_calls += 1
    else:
        facts.billed_calls += 1


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


def on_shutdown_accounting(
    facts: SessionFacts, meter: SessionMeter, interaction: Interaction | None, event: Event
) -> None:
    """session.shutdown: count what its snapshot adds to the previous one, and put it on the
    task the shutdown ends, if one is still open (called before the shutdown closes it). A
    task already exported (the usual case: an interactive task ends with its last turn) cannot
    be changed any more: then the figures are in the metrics and `stats` only."""
    totals = read_totals(event.data, facts.accounting)
    if totals is None:
        return
    if totals.implausible:
        meter.repaired(Repairs(implausible=totals.implausible))
    added = totals.minus(facts.accounting)
    facts.accounting = totals
    byok = facts.byok_calls > 0 and facts.billed_calls == 0
    # A cost of 0 is a fact only when some call of the session was billed (not BYOK): a
    # session of BYOK calls, or of an older CLI that writes no usage records, reports 0
    # whatever it cost.
    priced = not byok and (facts.billed_calls > 0 or added.premium > 0)
    _count_segment(meter, added, priced)
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


def _count_segment(meter: SessionMeter, added: Totals, priced: bool) -> None:
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
