"""Hostile huge lines cost no more memory than their size: five lines of a million values and five
nested a million deep, each of 4 MiB, keep replay's peak resident size under its peak on the same
log without them plus 3x --max-line-bytes (before the pre-scan of otel_bridge/decode/_wide.py each
such line was decoded into Python objects before it was refused: 16 MB lines took a replay from 35
MB to 396 MB). `run` that meets such lines in a log it follows settles back within 10 MB of where it
was (before app/_memory.py gave a huge line's pages back, 16 MB lines left it 22 MB higher for
good)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests import paths
from tests.processes import bridge_env, log_tail, start_bridge, terminate
from tests.prometheus import free_port, scrape_metrics

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


def _status_mib(pid: int, key: str) -> float:
    """VmRSS or VmHWM of a process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {key} for {pid}")


def _until(condition: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():  # type: ignore[operator]
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_run_settles_back_after_huge_lines_in_a_followed_log(tmp_path: Path) -> None:
    real = (paths.FIXTURES / "run1_cli_prompt_basic" / "events.jsonl").read_text().splitlines()
    root = tmp_path / "state"
    log = root / "1b0e4c2a-0000-4000-8000-000000000001" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join(real[:3]) + "\n")
    size, cap = 16 << 20, 32 << 20  # the size the round-2 review used
    port = free_port()
    process = start_bridge(
        [
            "run",
            "--session-state",
            str(root),
            "--state-dir",
            str(tmp_path / "st"),
            "--prometheus-port",
            str(port),
            "--max-line-bytes",
            str(cap),
            "--no-progress",
        ],
        env=bridge_env({"OTEL_TRACES_EXPORTER": "none", "PYTHONPATH": str(paths.REPO)}),
        log=tmp_path / "run.log",
    )
    target = f"127.0.0.1:{port}"
    try:

        def ready() -> bool:
            with urllib.request.urlopen(f"http://{target}/readyz", timeout=5) as answer:
                return bool(answer.status == 200)

        _until(ready, "/readyz")
        _until(lambda: scrape_metrics(target).value("otel_bridge_events_read_total") == 3, "3")
        time.sleep(2)  # the catch-up's end gave its memory back
        baseline = _status_mib(process.pid, "VmRSS")
        wide = "[" + ",".join(["1"] * (size // 2)) + "]"
        deep = "[" * (size // 2) + "]" * (size // 2)
        with log.open("a") as handle:  # line by line, as a writer appends them
            for index, content in enumerate([wide] * 3 + [deep] * 3):
                handle.write(_hostile(index, content) + "\n")
                handle.flush()
            handle.write("\n".join(real[3:]) + "\n")

        def refused() -> bool:
            return scrape_metrics(target).value("otel_bridge_lines_skipped_total") == 6

        _until(refused, "6 lines refused")
        _until(
            lambda: scrape_metrics(target).value("otel_bridge_events_read_total") == len(real),
            "every real event",
        )
        time.sleep(3)  # a poll after the huge lines (1 s by default)
        settled, peak = _status_mib(process.pid, "VmRSS"), _status_mib(process.pid, "VmHWM")
    finally:
        terminate(process)
    assert peak <= baseline + 3 * cap / (1 << 20), (peak, baseline, log_tail(tmp_path / "run.log"))
    assert settled <= baseline + 10, (settled, baseline, peak)
