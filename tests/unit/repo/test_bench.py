"""The measuring harness (bench/) runs end to end at tiny sizes and writes every figure.

No figure's value is judged here (the machine is shared and noisy; the figures are read by
people, see bench/README.md): what is checked is that each section ran against the real
command, and that the JSON holds every figure, as numbers that hang together.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests import paths

REPO = paths.REPO
SIZES = {
    "--replay-sessions": "20",
    "--idle-sizes": "20",
    "--idle-seconds": "1",
    "--settle-seconds": "0.5",
    "--live-rates": "50",
    "--live-seconds": "3",
    "--live-sessions": "8",
    "--ready-sessions": "20",
    "--soak-minutes": "0.1",
    "--soak-sessions": "20",
    "--soak-sample-seconds": "2",
    "--kills": "1",
    "--kill-sessions": "4",
    "--start-timeout": "60",
}
FIGURES = {
    "corpus": ["sessions_20_events", "sessions_20_mb", "sessions_20_build_s"],
    "replay": [
        "sessions",
        "events",
        "startup_cpu_s",
        "bare_events_per_s",
        "file_events_per_s",
        "file_ratio",
        "none_events_per_s",
        "none_ratio",
        "jobs1_events_per_s",
        "jobs2_events_per_s",
        "jobs2_speedup",
    ],
    "idle": [
        f"20_{mode}_{figure}"
        for mode in ("ckpt", "nockpt")
        for figure in ("ready_s", "cpu_pct", "rss_mb")
    ],
    "live": [
        "rate50_events",
        "rate50_achieved_per_s",
        "rate50_run_cpu_ms_per_event",
        "rate50_replay_cpu_ms_per_event",
        "rate50_cpu_ratio",
        "rate50_replay_otlp_cpu_ms_per_event",
        "rate50_cpu_ratio_otlp",
        "rate50_traces",
        "rate50_latency_p50_ms",
        "rate50_latency_p99_ms",
        "latency_p50_ms",
        "latency_p99_ms",
        "from_end_event_p50_ms",
        "from_end_event_p99_ms",
    ],
    "ready": [
        "first_run_first_200_s",
        "first_run_ready_s",
        "first_run_caught_up_s",
        "first_run_503_s",
        "first_run_cpu_s",
        "restart_first_200_s",
        "restart_ready_s",
        "restart_503_s",
        "restart_events_read",
    ],
    "soak": [
        "sessions",
        "lines",
        "spans",
        "cpu_pct",
        *(f"{what}_{which}" for what in ("rss_mb", "fds") for which in ("first", "max", "last")),
    ],
    "kills": [
        "kills",
        "growing_at_once",
        "expected_spans",
        "received_spans",
        "lost",
        "conflicting",
        "extra",
        "repeats",
        "repeats_per_kill",
        "max_batch_spans",
    ],
}
#: figures that are "n/a" when the command under measure has no such option
OPTIONAL = {"jobs1_events_per_s", "jobs2_events_per_s", "jobs2_speedup"}


def test_every_section_runs_and_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    args = [sys.executable, "-m", "bench", "--scratch", str(tmp_path / "scratch"), "--out"]
    args += [str(out), *(item for pair in SIZES.items() for item in pair)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["machine"]["cores"] >= 1
    assert list(results["sections"]) == list(FIGURES)
    for section, names in FIGURES.items():
        figures = results["sections"][section]
        assert "error" not in figures, (section, figures["error"])
        assert isinstance(figures["seconds"], (int, float))
        for name in names:
            assert name in figures, f"{section}.{name} missing"
            value = figures[name]
            if value is None:
                assert name in OPTIONAL, f"{section}.{name} is n/a"
            else:
                assert isinstance(value, (int, float)) and value >= 0, (section, name, value)
        assert f"{section:<8}" in done.stdout  # the table has the section's rows
    sections = results["sections"]
    assert sections["replay"]["events"] == sections["corpus"]["sessions_20_events"]
    assert sections["live"]["rate50_traces"] > 0
    assert sections["kills"]["expected_spans"] > 0
    soak = sections["soak"]["series"]
    assert soak and all(point["rss_mb"] > 0 and point["fds"] > 0 for point in soak)
    assert not (tmp_path / "scratch").exists()  # the corpora do not outlive the run
