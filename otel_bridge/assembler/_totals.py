"""The figures of an accounting snapshot (`session.shutdown`), as the session's facts keep them
between snapshots: apart from `_accounting`, which counts them, so that the open state
(`_state.SessionFacts`) can hold them without importing what counts them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._fields import read_num, read_obj, read_str

__all__ = ["MAX_MODELS", "MAX_SESSION_COST", "MAX_SESSION_LINES", "Totals", "read_totals"]

#: At most this many models are remembered per snapshot (a bound on the checkpoint's size).
MAX_MODELS = 64
#: The most one session's snapshot can report, beyond which a figure is taken for broken or
#: hostile, left out (as 0) and counted as implausible (otel_bridge.values.repaired): these
#: are cumulative counters' increments, and one shutdown with 1e30 would own every total of
#: its model for good. A thousand LLM calls at the most one call can cost
#: (`_accounting.MAX_CALL_COST`, `MAX_CALL_NANO_AIU`); a billion lines changed.
MAX_SESSION_COST = 1_000_000.0
MAX_SESSION_NANO_AIU = 1e15
MAX_SESSION_LINES = 1_000_000_000


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
    #: figures of the snapshot left out as implausible (not kept in checkpoints)
    implausible: int = 0

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


def read_totals(data: Mapping[str, Any], previous: Totals | None = None) -> Totals | None:
    """The figures of a session.shutdown: its `accountingSnapshot` (CLI 1.0.102), else the
    older top-level fields (`totalPremiumRequests`, `totalNanoAiu`, `codeChanges`,
    `modelMetrics`); None when it has neither (CLI 1.0.81 and 1.0.92 write no accounting).
    A figure beyond what a session can report (`MAX_SESSION_COST`...) or negative is left
    out, counted in `Totals.implausible`: it keeps `previous`'s value (the last snapshot's),
    so that it adds nothing now and the next snapshot does not count it all again."""
    last = previous if previous is not None else Totals()
    bounded = _Bounds()
    snapshot = read_obj(data, "accountingSnapshot")
    source: Mapping[str, Any]
    if snapshot is not None:
        premium = bounded(
            read_num(snapshot, "totalPremiumRequestCost"), MAX_SESSION_COST, last.premium
        )
        nano = bounded(read_num(snapshot, "totalNanoAiu"), MAX_SESSION_NANO_AIU, last.nano_aiu)
        status = read_str(snapshot, "aiCreditsStatus")
        source = snapshot
    else:
        premium = bounded(read_num(data, "totalPremiumRequests"), MAX_SESSION_COST, last.premium)
        nano = bounded(read_num(data, "totalNanoAiu"), MAX_SESSION_NANO_AIU, last.nano_aiu)
        status = None
        source = data
    changes = read_obj(source, "codeChanges")
    if premium is None and nano is None and changes is None:
        return None
    # The list of distinct paths, rather than `filesModifiedCount`: CLI 1.0.102 was seen to
    # list two files with a count of 1 after a resume (the edit_subagent fixture).
    listed = changes.get("filesModified") if changes is not None else None
    if isinstance(listed, list):
        files: float | None = len(listed)
    else:
        files = bounded(read_num(changes, "filesModifiedCount"), MAX_SESSION_LINES, last.files)
    models: dict[str, list[float]] = {}
    metrics = read_obj(source, "modelMetrics") or {}
    for model, metric in list(metrics.items())[:MAX_MODELS]:
        before = last.models.get(str(model), [0.0, 0.0])
        cost = bounded(read_num(read_obj(metric, "requests"), "cost"), MAX_SESSION_COST, before[0])
        nano_aiu = bounded(read_num(metric, "totalNanoAiu"), MAX_SESSION_NANO_AIU, before[1])
        models[str(model)] = [cost or 0.0, nano_aiu or 0.0]
    return Totals(
        premium=premium or 0.0,
        nano_aiu=nano or 0.0,
        credits_status=status,
        lines_added=int(
            bounded(read_num(changes, "linesAdded"), MAX_SESSION_LINES, last.lines_added) or 0
        ),
        lines_removed=int(
            bounded(read_num(changes, "linesRemoved"), MAX_SESSION_LINES, last.lines_removed) or 0
        ),
        files=int(files or 0),
        models=models,
        implausible=bounded.dropped,
    )


class _Bounds:
    """A number within [0, bound] as it is; outside, `keep` instead (counted in `dropped`)."""

    __slots__ = ("dropped",)

    def __init__(self) -> None:
        self.dropped = 0

    def __call__(self, value: float | None, bound: float, keep: float) -> float | None:
        if value is None or 0 <= value <= bound:
            return value
        self.dropped += 1
        return keep
