"""The measurements, one function per section; each returns its figures as a flat dict.

Every figure is computed from what the kernel and a real OTLP receiver see of the
`otel-bridge` processes (see procs.py): CPU from /proc/<pid>/stat or wait4, memory from
/proc/<pid>/status, spans decoded from the wire.
"""

from __future__ import annotations

import bisect
import json
import random
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.otlp_receiver import OtlpReceiver

from .corpus import LIVE_FIXTURES, build_corpus, count_events, load_templates
from .procs import Bridge, bridge_env, command, free_port, run_to_end
from .writers import KillWriter, LiveWriter, SoakWriter

__all__ = ["SECTIONS", "Options", "Readiness", "sample_idle", "watch_readiness"]

Figures = dict[str, Any]
OLD_S = 2 * 86400  # "old" logs: two days, well past --catch-up-minutes


@dataclass
class Options:
    """Sizes and places; run.py fills them from the command line (--quick picks small ones)."""

    pythonpath: Path
    scratch: Path
    replay_sessions: int = 1000
    idle_sizes: list[int] = field(default_factory=lambda: [1000, 10000])
    idle_seconds: float = 60.0
    settle_seconds: float = 10.0
    live_rates: list[float] = field(default_factory=lambda: [10.0, 100.0, 1000.0])
    live_seconds: float = 30.0
    live_sessions: int = 200
    ready_sessions: int = 10000
    soak_minutes: float = 20.0
    soak_sessions: int = 10000
    soak_sample_seconds: float = 30.0
    kills: int = 30
    kill_sessions: int = 48
    start_timeout: float = 900.0
    _startup_cpu: float | None = None

    @property
    def cache(self) -> Path:
        return self.scratch / "corpora"

    def work(self, name: str) -> Path:
        """A fresh scratch directory for one measurement."""
        path = self.scratch / "work" / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def env(self, **extra: str) -> dict[str, str]:
        return bridge_env(self.pythonpath, extra)

    def log(self, name: str) -> Path:
        (self.scratch / "logs").mkdir(parents=True, exist_ok=True)
        return self.scratch / "logs" / f"{name}.err"


def _quiet_env(opts: Options) -> dict[str, str]:
    """No span exporter at all: what is measured is reading and assembling."""
    return opts.env(OTEL_TRACES_EXPORTER="none")


def replay_startup_cpu(
    opts: Options, env: dict[str, str] | None = None, args: Sequence[str] = ()
) -> float:
    """CPU seconds `replay` spends on one tiny session: interpreter, imports, set-up. Taken off
    replay figures so that they speak of events, not of start-up. (`env`, `args`: those of
    the replay to measure; default: no exporter.)"""
    if env is not None or args:
        return _startup_cpu(opts, env or _quiet_env(opts), args)
    if opts._startup_cpu is None:
        opts._startup_cpu = _startup_cpu(opts, _quiet_env(opts), ())
    return opts._startup_cpu


def _startup_cpu(opts: Options, env: dict[str, str], args: Sequence[str]) -> float:
    corpus, _ = build_corpus(opts.cache, 1, age_s=OLD_S)
    runs = [
        run_to_end("replay", [str(corpus), "--no-progress", *args], env, opts.log("r0"))
        for _ in range(3)
    ]
    return min(cpu for _, cpu, _ in runs)


def _replay_ms_per_event(
    opts: Options, root: Path, lines: int, env: dict[str, str], args: Sequence[str], log: str
) -> float:
    """`replay`'s CPU milliseconds per event on the logs under `root`, start-up taken off."""
    startup = replay_startup_cpu(opts, env, args)
    _, cpu, status = run_to_end("replay", [str(root), "--no-progress", *args], env, opts.log(log))
    if status != 0:
        raise RuntimeError(f"replay of {root} exited {status}")
    return 1000 * max(cpu - startup, 1e-3) / max(lines, 1)


def _net_rate(events: int, seconds: float, floor: float = 1e-3) -> float:
    return events / max(seconds, floor)


# ---------------------------------------------------------------------------- 1. corpus


def section_corpus(opts: Options) -> Figures:
    """Build (or find in the cache) every stored corpus the other sections use."""
    figures: Figures = {}
    sizes = sorted({opts.replay_sessions, *opts.idle_sizes, opts.ready_sessions})
    for size in sizes:
        root, seconds = build_corpus(opts.cache, size, age_s=OLD_S)
        events, size_bytes = count_events(root)
        figures[f"sessions_{size}_events"] = events
        figures[f"sessions_{size}_mb"] = round(size_bytes / 2**20, 1)
        figures[f"sessions_{size}_build_s"] = round(seconds, 2)
    return figures


# ---------------------------------------------------------------------------- 2. replay


def bare_loop(root: Path) -> tuple[int, float]:
    """Lines read and CPU seconds of the floor: read every line, json.loads it, nothing else."""
    logs = sorted(root.glob("*/events.jsonl"))
    started = time.process_time()
    lines = 0
    for log in logs:
        with log.open("rb") as handle:
            for line in handle:
                json.loads(line)
                lines += 1
    return lines, time.process_time() - started


def _jobs_supported(opts: Options) -> bool:
    help_text = subprocess.run(
        command("replay", ["--help"]), env=opts.env(), capture_output=True, text=True, check=False
    ).stdout
    return "--jobs" in help_text


def section_replay(opts: Options) -> Figures:
    """replay's events per CPU-second against the bare loop's, on the same corpus."""
    corpus, _ = build_corpus(opts.cache, opts.replay_sessions, age_s=OLD_S)
    events, _ = count_events(corpus)
    bare_loop(corpus)  # warm the page cache for both
    bare = min(bare_loop(corpus)[1] for _ in range(2))
    startup = replay_startup_cpu(opts)
    work = opts.work("replay")
    figures: Figures = {
        "sessions": opts.replay_sessions,
        "events": events,
        "startup_cpu_s": round(startup, 3),
        "bare_events_per_s": round(_net_rate(events, bare)),
    }
    runs = {
        "file": (["--traces-file", str(work / "traces.jsonl")], opts.env()),
        "none": ([], _quiet_env(opts)),
    }
    for name, (extra, env) in runs.items():
        args = [str(corpus), "--no-progress", *extra]
        wall, cpu, status = run_to_end("replay", args, env, opts.log(f"replay-{name}"))
        if status != 0:
            raise RuntimeError(f"replay ({name}) exited {status}")
        rate = _net_rate(events, cpu - startup)
        figures[f"{name}_events_per_s"] = round(rate)
        figures[f"{name}_ratio"] = round(rate / figures["bare_events_per_s"], 3)
        figures[f"{name}_wall_s"] = round(wall, 2)
    figures["jobs1_events_per_s"] = figures["jobs2_events_per_s"] = None
    figures["jobs2_speedup"] = None
    if _jobs_supported(opts):
        walls = {}
        for jobs in (1, 2):
            args = [str(corpus), "--no-progress", "--jobs", str(jobs)]
            wall, _, status = run_to_end("replay", args, _quiet_env(opts), opts.log("replay-j"))
            if status != 0:
                raise RuntimeError(f"replay --jobs {jobs} exited {status}")
            walls[jobs] = wall
            figures[f"jobs{jobs}_events_per_s"] = round(_net_rate(events, wall))
        figures["jobs2_speedup"] = round(walls[1] / walls[2], 2)
    shutil.rmtree(work)
    return figures


# ---------------------------------------------------------------------------- 3. idle


def sample_idle(bridge: Bridge, seconds: float) -> tuple[float, float]:
    """CPU % of a core over `seconds`, and the largest RSS seen meanwhile."""
    started, cpu0 = time.monotonic(), bridge.cpu_seconds()
    rss = bridge.rss_mb()
    while time.monotonic() - started < seconds:
        time.sleep(min(5.0, max(0.1, seconds - (time.monotonic() - started))))
        rss = max(rss, bridge.rss_mb())
    elapsed = time.monotonic() - started
    return 100 * (bridge.cpu_seconds() - cpu0) / elapsed, rss


def section_idle(opts: Options) -> Figures:
    """`run` over N quiet session directories: CPU and memory once start-up has settled."""
    figures: Figures = {}
    for size in opts.idle_sizes:
        corpus, _ = build_corpus(opts.cache, size, age_s=OLD_S)
        for checkpoints in (True, False):
            tag = f"{size}_{'ckpt' if checkpoints else 'nockpt'}"
            work = opts.work(f"idle-{tag}")
            args = ["--session-state", str(corpus)]
            # --state-dir with --no-checkpoints is an option error: no state directory then
            args += ["--state-dir", str(work / "state")] if checkpoints else ["--no-checkpoints"]
            with Bridge(args, _quiet_env(opts), opts.log(f"idle-{tag}"), port=free_port()) as b:
                ready = b.wait_ready(opts.start_timeout, following=size)
                if ready is None:
                    raise RuntimeError(f"idle {tag}: never ready\n{b.log_tail()}")
                time.sleep(opts.settle_seconds)
                cpu, rss = sample_idle(b, opts.idle_seconds)
            figures[f"{tag}_ready_s"] = round(ready, 2)
            figures[f"{tag}_cpu_pct"] = round(cpu, 2)
            figures[f"{tag}_rss_mb"] = round(rss, 1)
            shutil.rmtree(work)
    return figures


# ---------------------------------------------------------------------------- 4. live


def _root_latencies(
    receiver: OtlpReceiver, since_ns: int, writes: dict[str, list[float]]
) -> tuple[list[float], list[float]]:
    """Per trace, seconds from line written to root span received, two ways.

    First: from the last line written to the trace's session before the span arrived. The
    bridge cannot export an interaction before reading the line that ends it, and the lines of
    one session come seconds apart at these rates, so this is the latency of that line (a lower
    bound only when the latency exceeds the gap between two lines of a session).
    Second, an upper bound: from the root span's end. Each live line carries the moment it was
    written as its event time and a root ends at the event that ends its interaction, but some
    ends are only known at the session's next line (an abort may follow a turn end)."""
    seen: dict[bytes, tuple[float, float]] = {}
    for request in receiver.requests("traces"):
        message: Any = request.message
        for resource_spans in message.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    if span.parent_span_id or span.end_time_unix_nano < since_ns:
                        continue
                    if span.trace_id in seen:
                        continue
                    session = next(
                        (
                            kv.value.string_value
                            for kv in span.attributes
                            if kv.key == "gen_ai.conversation.id"
                        ),
                        "",
                    )
                    times = writes.get(session, [])
                    index = bisect.bisect_right(times, request.received_at)
                    if index == 0:
                        continue
                    seen[span.trace_id] = (
                        request.received_at - times[index - 1],
                        request.received_at - span.end_time_unix_nano / 1e9,
                    )
    return [a for a, _ in seen.values()], [b for _, b in seen.values()]


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _wait_quiet(count: Callable[[], int], quiet_s: float, timeout: float) -> None:
    """Until `count()` stopped moving for `quiet_s` seconds, at most `timeout`."""
    deadline = time.monotonic() + timeout
    last, since = count(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = count()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return


def section_live(opts: Options) -> Figures:
    """4 threads append real lines to ~200 sessions at each rate: run's CPU per event against
    replay's on the same lines (with no exporter, and with the same OTLP exporter and metrics
    as run's), and line-to-span latency at a local OTLP receiver (keep-alive, as a Collector)."""
    figures: Figures = {}
    templates = load_templates(LIVE_FIXTURES)
    latencies: list[float] = []
    end_latencies: list[float] = []
    with OtlpReceiver(keep_alive=True) as receiver:
        for rate in opts.live_rates:
            tag = f"{rate:g}"
            work = opts.work(f"live-{tag}")
            root = work / "session-state"
            writer = LiveWriter(root, templates, rate=rate, sessions=opts.live_sessions)
            env = opts.env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint)
            args = ["--session-state", str(root), "--state-dir", str(work / "state")]
            with Bridge(args, env, opts.log(f"live-{tag}"), port=free_port()) as bridge:
                if bridge.wait_ready(opts.start_timeout, following=writer.sessions) is None:
                    raise RuntimeError(f"live {tag}: never ready\n{bridge.log_tail()}")
                time.sleep(min(opts.settle_seconds, 3.0))
                receiver.clear()
                since_ns = time.time_ns()
                cpu0 = bridge.cpu_seconds()
                writer.start()
                try:
                    time.sleep(opts.live_seconds)
                finally:
                    written = writer.stop()
                _wait_quiet(lambda: len(receiver.requests("traces")), 2.0, opts.live_seconds)
                cpu = bridge.cpu_seconds() - cpu0
            rate_latencies, from_end = _root_latencies(receiver, since_ns, writer.writes)
            latencies += rate_latencies
            end_latencies += from_end
            lines, _ = count_events(root)
            replay_ms = _replay_ms_per_event(opts, root, lines, _quiet_env(opts), (), "live-r")
            same_ms = _replay_ms_per_event(
                opts, root, lines, env, ("--metrics-file", str(work / "m.jsonl")), "live-r-otlp"
            )
            run_ms = 1000 * cpu / max(written, 1)
            figures[f"rate{tag}_events"] = written
            figures[f"rate{tag}_achieved_per_s"] = round(written / opts.live_seconds, 1)
            figures[f"rate{tag}_run_cpu_ms_per_event"] = round(run_ms, 3)
            figures[f"rate{tag}_replay_cpu_ms_per_event"] = round(replay_ms, 4)
            figures[f"rate{tag}_cpu_ratio"] = round(run_ms / replay_ms, 1)
            figures[f"rate{tag}_replay_otlp_cpu_ms_per_event"] = round(same_ms, 4)
            figures[f"rate{tag}_cpu_ratio_otlp"] = round(run_ms / same_ms, 1)
            figures[f"rate{tag}_traces"] = len(rate_latencies)
            p50, p99 = _percentile(rate_latencies, 0.5), _percentile(rate_latencies, 0.99)
            figures[f"rate{tag}_latency_p50_ms"] = None if p50 is None else round(1000 * p50, 1)
            figures[f"rate{tag}_latency_p99_ms"] = None if p99 is None else round(1000 * p99, 1)
            shutil.rmtree(work)
    p50, p99 = _percentile(latencies, 0.5), _percentile(latencies, 0.99)
    figures["latency_traces"] = len(latencies)
    figures["latency_p50_ms"] = None if p50 is None else round(1000 * p50, 1)
    figures["latency_p99_ms"] = None if p99 is None else round(1000 * p99, 1)
    p50, p99 = _percentile(end_latencies, 0.5), _percentile(end_latencies, 0.99)
    figures["from_end_event_p50_ms"] = None if p50 is None else round(1000 * p50, 1)
    figures["from_end_event_p99_ms"] = None if p99 is None else round(1000 * p99, 1)
    return figures


# ---------------------------------------------------------------------------- 5. ready


@dataclass
class Readiness:
    """What /readyz and /metrics said from a bridge's start until it had settled."""

    first_200_s: float | None = None  # the first 200 seen, even if a 503 came after
    ready_s: float | None = None  # the start of the last run of 200s, once settled
    unready_s: float = 0.0  # how long it answered 503 in all
    events: float = 0.0  # otel_bridge_events_read_total at the end
    caught_up_s: float | None = None  # when that count first reached the events expected


def watch_readiness(
    bridge: Bridge, timeout: float, events_expected: float = 0, hold_s: float = 2.0
) -> Readiness:
    """Poll /readyz (every 50 ms) and /metrics until the bridge has read `events_expected`
    events, its event count has not moved for `hold_s` and /readyz said 200 all that time."""
    seen = Readiness()
    deadline = time.monotonic() + timeout
    last_poll = time.monotonic()
    last_events, events_since = -1.0, time.monotonic()
    while time.monotonic() < deadline and bridge.alive():
        status = bridge.readyz(timeout=2.0)
        now = time.monotonic()
        if status == 503:
            seen.unready_s += now - last_poll
            seen.ready_s = None
        elif status == 200:
            if seen.first_200_s is None:
                seen.first_200_s = now - bridge.started
            if seen.ready_s is None:
                seen.ready_s = now - bridge.started
        last_poll = now
        events = bridge.metric("otel_bridge_events_read_total")
        if events is not None and events != last_events:
            last_events, events_since = events, now
        seen.events = max(last_events, 0.0)
        if seen.caught_up_s is None and events is not None and events >= events_expected:
            seen.caught_up_s = now - bridge.started
        settled = now - events_since >= hold_s and last_events >= events_expected
        if settled and seen.ready_s is not None and now - bridge.started - seen.ready_s >= hold_s:
            return seen
        time.sleep(0.05)
    raise RuntimeError(f"not settled within {timeout} s: {seen}\n{bridge.log_tail()}")


def section_ready(opts: Options) -> Figures:
    """`run` over N checkpointed sessions: how soon /readyz says 200 after a restart."""
    corpus, _ = build_corpus(opts.cache, opts.ready_sessions, age_s=OLD_S)
    events, _ = count_events(corpus)
    work = opts.work("ready")
    args = ["--session-state", str(corpus), "--state-dir", str(work / "state"), "--backfill"]
    env = _quiet_env(opts)
    figures: Figures = {"sessions": opts.ready_sessions, "events": events}
    with Bridge(args, env, opts.log("ready-first"), port=free_port()) as bridge:
        first = watch_readiness(bridge, opts.start_timeout, events_expected=events)
        figures["first_run_first_200_s"] = round(first.first_200_s or 0, 2)
        figures["first_run_ready_s"] = round(first.ready_s or 0, 2)
        figures["first_run_caught_up_s"] = round(first.caught_up_s or 0, 2)
        figures["first_run_503_s"] = round(first.unready_s, 2)
        figures["first_run_cpu_s"] = round(bridge.cpu_seconds(), 2)
        stop_started = time.monotonic()
        bridge.stop()
        figures["first_run_stop_s"] = round(time.monotonic() - stop_started, 2)
    with Bridge(args, env, opts.log("ready-restart"), port=free_port()) as bridge:
        again = watch_readiness(bridge, opts.start_timeout)
        figures["restart_first_200_s"] = round(again.first_200_s or 0, 2)
        figures["restart_ready_s"] = round(again.ready_s or 0, 2)
        figures["restart_503_s"] = round(again.unready_s, 2)
        figures["restart_events_read"] = int(again.events)
        figures["restart_rss_mb"] = round(bridge.rss_mb(), 1)
    shutil.rmtree(work)
    return figures


# ---------------------------------------------------------------------------- 6. soak


def section_soak(opts: Options) -> Figures:
    """N sessions streamed through `run` over --soak-minutes: RSS and open fds over time."""
    templates = load_templates(LIVE_FIXTURES)
    seconds = 60 * opts.soak_minutes
    work = opts.work("soak")
    root = work / "session-state"
    root.mkdir()
    series: list[dict[str, float]] = []
    spans = 0
    with OtlpReceiver(keep_alive=True) as receiver:
        env = opts.env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint)
        args = ["--session-state", str(root), "--state-dir", str(work / "state")]
        with Bridge(args, env, opts.log("soak"), port=free_port()) as bridge:
            if bridge.wait_ready(opts.start_timeout) is None:
                raise RuntimeError(f"soak: never ready\n{bridge.log_tail()}")
            writer = SoakWriter(root, templates, n=opts.soak_sessions, seconds=seconds)
            started, cpu0 = time.monotonic(), bridge.cpu_seconds()
            writer.start()
            try:
                while True:
                    elapsed = time.monotonic() - started
                    if elapsed >= seconds:
                        break
                    time.sleep(min(opts.soak_sample_seconds, seconds - elapsed))
                    requests = receiver.requests("traces")
                    receiver.clear()  # the receiver's memory is not what is measured
                    spans += sum(
                        len(s.spans)
                        for r in requests
                        for rs in r.message.resource_spans
                        for s in rs.scope_spans
                    )
                    series.append(
                        {
                            "t_s": round(time.monotonic() - started, 1),
                            "rss_mb": round(bridge.rss_mb(), 1),
                            "fds": bridge.fds(),
                            "cpu_s": round(bridge.cpu_seconds() - cpu0, 2),
                            "lines": writer.written,
                            "sessions": writer.started_sessions,
                            "spans": spans,
                        }
                    )
            finally:
                writer.stop()
    shutil.rmtree(work)
    warm = [p for p in series if p["t_s"] >= min(60.0, seconds * 0.2)] or series
    return {
        "minutes": opts.soak_minutes,
        "sessions": writer.started_sessions,
        "lines": writer.written,
        "spans": spans,
        "cpu_pct": round(100 * series[-1]["cpu_s"] / max(series[-1]["t_s"], 1e-3), 1),
        "rss_mb_first": warm[0]["rss_mb"],
        "rss_mb_max": max(p["rss_mb"] for p in warm),
        "rss_mb_last": warm[-1]["rss_mb"],
        "fds_first": warm[0]["fds"],
        "fds_max": max(p["fds"] for p in warm),
        "fds_last": warm[-1]["fds"],
        "series": series,
    }


# ---------------------------------------------------------------------------- 7. kills


def _content(span: dict[str, Any]) -> str:
    keys = ("trace_id", "parent_span_id", "name", "kind", "start_time_unix_nano")
    rest = ("end_time_unix_nano", "status_code", "attributes", "events", "links")
    return json.dumps([span[k] for k in (*keys, *rest)], sort_keys=True)


def section_kills(opts: Options) -> Figures:
    """SIGKILL `run` at random moments while logs grow; restart with the same state dir; count
    lost, conflicting and repeated spans against one clean replay of the final logs."""
    templates = load_templates(LIVE_FIXTURES)
    work = opts.work("kills")
    root, state = work / "session-state", work / "state"
    root.mkdir()
    rng = random.Random(11)
    with OtlpReceiver() as receiver, OtlpReceiver() as clean:
        env = opts.env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.http_endpoint)
        args = ["--session-state", str(root), "--state-dir", str(state)]
        writer = KillWriter(root, templates, active=opts.kill_sessions)
        writer.start()
        try:
            for kill in range(opts.kills):
                with Bridge(args, env, opts.log(f"kill-{kill}")) as bridge:
                    time.sleep(rng.uniform(0.3, 3.0))
                    bridge.kill()
        finally:
            writer.stop()
        with Bridge(args, env, opts.log("kill-final"), port=free_port()) as bridge:
            bridge.wait_ready(opts.start_timeout)
            _wait_quiet(lambda: len(receiver.requests("traces")), 5.0, 120.0)
            bridge.stop()
        replay_env = opts.env(OTEL_EXPORTER_OTLP_ENDPOINT=clean.http_endpoint)
        _, _, status = run_to_end(
            "replay", [str(root), "--no-progress"], replay_env, opts.log("kill-replay")
        )
        if status != 0:
            raise RuntimeError(f"the clean replay exited {status}")
        expected = {s["span_id"] for s in clean.spans()}
        received = receiver.spans()
        batches = [
            sum(len(s.spans) for rs in r.message.resource_spans for s in rs.scope_spans)
            for r in receiver.requests("traces")
        ]
    shutil.rmtree(work)
    by_id: dict[str, set[str]] = {}
    for span in received:
        by_id.setdefault(span["span_id"], set()).add(_content(span))
    kills = max(opts.kills, 1)
    repeats = len(received) - len(by_id)
    return {
        "kills": opts.kills,
        "growing_at_once": opts.kill_sessions,
        "sessions": len(writer.sessions),
        "lines": writer.written,
        "expected_spans": len(expected),
        "received_spans": len(received),
        "lost": len(expected - set(by_id)),
        "conflicting": sum(1 for c in by_id.values() if len(c) > 1),
        "extra": len(set(by_id) - expected),
        "repeats": repeats,
        "repeats_per_kill": round(repeats / kills, 2),
        "mean_batch_spans": round(statistics.fmean(batches), 1) if batches else 0,
        "max_batch_spans": max(batches, default=0),
    }


SECTIONS: dict[str, Callable[[Options], Figures]] = {
    "corpus": section_corpus,
    "replay": section_replay,
    "idle": section_idle,
    "live": section_live,
    "ready": section_ready,
    "soak": section_soak,
    "kills": section_kills,
}
