"""The options of `run` that replay does not share, by group (those they share are in
`_options`; the parser is built by `_parser`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..export import DEFAULT_PROMETHEUS_HOST, DEFAULT_PROMETHEUS_PORT, DEFAULT_QUEUE_SPANS
from ..sources import Shard
from ._options import Given, background_wait, export, limits, metrics
from ._types import (
    metrics_interval,
    non_negative_float,
    non_negative_int,
    path,
    poll_interval,
    port,
    positive_float,
    queue_size,
)

__all__ = ["checkpoints", "export_group", "probes", "scale", "sources", "trouble"]


def sources(run: argparse.ArgumentParser) -> None:
    sources = run.add_argument_group("sources", "what run reads, and from where in each log")
    sources.add_argument(
        "--session-state",
        action="append",
        type=path,
        metavar="DIR",
        help="a session-state directory to watch; repeatable (default: "
        "$COPILOT_HOME/session-state, COPILOT_HOME defaulting to ~/.copilot); a "
        "COPILOT_HOME given instead means its session-state directory",
    )
    sources.add_argument(
        "--catch-up-minutes",
        action=Given,
        type=non_negative_float,
        default=60.0,
        metavar="M",
        help="at start, read logs modified in the last M minutes from their beginning; "
        "older ones are followed from their end (default: 60)",
    )
    sources.add_argument(
        "--backfill",
        action="store_true",
        help="at start, read every log from its beginning, however old: those without a "
        "checkpoint, and those an earlier run only followed from their end and never read "
        "since (a log resumed from a checkpoint past what it read is not read again: "
        "otel-bridge replay does that)",
    )
    sources.add_argument(
        "--idle-timeout",
        type=non_negative_float,
        default=900.0,
        metavar="S",
        help="close an interaction whose log has been quiet for S seconds (default: 900; "
        "logs never say when an agent stopped for good)",
    )
    sources.add_argument(
        "--person-timeout",
        type=non_negative_float,
        default=86400.0,
        metavar="S",
        help="but keep open up to S seconds an interaction whose agent waits for a person (a "
        "permission, a question, a plan to approve), so that it goes on counting as waiting "
        "(default: 86400, a day; a CLI closed meanwhile writes nothing either)",
    )
    background_wait(sources)
    sources.add_argument(
        "--no-progress",
        action="store_true",
        help="do not draw the progress bar of the catch-up at start (drawn only on a terminal)",
    )


def checkpoints(run: argparse.ArgumentParser) -> None:
    checkpoints = run.add_argument_group(
        "checkpoints", "where each log resumes after a restart or a crash"
    )
    checkpoints.add_argument(
        "--state-dir",
        action=Given,
        type=path,
        metavar="DIR",
        help="where run keeps its checkpoints (resume points of every log), so that a "
        "restart neither loses nor repeats spans (default: $OTEL_BRIDGE_STATE_DIR, else "
        "$XDG_STATE_HOME/otel-bridge, else ~/.local/state/otel-bridge)",
    )
    checkpoints.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="keep no checkpoints: every start is a first start",
    )


def export_group(run: argparse.ArgumentParser) -> None:
    spans = run.add_argument_group("export", "where spans go, besides the OTEL_* variables")
    export(spans, "run")
    spans.add_argument(
        "--queue-size",
        type=queue_size,
        default=DEFAULT_QUEUE_SPANS,
        metavar="N",
        help="spans kept per exporter while its collector is down or slow; while a queue "
        f"is half full, logs are not read (they wait on disk) (default: {DEFAULT_QUEUE_SPANS}; "
        "at most 1000000)",
    )


def probes(run: argparse.ArgumentParser) -> None:
    probes = run.add_argument_group(
        "metrics and probes", "Prometheus /metrics, /healthz and /readyz share one port"
    )
    probes.add_argument(
        "--prometheus-host",
        action=Given,
        default=DEFAULT_PROMETHEUS_HOST,
        metavar="ADDR",
        help="address of the /metrics, /healthz and /readyz endpoint (default: "
        f"{DEFAULT_PROMETHEUS_HOST}; 0.0.0.0 exposes it to the network)",
    )
    probes.add_argument(
        "--prometheus-port",
        action=Given,
        type=port,
        default=DEFAULT_PROMETHEUS_PORT,
        metavar="PORT",
        help=f"its port (default: {DEFAULT_PROMETHEUS_PORT}; 0 picks a free one)",
    )
    probes.add_argument(
        "--no-prometheus",
        action="store_true",
        help="serve no port: no Prometheus metrics, no /healthz nor /readyz",
    )
    metrics(probes, "run")
    _probe_timings(probes)


def _probe_timings(probes: argparse._ArgumentGroup) -> None:
    probes.add_argument(
        "--metrics-interval",
        action=Given,
        type=metrics_interval,
        default=60.0,
        metavar="S",
        help="how often OTLP, console and file metrics are exported (Prometheus scrapes when "
        "it likes) (default: 60)",
    )
    probes.add_argument(
        "--unready-after",
        action=Given,
        type=positive_float,
        default=60.0,
        metavar="S",
        help="/readyz says not ready once an exporter has failed this long on a batch "
        "(default: 60); also not ready while logs are caught up",
    )
    probes.add_argument(
        "--stuck-after",
        action=Given,
        type=positive_float,
        default=120.0,
        metavar="S",
        help="/healthz answers 503 once the main loop has neither finished a poll nor read a "
        "log for this long, beyond --poll-interval (default: 120)",
    )
    probes.add_argument(
        "--status-interval",
        type=non_negative_float,
        default=300.0,
        metavar="S",
        help="log a one-line status this often (default: 300; 0: never)",
    )


def scale(run: argparse.ArgumentParser, shard: Callable[[str], Shard]) -> None:
    scale = run.add_argument_group("scale", "many sessions, many replicas, hostile files")
    scale.add_argument(
        "--shard",
        type=shard,
        metavar="I/N",
        help="follow only the sessions of shard I of N (I from 0 to N-1): those whose "
        "directory name (the session id) hashes to I, so that N replicas given 0/N to "
        "N-1/N share one session-state directory without overlap or gap. Each replica "
        "needs its own --state-dir (default: every session)",
    )
    scale.add_argument(
        "--poll-interval",
        type=poll_interval,
        default=0.5,
        metavar="S",
        help="longest wait between checks for new lines, in seconds; file system "
        "notifications usually wake it sooner (default: 0.5)",
    )
    scale.add_argument(
        "--rescan-interval",
        type=positive_float,
        default=5.0,
        metavar="S",
        help="look at every directory and file at least this often, in case a notification "
        "was lost (default: 5)",
    )
    limits(scale, "run")


def trouble(run: argparse.ArgumentParser) -> None:
    """The thresholds of the signals of a task in trouble (docs/metrics.md, "Running now")."""
    trouble = run.add_argument_group(
        "trouble", "signals of an agent in trouble while its task runs (0: off)"
    )
    trouble.add_argument(
        "--trouble-repeated-calls",
        type=non_negative_int,
        default=5,
        metavar="N",
        help="a task calls one tool with the same arguments N times (default: 5)",
    )
    trouble.add_argument(
        "--trouble-tool-failures",
        type=non_negative_int,
        default=5,
        metavar="N",
        help="one tool fails N times in a row in a task (default: 5)",
    )
    trouble.add_argument(
        "--trouble-turns",
        type=non_negative_int,
        default=100,
        metavar="N",
        help="a task's main agent starts its N-th turn (default: 100)",
    )
    trouble.add_argument(
        "--trouble-compactions",
        type=non_negative_int,
        default=3,
        metavar="N",
        help="a task's context is compacted for the N-th time (default: 3)",
    )
    trouble.add_argument(
        "--trouble-stalled-seconds",
        type=non_negative_float,
        default=600.0,
        metavar="S",
        help="no event for S seconds while a task is open (default: 600)",
    )
    trouble.add_argument(
        "--trouble-task-minutes",
        type=non_negative_float,
        default=60.0,
        metavar="M",
        help="an interactive or plan task has been open M minutes (default: 60)",
    )
    trouble.add_argument(
        "--trouble-autopilot-minutes",
        type=non_negative_float,
        default=240.0,
        metavar="M",
        help="an autopilot task has been open M minutes (default: 240)",
    )
