"""The daemon's parts in this process: /readyz's verdict, the checkpoints' back-off, the status
line, and the order of the stop (tests/integration/test_run_integration.py runs them as a
process)."""

from __future__ import annotations

import json
import logging
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from otel_bridge._exceptions import CheckpointError
from otel_bridge.app import (
    PROBLEM_COUNTERS,
    Checkpointing,
    Daemon,
    DaemonOptions,
    Readiness,
    StatusLine,
    register_gauges,
    state_dir,
)
from otel_bridge.app._pipeline import PipelineConfig
from otel_bridge.assembler import Glance
from otel_bridge.checkpoint._lock import StateLock
from otel_bridge.sources import TailOptions
from tests.recorder import Clock
from tests.unit.sources.test_tail import two_messages


def _ready(
    started=True, catching_up=0, checkpoint=None, failing=None, queued=0, after=60.0, roots=()
) -> tuple[bool, str]:
    health = SimpleNamespace(unreadable=list(roots))
    tailer = SimpleNamespace(started=started, catching_up=catching_up, root_health=health)
    sink = SimpleNamespace(queued=queued, failing=lambda: failing)
    return Readiness(tailer, sink, SimpleNamespace(failing=checkpoint), after)()


def test_readiness_says_why_it_is_not_ready_first_cause_first() -> None:
    assert _ready(started=False, catching_up=3) == (False, "starting: listing the session logs")
    assert _ready(catching_up=1) == (False, "catching up 1 log")
    assert _ready(catching_up=2, checkpoint="disk full") == (False, "catching up 2 logs")
    assert _ready(checkpoint="disk full") == (False, "checkpoints cannot be saved: disk full")
    assert _ready(failing=("otlp http://c:4318", 61.4), queued=12) == (
        False,
        "otlp http://c:4318 failing for 61s, 12 spans queued",
    )


def test_readiness_says_which_root_cannot_be_read_before_anything_else() -> None:
    root = (Path("/host/state"), "cannot be read (Permission denied): give ...")
    assert _ready(catching_up=2, roots=[root]) == (
        False,
        "/host/state cannot be read (Permission denied): give ...",
    )
    assert _ready(started=False, roots=[root])[1] == "starting: listing the session logs"


def test_readiness_tolerates_an_exporter_failing_for_less_than_unready_after() -> None:
    assert _ready(failing=("otlp", 59.9), queued=5) == (True, "ok")
    assert _ready(failing=("otlp", 10.0), after=10.0)[0] is False
    assert _ready() == (True, "ok")


class FailingSaves:
    """A tailer whose saves fail `failures` times, then succeed."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def save_checkpoints(self, watermark=None, *, force=True) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise CheckpointError("no space left on device")
        return 1


class Counter:
    def __init__(self) -> None:
        self.added: list[str] = []

    def add(self, name, value, attributes, session_id) -> None:
        self.added.append(name)


def test_a_failing_save_backs_off_doubling_to_a_minute_and_recovers(caplog) -> None:
    clock, tailer, counter = Clock(), FailingSaves(8), Counter()
    saving = Checkpointing(tailer, SimpleNamespace(watermark=7), counter, clock=clock)
    backoffs = []
    with caplog.at_level(logging.INFO, logger="otel_bridge"):
        for _ in range(8):
            assert saving.save(final=False) is False
            backoffs.append(saving.backoff)
            calls = tailer.calls
            clock.now += saving.backoff - 0.01  # not yet: the save is not tried
            assert saving.save(final=False) is False
            assert tailer.calls == calls
            clock.now += 0.01
        assert backoffs == [1, 2, 4, 8, 16, 32, 60, 60]
        assert saving.failing == "no space left on device"
        assert counter.added == ["otel_bridge.checkpoint.failures"] * 8
        assert saving.save(final=False) is True
    assert saving.failing is None and saving.backoff == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # said once, not at each retry
    assert "checkpoints saved again after 8 failed attempts" in caplog.text


def test_the_final_save_is_not_throttled_and_says_how_often_saving_failed(caplog) -> None:
    clock, tailer = Clock(), FailingSaves(3)
    saving = Checkpointing(tailer, SimpleNamespace(watermark=0), None, clock=clock)
    assert saving.save(final=False) is False
    assert saving.save(final=True) is False  # inside the back-off, tried all the same
    assert tailer.calls == 2
    assert "saving has failed 2 times since: no space left on device" in caplog.text
    assert saving.save(final=True) is False and saving.save(final=True) is True


def test_the_status_line_waits_its_interval_and_says_what_run_does(caplog) -> None:
    clock = Clock()
    tailer = SimpleNamespace(
        events_read=0, last_lag=1.25, followed_count=3, catching_up=1, resident=2
    )
    stats = SimpleNamespace(exported=40, dropped=0, failed=1)
    sampler = SimpleNamespace(ratio=1.0, dropped_spans=0)
    sink = SimpleNamespace(stats=stats, queued=1, sampler=sampler)
    status = StatusLine(tailer, sink, 300.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="otel_bridge"):
        tailer.events_read = 600
        clock.now += 299
        status.maybe_log()
        assert caplog.records == []
        clock.now += 1
        status.maybe_log()
    assert caplog.messages == [
        "status: following 3 logs (1 catching up, 2 in memory), 2.0 events/s, last lag 1.2s, "
        "1 span queued, 40 exported, 0 dropped, 1 span in failed attempts"
    ]


def test_the_status_line_says_what_runs_now(caplog) -> None:
    clock = Clock()
    tailer = SimpleNamespace(
        events_read=0, last_lag=None, followed_count=1, catching_up=0, resident=1
    )
    stats = SimpleNamespace(exported=0, dropped=0, failed=0)
    sink = SimpleNamespace(
        stats=stats, queued=0, sampler=SimpleNamespace(ratio=1.0, dropped_spans=0)
    )
    status = StatusLine(tailer, sink, 1.0, clock=clock, running=lambda: Glance(3, 1, 2))
    clock.now += 1
    with caplog.at_level(logging.INFO, logger="otel_bridge"):
        status.maybe_log()
    assert caplog.messages[0].endswith(
        "0 spans in failed attempts; 3 tasks open (1 waiting for a person, 2 in trouble)"
    )


def test_an_interval_of_zero_never_logs(caplog) -> None:
    clock = Clock()
    status = StatusLine(SimpleNamespace(), SimpleNamespace(), 0.0, clock=clock)
    clock.now += 10**6
    with caplog.at_level(logging.INFO, logger="otel_bridge"):
        status.maybe_log()
    assert caplog.records == []


class StopAfterFirstPoll(list):
    """The signal list of a run that gets SIGTERM once it has polled once."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def __len__(self) -> int:
        self.asked += 1
        if self.asked == 2 and not list.__len__(self):
            self.append(signal.SIGTERM)
        return list.__len__(self)


@pytest.fixture
def daemon_dirs(tmp_path) -> tuple[Path, Path, Path]:
    log = tmp_path / "session-state" / "s1" / "events.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(two_messages())
    return tmp_path / "session-state", tmp_path / "state", tmp_path / "traces.jsonl"


def test_the_stop_delivers_then_saves_checkpoints_then_releases_the_lock(daemon_dirs) -> None:
    """In the daemon's order, the final checkpoint covers every span it delivered (saved
    before the delivery, it would stay behind them), and the lock is free after."""
    root, state, traces = daemon_dirs
    # spans linger 10 s before export: only the stop's own flush delivers them
    config = PipelineConfig(traces_file=traces, traces_file_mode="a", export_linger_seconds=10.0)
    options = DaemonOptions(
        roots=(root,),
        state_dir=state,
        tail=TailOptions(backfill=True),
        queue_size=1000,
        progress=False,
    )
    daemon = Daemon(config, options, {"OTEL_TRACES_EXPORTER": "none"})
    assert daemon.run(StopAfterFirstPoll()) == 0
    spans = sum(
        len(scope["spans"])
        for line in traces.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for scope in rs["scopeSpans"]
    )
    assert spans > 0 and daemon.pipeline.sink.stats.exported == spans
    lines = [json.loads(line) for line in (state / "checkpoints.jsonl").read_text().splitlines()]
    saved = [line for line in lines[1:] if str(root / "s1" / "events.jsonl") == line["path"]]
    assert saved[-1]["offset"] == (root / "s1" / "events.jsonl").stat().st_size
    StateLock(state).release()  # taken again: the daemon let it go


class Gauges:
    def __init__(self) -> None:
        self.added: list[tuple[str, float, dict]] = []
        self.gauges: dict[str, object] = {}

    def add(self, name, value, attributes, session_id) -> None:
        self.added.append((name, value, dict(attributes)))

    def gauge(self, name, read) -> None:
        self.gauges[name] = read


def test_the_problem_counters_start_at_0_and_the_gauges_read_the_live_parts() -> None:
    recorder = Gauges()
    assembler = SimpleNamespace(open_interactions=2, resident=5)
    tailer = SimpleNamespace(followed_count=7)
    register_gauges(recorder, assembler, tailer)
    assert [(n, v) for n, v, _ in recorder.added] == [(n, 0) for n, _ in PROBLEM_COUNTERS]
    assert {name: read() for name, read in recorder.gauges.items()} == {
        "copilot.sessions.active": 2,
        "otel_bridge.files.followed": 7,
        "otel_bridge.sessions.resident": 5,
    }
    assembler.open_interactions = 3  # read when collected, not when registered
    assert recorder.gauges["copilot.sessions.active"]() == 3


def test_the_state_directory_is_the_flag_then_the_variable_then_xdg(tmp_path) -> None:
    flag = tmp_path / "flag"
    assert state_dir(flag, {"OTEL_BRIDGE_STATE_DIR": "/v", "XDG_STATE_HOME": "/x"}) == flag
    assert state_dir(None, {"OTEL_BRIDGE_STATE_DIR": "/v", "XDG_STATE_HOME": "/x"}) == Path("/v")
    assert state_dir(None, {"OTEL_BRIDGE_STATE_DIR": "", "XDG_STATE_HOME": "/x"}) == Path(
        "/x/otel-bridge"
    )
    assert state_dir(None, {}) == Path.home() / ".local" / "state" / "otel-bridge"
