"""How full each agent's context window is: per LLM call, per task, and for the open tasks now.

What the log says, and the rule read from it (docs/spans.md, "Context window"):

- a usage record (live: assistant.usage) has `inputTokens`, `cacheReadTokens` and
  `maxPromptTokens`, the prompt limit of that call's model. `inputTokens` is the provider's
  prompt tokens as the API reported them, cache reads included: a recorded call whose server
  said `prompt_tokens` 1207 and `cached_tokens` 100 is written `inputTokens` 1207,
  `cacheReadTokens` 100 (tests/fixtures, made by the CLI against the fake model server). So a
  call's context tokens are its `inputTokens`, never plus its cache reads;
- `session.compaction_start` has the window's `tokenLimit`; `session.compaction_complete`
  the tokens before and after (`preCompactionTokens`, `postCompactionTokens`, `tokensRemoved`);
- `session.truncation` has `tokenLimit`, the message tokens before and after and
  `tokensRemovedDuringTruncation`;
- live only, `session.usage_info` has `currentTokens` and `tokenLimit`.

A number that cannot be a window (a limit of 0 or below, beyond `MAX_CALL_TOKENS`, text, tokens
above their limit) gives no utilization: it is counted as implausible
(otel_bridge.values.repaired) and nothing else stops. Pure: the handlers pass what they read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import semconv as sc
from .._records import AttributeValue, clamp_int
from ._accounting import MAX_CALL_TOKENS
from ._fields import read_int
from ._state import ContextWatch

__all__ = [
    "call_context",
    "on_call",
    "on_compaction_complete",
    "on_compaction_start",
    "on_truncation",
    "on_usage_info",
    "task_attributes",
]


def call_context(usage: Mapping[str, Any], attributes: dict[str, AttributeValue]) -> int:
    """Put a call's context on its chat span's `attributes` (whose input tokens are already
    checked, `drop_implausible`): `copilot.context.tokens` (its input tokens),
    `copilot.context.limit` (`maxPromptTokens`) and `copilot.context.utilization` (their
    ratio, when the limit is a window that holds the tokens). Returns how many values were
    left out as implausible. A record without a limit costs one dict read more."""
    tokens = attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS)
    if type(tokens) is int:
        attributes[sc.COPILOT_CONTEXT_TOKENS] = tokens
    else:
        tokens = None
    if usage.get("maxPromptTokens") is None:
        return 0  # an older CLI, a provider without a limit: no attribute, no series
    limit = read_int(usage, "maxPromptTokens")
    if limit is None or not 0 < limit <= MAX_CALL_TOKENS:
        return 1
    attributes[sc.COPILOT_CONTEXT_LIMIT] = limit
    if tokens is None:
        # text where a number belongs is as broken as a huge one (which `unreadable_tokens`
        # counted already)
        return 1 if isinstance(usage.get("inputTokens"), str) else 0
    if tokens > limit:
        return 1  # more than the window holds: one of the two is wrong
    attributes[sc.COPILOT_CONTEXT_UTILIZATION] = tokens / limit
    return 0


def on_call(watch: ContextWatch, attributes: Mapping[str, AttributeValue]) -> None:
    """A chat span of the task: its utilization is the task's latest, and maybe its peak."""
    utilization = attributes.get(sc.COPILOT_CONTEXT_UTILIZATION)
    if not isinstance(utilization, float):
        return
    tokens = attributes.get(sc.COPILOT_CONTEXT_TOKENS)
    limit = attributes.get(sc.COPILOT_CONTEXT_LIMIT)
    model = attributes.get(sc.GEN_AI_REQUEST_MODEL)
    watch.current = utilization
    watch.limit = limit if isinstance(limit, int) else watch.limit
    watch.model = model if isinstance(model, str) else watch.model
    if watch.peak is None or utilization > watch.peak:
        watch.peak = utilization
        watch.peak_tokens = tokens if isinstance(tokens, int) else 0
        watch.peak_limit = limit if isinstance(limit, int) else 0


def _count(data: Mapping[str, Any], key: str) -> int | None:
    """A token count of a compaction or truncation event, when it is one (0 to
    `MAX_CALL_TOKENS`)."""
    value = read_int(data, key)
    return value if value is not None and 0 <= value <= MAX_CALL_TOKENS else None


def _limit(watch: ContextWatch, data: Mapping[str, Any]) -> int | None:
    """An event's `tokenLimit`, which becomes the task's latest; the latest known when the
    event has none; None when it has one no window can have (then its tokens say nothing)."""
    value = read_int(data, "tokenLimit")
    if value is not None and 0 < value <= MAX_CALL_TOKENS:
        watch.limit = value
        return value
    return watch.limit if data.get("tokenLimit") is None else None


def _now(watch: ContextWatch, tokens: int | None, limit: int | None) -> None:
    """The task's latest utilization, when `tokens` fit the window `limit`."""
    if tokens is not None and limit and tokens <= limit:
        watch.current = tokens / limit


def _removed(watch: ContextWatch, removed: int | None) -> None:
    if removed is not None:
        watch.removed = clamp_int((watch.removed or 0) + removed)


def on_compaction_start(watch: ContextWatch, data: Mapping[str, Any]) -> None:
    """session.compaction_start: the window it compacts for (`tokenLimit`), and where the
    context stands (`currentTokens`)."""
    _now(watch, _count(data, "currentTokens"), _limit(watch, data))


def on_compaction_complete(watch: ContextWatch, data: Mapping[str, Any]) -> int:
    """session.compaction_complete: one more compaction of the task (failed ones too), the
    tokens it removed (`tokensRemoved`, else before minus after), where the context stands
    after it. Returns the task's compactions so far."""
    watch.compactions += 1
    post = _count(data, "postCompactionTokens")
    _removed(watch, _removed_tokens(data, "tokensRemoved", "preCompactionTokens", post))
    _now(watch, post, watch.limit)
    return watch.compactions


def on_truncation(watch: ContextWatch, data: Mapping[str, Any]) -> None:
    """session.truncation: one more truncation, the tokens it removed, where the context
    stands after it (its messages' tokens: the only figure the event has)."""
    watch.truncations += 1
    limit = _limit(watch, data)
    post = _count(data, "postTruncationTokensInMessages")
    removed = _removed_tokens(
        data, "tokensRemovedDuringTruncation", "preTruncationTokensInMessages", post
    )
    _removed(watch, removed)
    _now(watch, post, limit)


def _removed_tokens(
    data: Mapping[str, Any], removed_key: str, pre_key: str, post: int | None
) -> int | None:
    """What the event says it removed, else before minus after (never a negative count)."""
    removed = _count(data, removed_key)
    pre = _count(data, pre_key)
    if removed is None and pre is not None and post is not None and pre >= post:
        removed = pre - post
    return removed


def on_usage_info(watch: ContextWatch, data: Mapping[str, Any]) -> None:
    """Live session.usage_info (never on disk): where the context stands now. It moves the
    running-now gauges only, never a span: a span is what the log says."""
    _now(watch, _count(data, "currentTokens"), _limit(watch, data))


def task_attributes(watch: ContextWatch) -> dict[str, AttributeValue]:
    """What goes on a task's root: its peak (absent when no call had a utilization) and its
    compactions, truncations and the tokens they removed (absent when there were none)."""
    out: dict[str, AttributeValue] = {}
    if watch.peak is not None:
        out[sc.COPILOT_TASK_CONTEXT_MAX_UTILIZATION] = watch.peak
        out[sc.COPILOT_TASK_CONTEXT_TOKENS] = watch.peak_tokens
        out[sc.COPILOT_TASK_CONTEXT_LIMIT] = watch.peak_limit
    if watch.compactions:
        out[sc.COPILOT_TASK_COMPACTIONS] = watch.compactions
    if watch.truncations:
        out[sc.COPILOT_TASK_TRUNCATIONS] = watch.truncations
    if watch.removed is not None:
        out[sc.COPILOT_TASK_CONTEXT_TOKENS_REMOVED] = watch.removed
    return out
