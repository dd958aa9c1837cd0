"""The quiet-task policy (otel_bridge/feed/_quiet.py): what a quiet open task is (waiting for a
person, for its background work, stalled, idle), and the invariant that a stall is reported
before the idle timeout closes its task."""

from __future__ import annotations

import inspect
import logging
from pathlib import Path

import pytest
import yaml

from otel_bridge import semconv as sc
from otel_bridge.assembler import Assembler, AssemblerConfig, TroubleOptions
from otel_bridge.feed import StreamFeeder
from otel_bridge.feed._quiet import STALL_REPORT_SECONDS, QuietPolicy, QuietTask, Verdict
from otel_bridge.sources import Tailer, TailOptions
from otel_bridge.sources.tail import Downstream
from tests.builder import Log
from tests.recorder import Recorder
from tests.unit.assembler.test_steering_and_shells import shell_log

ROOT = Path(__file__).resolve().parents[3]
POLICY = QuietPolicy(
    idle_timeout_seconds=900,
    person_timeout_seconds=3600,
    stall_seconds=600,
    background_wait_seconds=900,
)


@pytest.mark.parametrize(
    ("task", "verdict"),
    [
        (QuietTask(silent_seconds=599, quiet_seconds=599), Verdict.ACTIVE),
        (QuietTask(silent_seconds=600, quiet_seconds=600), Verdict.STALLED),
        (QuietTask(silent_seconds=900, quiet_seconds=900), Verdict.IDLE),
        # the running-now watch follows no log: never idle, stalled however long
        (QuietTask(silent_seconds=10**6), Verdict.STALLED),
        # a person's wait: never stalled, closed by the person timeout only
        (
            QuietTask(asks_person=True, silent_seconds=3000, quiet_seconds=3000),
            Verdict.WAITING_PERSON,
        ),
        (QuietTask(asks_person=True, silent_seconds=3600, quiet_seconds=3600), Verdict.IDLE),
        # a background wait: never stalled nor idle, over after the background wait (event time)
        (
            QuietTask(background=True, silent_seconds=900, quiet_seconds=10**6),
            Verdict.WAITING_BACKGROUND,
        ),
        (QuietTask(background=True, silent_seconds=901, quiet_seconds=0), Verdict.BACKGROUND_OVER),
    ],
)
def test_a_quiet_task_gets_one_verdict(task: QuietTask, verdict: Verdict) -> None:
    assert POLICY.verdict(task) is verdict


@pytest.mark.parametrize("idle", [0, 60, 119, 120, 121, 300, 600, 719, 720, 721, 900, 86_400])
@pytest.mark.parametrize("stall", [0, 1, 300, 600, 3600])
def test_a_stall_is_reported_before_the_idle_timeout_closes_its_task(idle: int, stall: int) -> None:
    """The invariant: stall threshold + STALL_REPORT_SECONDS <= idle timeout, or no stall at
    all; a threshold that keeps it is kept as configured."""
    policy = QuietPolicy(idle_timeout_seconds=idle, stall_seconds=stall)
    threshold = policy.stalled_seconds
    assert threshold == 0 or threshold + STALL_REPORT_SECONDS <= idle
    assert threshold <= stall
    if stall and stall + STALL_REPORT_SECONDS <= idle:
        assert threshold == stall and policy.conflict() is None
    elif stall:
        assert policy.conflict() is not None
    # whatever the thresholds, a task found stalled is not idle yet, and the other way round
    if threshold:
        at_stall = QuietTask(silent_seconds=threshold, quiet_seconds=threshold)
        assert policy.verdict(at_stall) is Verdict.STALLED


def test_the_report_margin_covers_the_alert_s_for_a_scrape_an_evaluation_and_a_group_wait() -> None:
    """STALL_REPORT_SECONDS holds against the shipped rule and Prometheus configuration: a
    longer `for:` or interval there would let the idle timeout resolve the alert unsent."""
    alerts = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yml").read_text())
    (rule,) = [
        r for g in alerts["groups"] for r in g["rules"] if r.get("alert") == "CopilotAgentStalled"
    ]
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())["global"]
    alertmanager_group_wait = 30  # Alertmanager's default

    def seconds(text: str) -> int:
        units = {"s": 1, "m": 60, "h": 3600}
        return int(text[:-1]) * units[text[-1]]

    margin = (
        seconds(rule["for"])
        + seconds(config["scrape_interval"])
        + seconds(config["evaluation_interval"])
        + alertmanager_group_wait
    )
    assert margin <= STALL_REPORT_SECONDS


def test_the_tailer_s_idle_timeout_lowers_the_stall_threshold_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    feeder = StreamFeeder(Assembler(), lambda _records: None)
    with caplog.at_level(logging.WARNING):
        Tailer([tmp_path], feeder, TailOptions(idle_timeout_seconds=300, watch=False))
    assert feeder.quiet.idle_timeout_seconds == 300
    assert feeder.quiet.stalled_seconds == 300 - STALL_REPORT_SECONDS
    (line,) = [
        r.getMessage() for r in caplog.records if "--trouble-stalled-seconds" in r.getMessage()
    ]
    assert "--idle-timeout 300" in line and "after 180 s" in line


def _open_task(log: Log) -> None:
    log.user(interaction="i1")
    log.turn("0", "i1")
    log.usage("u-i1")
    log.message([("c1", "bash")], turn="0")


def test_with_a_short_idle_timeout_a_stall_is_still_reported_before_the_task_closes() -> None:
    """--idle-timeout 300 with the default stall threshold (600): the task is said stalled at
    180 s, before the tailer closes it at 300 s (before: never, it closed first)."""
    recorder = Recorder()
    assembler = Assembler(AssemblerConfig(), recorder)  # type: ignore[arg-type]
    feeder = StreamFeeder(assembler, lambda _records: None)
    feeder.follow_logs(TailOptions(idle_timeout_seconds=300, person_timeout_seconds=3600), None)
    log = Log()
    log.start()
    _open_task(log)
    assembler.feed("s", log.events())
    feeder.watch(log.now / 1e9 + 179)
    assert recorder.values(sc.METRIC_TASK_TROUBLE) == []
    feeder.watch(log.now / 1e9 + 181)
    assert recorder.values(sc.METRIC_TASK_TROUBLE, copilot__trouble__signal="stalled") == [1]


def test_a_task_waiting_for_its_background_shell_is_not_stalled() -> None:
    """Its loop stopped and a shell runs: silent, but the background wait ends it, not a hang
    (before, the stall signal fired at the threshold and CopilotAgentStalled with it)."""
    recorder = Recorder()
    config = AssemblerConfig(trouble=TroubleOptions(stalled_seconds=300))
    assembler = Assembler(config, recorder)  # type: ignore[arg-type]
    feeder = StreamFeeder(assembler, lambda _records: None)
    log = shell_log()
    cut = next(i for i, e in enumerate(log.raw) if e["type"] == "system.notification")
    events = log.events()[:cut]
    assembler.feed("s", events)
    assert assembler.session("s").waiting
    feeder.watch(events[-1].timestamp_ns / 1e9 + 600)
    assert recorder.values(sc.METRIC_TASK_TROUBLE) == []
    view = assembler.in_flight(events[-1].timestamp_ns + 600 * 10**9)
    assert not any(view[sc.METRIC_TASKS_TROUBLED].values())


def test_downstream_has_at_most_ten_members_and_the_feeder_has_them_all() -> None:
    def parameters(function: object) -> list[str]:
        return [p for p in inspect.signature(function).parameters if p != "self"]  # type: ignore[arg-type]

    members = [name for name in vars(Downstream) if not name.startswith("_")]
    assert len(members) <= 10, members
    for name in members:
        wanted = getattr(Downstream, name)
        if callable(wanted):
            assert parameters(getattr(StreamFeeder, name)) == parameters(wanted), name
        else:
            assert isinstance(getattr(StreamFeeder, name), property), name
