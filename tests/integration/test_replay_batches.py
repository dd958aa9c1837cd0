"""replay's export batches depend on its spans alone: two replays of one corpus write the same
traces file, byte for byte, however fast or slow each log was read."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path

import pytest

from otel_bridge.cli import main
from otel_bridge.feed import _feeder
from tests.corpus import FIXTURES

#: the exporters' batch: every line of the traces file but the last holds this many spans
MAX_BATCH = 512


def corpus(root: Path, copies: int) -> Path:
    """`copies` sessions of every fixture log, enough spans for a few batches."""
    for copy in range(copies):
        for fixture in sorted(FIXTURES.glob("*/events.jsonl")):
            name = uuid.uuid5(uuid.NAMESPACE_URL, f"{copy}/{fixture.parent.name}")
            (root / str(name)).mkdir(parents=True)
            shutil.copyfile(fixture, root / str(name) / "events.jsonl")
    return root


def spans_per_line(traces: Path) -> list[int]:
    return [
        sum(
            len(scope["spans"])
            for spans in json.loads(line)["resourceSpans"]
            for scope in spans["scopeSpans"]
        )
        for line in traces.read_text().splitlines()
    ]


def test_a_slow_log_cuts_no_batch_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = corpus(tmp_path / "session-state", 3)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    argv = ["replay", str(state), "--no-progress", "--jobs", "1", "--traces-file"]
    assert main([*argv, str(tmp_path / "steady.jsonl")]) == 0

    ended = 0
    feed = _feeder.StreamFeeder.feed

    def slow(self: _feeder.StreamFeeder, *args: object, end: bool = False) -> int:
        """The 40th log keeps the reader 0.3 s at its end (a big log, a busy machine): six
        times what `run` lets spans wait for company."""
        nonlocal ended
        if end:
            ended += 1
            if ended == 40:
                time.sleep(0.3)
        return feed(self, *args, end=end)  # type: ignore[arg-type]

    monkeypatch.setattr(_feeder.StreamFeeder, "feed", slow)
    assert main([*argv, str(tmp_path / "paused.jsonl")]) == 0
    assert ended > 40
    steady, paused = tmp_path / "steady.jsonl", tmp_path / "paused.jsonl"
    assert paused.read_bytes() == steady.read_bytes()
    lines = spans_per_line(paused)
    assert len(lines) >= 2 and set(lines[:-1]) == {MAX_BATCH}
