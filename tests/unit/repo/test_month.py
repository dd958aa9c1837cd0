"""bench/month.py ("a month in an hour"): its verdicts say flat only of what is flat, lost only
of what was lost; and the bench runs end to end for about a minute against the real command.

Its figures are not judged here (timing and memory are the bench's business, on a shared
machine): what is checked is that a series that grows fails, that a sawtooth within its bound
and a restart's dip pass, that a lost span or a repeat beyond one batch per kill fails, and
that a short run delivers every span and writes every figure.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

from bench.month_verdict import SERIES, delivery, flatness, judged_samples, slope_per_hour
from tests import paths

REPO = paths.REPO


def _samples(value: object, *, minutes: float = 60, every: float = 5) -> list[dict[str, float]]:
    """Samples every `every` seconds whose every series is value(t_s) (one restart at 40
    minutes: `up_s` counts from it)."""
    out = []
    for i in range(int(minutes * 60 / every)):
        t = i * every
        up = t if t < 2400 else t - 2400
        v = float(value(t))  # type: ignore[operator]
        out.append({"t_s": t, "up_s": up, **{name: v for name in SERIES}})
    return out


def test_the_slope_is_growth_per_hour() -> None:
    assert slope_per_hour([(0, 10.0), (1800, 15.0), (3600, 20.0)]) == 10.0
    assert slope_per_hour([(0, 1.0)]) == 0.0


def test_a_flat_noisy_series_is_flat() -> None:
    rng = random.Random(1)
    verdicts = flatness(_samples(lambda t: 40 + rng.uniform(0, 1)), warmup_s=300, settle_s=120)
    assert [f.name for f in verdicts if not f.flat] == []


def test_a_series_that_grows_is_not_flat() -> None:
    # 3 units an hour: over the slope limit of every series but the state directory's
    verdicts = flatness(_samples(lambda t: 40 + 3 * t / 3600), warmup_s=300, settle_s=120)
    assert {f.name for f in verdicts if not f.flat} == {"rss_mb", "fds", "threads"}
    # and a state directory that gains a MiB an hour is not flat either
    grows = flatness(_samples(lambda t: 100 + 1024 * t / 3600), warmup_s=300, settle_s=120)
    assert "state_kb" in {f.name for f in grows if not f.flat}


def test_a_bounded_sawtooth_is_flat_and_a_taller_one_is_not() -> None:
    small = flatness(_samples(lambda t: 200 + (t % 180) * 2), warmup_s=300, settle_s=120)
    assert next(f for f in small if f.name == "state_kb").flat
    tall = flatness(_samples(lambda t: 200 + (t % 180) * 5), warmup_s=300, settle_s=120)
    assert not next(f for f in tall if f.name == "state_kb").flat


def test_the_first_minutes_after_a_restart_are_not_judged() -> None:
    # the daemon grows back to its level after the restart at 40 minutes
    def level(t: float) -> float:
        return 40.0 if t < 2400 or t >= 2460 else 40.0 * (t - 2400) / 60

    samples = _samples(level)
    judged = judged_samples(samples, warmup_s=300, settle_s=120)
    assert judged and all(s["t_s"] >= 1800 and not 2400 <= s["t_s"] < 2520 for s in judged)
    assert all(f.flat for f in flatness(samples, warmup_s=300, settle_s=120))
    # judged from the restart on, the climb back is seen
    assert not all(f.flat for f in flatness(samples, warmup_s=300, settle_s=0))


def test_too_few_samples_are_no_verdict_of_flat() -> None:
    assert not any(
        f.flat for f in flatness(_samples(lambda t: 1.0, minutes=1), warmup_s=300, settle_s=120)
    )


def test_delivery_counts_lost_extra_and_repeats_against_one_batch_per_kill() -> None:
    expected = ["a", "b", "c", "d"]
    good = delivery(expected, {"a": 2, "b": 1, "c": 1, "d": 3}, [2, 3, 1], kills=1)
    assert good["lost"] == 0 and good["repeats"] == 3 and good["repeat_budget"] == 3
    assert good["all_delivered"] and good["repeats_within_budget"]
    lost = delivery(expected, {"a": 1, "b": 1, "x": 1}, [3], kills=1)
    assert (lost["lost"], lost["extra"], lost["all_delivered"]) == (2, 1, False)
    over = delivery(expected, {"a": 3, "b": 1, "c": 1, "d": 3}, [2, 3, 1], kills=1)
    assert not over["repeats_within_budget"]
    assert not delivery([], {}, [], kills=0)["all_delivered"]  # nothing expected: no verdict


def test_a_minute_of_the_bench_delivers_every_span(tmp_path: Path) -> None:
    figures_path, csv_path = tmp_path / "month.json", tmp_path / "month.csv"
    args = [sys.executable, "bench/month.py", "--minutes", "1", "--rate", "20"]
    args += ["--kills", "1", "--outages", "1", "--outage-seconds", "5", "--keep", "5"]
    args += ["--retire-seconds", "5"]
    args += ["--sample-seconds", "2", "--warmup-minutes", "0.2", "--settle-seconds", "10"]
    args += ["--json", str(figures_path), "--csv", str(csv_path)]
    args += ["--scratch", str(tmp_path)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    figures = json.loads(figures_path.read_text())
    # a one-minute run is too short to judge flatness: only delivery is judged here
    spans = figures["delivery"]
    assert spans["expected_spans"] > 0 and spans["lost"] == 0 and spans["extra"] == 0, spans
    assert spans["repeats_within_budget"], spans
    assert figures["deleted"] > 0  # sessions were archived and deleted while it ran
    assert [what for _, what in figures["events"]] == ["down", "up", "kill"]
    assert "checkpoints.jsonl" in figures["state_files"]
    rows = list(csv.DictReader(csv_path.read_text().splitlines()))
    assert len(rows) >= 10 and all(float(r["rss_mb"]) > 0 and float(r["fds"]) > 0 for r in rows)
    assert {f["name"] for f in figures["flat"]} == set(SERIES)
    assert ("verdict: PASS" in done.stdout) == figures["ok"]
    assert done.returncode == (0 if figures["ok"] else 1), done.stderr[-2000:]
