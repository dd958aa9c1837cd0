"""replay's orchestration in this process: how many workers, and the exit verdict."""

from __future__ import annotations

from otel_bridge.app import ReplayOptions, SigtermStops, plan_jobs, replay
from otel_bridge.app._pipeline import PipelineConfig
from otel_bridge.feed import WORKERS_FROM_BYTES
from tests.unit.sources.test_tail import two_messages


def test_workers_are_never_more_than_the_logs_and_only_for_big_replays() -> None:
    assert plan_jobs(8, 10, 3) == 3
    assert plan_jobs(None, WORKERS_FROM_BYTES - 1, 100) == 1
    assert plan_jobs(None, WORKERS_FROM_BYTES, 100) >= 1
    assert plan_jobs(2, 0, 100) == 2


def test_a_replay_exits_0_when_every_log_is_exported_and_1_for_a_log_that_is_not_one(
    tmp_path,
) -> None:
    good = tmp_path / "s1" / "events.jsonl"
    good.parent.mkdir()
    good.write_bytes(two_messages())
    traces = tmp_path / "traces.jsonl"
    config = PipelineConfig(traces_file=traces, block_when_full=True)
    environ = {"OTEL_TRACES_EXPORTER": "none"}
    with SigtermStops() as sigterm:
        assert replay(config, ReplayOptions(paths=(good,), progress=False), environ, sigterm) == 0
        assert traces.read_text().count("\n") >= 1
        bad = tmp_path / "s2" / "events.jsonl"
        bad.parent.mkdir()
        bad.write_bytes(b"not json\n")
        options = ReplayOptions(paths=(good, bad), progress=False)
        assert replay(config, options, environ, sigterm) == 1
