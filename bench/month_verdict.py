"""The verdicts of `bench/month.py`: is a sampled series flat, did every span arrive, were
repeats within one export batch per kill. Pure functions over the samples and the span tallies,
so that a test can feed them a series that grows and see them say so.

Why these definitions of "flat": a daemon that runs for months must not grow with the sessions
it has seen, only with those it follows now. A series is judged on its samples after the
warm-up, in the second half of the run, leaving out the first `settle` seconds after each
(re)start of the daemon (a restarted process grows back to its level; that is not a leak). Two
figures are computed there and both must be within their thresholds: the slope, per hour, of
the least-squares line through the highest value of each of `WINDOWS` equal stretches of time
(a leak raises the high-water level from stretch to stretch; a sawtooth such as the checkpoint
journal between compactions, or the noise of a sample, does not, where a line through every
sample would tilt with the phase the run ends in), and max minus min (a bounded sawtooth is
allowed up to a stated amplitude).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "SERIES",
    "Flatness",
    "Limit",
    "delivery",
    "flatness",
    "judged_samples",
    "slope_per_hour",
    "window_highs",
    "write_csv",
]


@dataclass(frozen=True)
class Limit:
    """How far a series may move once warm: `slope` per hour and `span` (max - min)."""

    unit: str
    slope: float
    span: float


#: The series sampled and judged, with their thresholds (chosen before the hour-long run).
SERIES: dict[str, Limit] = {
    "rss_mb": Limit("MB", slope=2.0, span=8.0),
    "fds": Limit("fds", slope=2.0, span=6.0),
    "threads": Limit("threads", slope=1.0, span=3.0),
    "series": Limit("series", slope=10.0, span=25.0),
    "state_kb": Limit("KiB", slope=256.0, span=512.0),
}
#: stretches of the judged time whose highest values the slope is fitted through
WINDOWS = 6


@dataclass(frozen=True)
class Flatness:
    """One series' figures over the judged samples, and the verdict."""

    name: str
    first: float
    last: float
    low: float
    high: float
    slope_per_h: float
    judged: int
    limit: Limit

    @property
    def flat(self) -> bool:
        return (
            self.judged >= 3
            and self.slope_per_h <= self.limit.slope
            and self.high - self.low <= self.limit.span
        )


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float:
    """The slope of the least-squares line through (seconds, value), per hour (0.0 for fewer
    than two distinct times)."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mean_t = math.fsum(t for t, _ in points) / n
    mean_v = math.fsum(v for _, v in points) / n
    var = math.fsum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    cov = math.fsum((t - mean_t) * (v - mean_v) for t, v in points)
    return cov / var * 3600.0


def window_highs(
    points: Sequence[tuple[float, float]], windows: int = WINDOWS
) -> list[tuple[float, float]]:
    """(middle of the stretch, highest value in it) for each of `windows` equal stretches of
    the time the points cover (stretches without a point are left out)."""
    if len(points) < 2:
        return list(points)
    start, end = points[0][0], points[-1][0]
    width = (end - start) / windows or 1.0
    highs: dict[int, float] = {}
    for t, v in points:
        index = min(int((t - start) / width), windows - 1)
        highs[index] = max(highs.get(index, v), v)
    return [(start + (i + 0.5) * width, v) for i, v in sorted(highs.items())]


def judged_samples(
    samples: Sequence[Mapping[str, float]], *, warmup_s: float, settle_s: float
) -> list[Mapping[str, float]]:
    """The samples a verdict is taken on: after `warmup_s`, in the second half of the run,
    and at least `settle_s` after the start of the process sampled (`up_s`)."""
    if not samples:
        return []
    end = samples[-1]["t_s"]
    start = max(warmup_s, end / 2)
    return [s for s in samples if s["t_s"] >= start and s["up_s"] >= settle_s]


def flatness(
    samples: Sequence[Mapping[str, float]],
    *,
    warmup_s: float,
    settle_s: float,
    limits: Mapping[str, Limit] = SERIES,
) -> list[Flatness]:
    """Each series' figures over the judged samples (`judged_samples`)."""
    judged = judged_samples(samples, warmup_s=warmup_s, settle_s=settle_s)
    out = []
    for name, limit in limits.items():
        values = [(s["t_s"], s[name]) for s in judged if not math.isnan(s[name])]
        ys = [v for _, v in values] or [math.nan]
        out.append(
            Flatness(
                name,
                first=ys[0],
                last=ys[-1],
                low=min(ys),
                high=max(ys),
                slope_per_h=slope_per_hour(window_highs(values)),
                judged=len(values),
                limit=limit,
            )
        )
    return out


def delivery(
    expected: Iterable[str],
    received: Mapping[str, int],
    batches: Sequence[int],
    kills: int,
) -> dict[str, Any]:
    """Spans expected (a clean replay's ids) against those received (id -> times received):
    lost, extra, repeats, and whether the repeats are within one export batch per kill (the
    largest batch received, times the kills)."""
    want = set(expected)
    repeats = sum(count - 1 for count in received.values())
    largest = max(batches, default=0)
    lost = len(want - set(received))
    return {
        "expected_spans": len(want),
        "received_distinct": len(received),
        "received_total": sum(received.values()),
        "lost": lost,
        "extra": len(set(received) - want),
        "repeats": repeats,
        "repeats_per_kill": round(repeats / kills, 1) if kills else float(repeats),
        "max_batch_spans": largest,
        "mean_batch_spans": round(sum(batches) / len(batches), 1) if batches else 0.0,
        "repeat_budget": largest * kills,
        "all_delivered": lost == 0 and bool(want),
        "repeats_within_budget": repeats <= largest * kills,
    }


def write_csv(path: Path, samples: Sequence[Mapping[str, float]]) -> None:
    """The samples, one row each, the columns of the first."""
    if not samples:
        path.write_text("")
        return
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(samples[0]))
        writer.writeheader()
        writer.writerows(samples)
