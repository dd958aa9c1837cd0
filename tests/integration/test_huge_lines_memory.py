"""Hostile huge lines cost no more memory than their size: five lines of a million values and
five nested a million deep, each of 4 MiB, keep replay's peak resident size under its peak on
the same log without them plus 3x --max-line-bytes (before the pre-scan of otel_bridge/_wide.py
each such line was decoded into Python objects before it was refused: 16 MB lines took a
replay from 35 MB to 396 MB)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import paths
from tests.processes import bridge_env

MAX_LINE = 5 << 20
SIZE = 4 << 20
TS = "2026-11-30T04:20:51.463Z"


def _hostile(index: int, content: str) -> str:
    data = '{"toolCallId":"t' + str(index) + '","success":true,"result":{"content":' + content
    return (
        '{"type":"tool.execution_complete","id":"h'
        + str(index)
        + '","timestamp":"'
        + TS
        + '","data":'
        + data
        + "}}}"
    )


def _peak_kib(log_dir: Path) -> tuple[int, str]:
    """Peak resident size (KiB) of `replay log_dir` and its last log line."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "otel_bridge",
            "replay",
            "--max-line-bytes",
            str(MAX_LINE),
            str(log_dir),
        ],
        env=bridge_env({"OTEL_TRACES_EXPORTER": "none", "PYTHONPATH": str(paths.REPO)}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    with process.stderr:
        stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, stderr[-2000:]
    return usage.ru_maxrss, stderr.strip().splitlines()[-1]


def test_huge_hostile_lines_cost_at_most_three_line_caps(tmp_path: Path) -> None:
    real = (paths.FIXTURES / "run1_cli_prompt_basic" / "events.jsonl").read_text().splitlines()
    plain, hostile = tmp_path / "plain", tmp_path / "hostile"
    plain.mkdir()
    hostile.mkdir()
    (plain / "events.jsonl").write_text("\n".join(real) + "\n")
    wide = "[" + ",".join(["1"] * (SIZE // 2)) + "]"
    deep = "[" * (SIZE // 2) + "]" * (SIZE // 2)
    bad = [_hostile(i, wide) for i in range(5)] + [_hostile(5 + i, deep) for i in range(5)]
    (hostile / "events.jsonl").write_text("\n".join(real[:3] + bad + real[3:]) + "\n")

    baseline, _ = _peak_kib(plain)
    peak, summary = _peak_kib(hostile)
    assert "10 lines of too many values skipped" in summary
    assert peak <= baseline + 3 * MAX_LINE // 1024, (peak, baseline)
