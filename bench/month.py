"""A month in an hour: `otel-bridge run` under a month's worth of session churn, crashes and
collector outages, compressed into one run, with a verdict on whether it stays flat.

Run `python bench/month.py --help` for what it does and what it checks.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python bench/month.py`: the checkout's root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import LIVE_FIXTURES, load_templates
from bench.month_parts import Forwarder, MonthWriter, dir_bytes, metric_series, proc_figures
from bench.month_verdict import SERIES, delivery, flatness, write_csv
from bench.procs import Bridge, bridge_env, free_port, run_to_end
from tests.otlp_receiver import OtlpReceiver

DESCRIPTION = """\
A month in an hour. Starts a real OTLP receiver (tests/otlp_receiver.py, which decodes the
protobuf) behind a TCP forwarder on a free 127.0.0.1 port, and `otel-bridge run` on a temporary
session-state root and state directory, exporting to it over OTLP/HTTP, with its Prometheus
/metrics on a free port. A writer thread appends --rate lines a second to --active sessions at
a time: real fixture logs (tests/fixtures) with fresh ids, a third of the lines in two pieces.
A session written to its end is replaced by a new one; once more than --keep finished
sessions are there, the oldest (finished over --retire-seconds ago) is copied to an archive
directory and deleted, as people clean ~/.copilot/session-state. The daemon is SIGKILLed
--kills times (restarted at once with the same state directory) and the collector is taken
away (connections refused, open ones cut) --outages times for --outage-seconds, all spread
over the run.

Every --sample-seconds it samples the daemon's RSS, open fds and threads (/proc), the bytes of
its state directory and the number of series on /metrics. At the end the writer finishes its
sessions, the daemon delivers and is stopped, and a clean `otel-bridge replay` of the archive
and of what is left says which span ids there should be.

Verdicts (exit status 1 if one fails):
  flat      for each series, over the samples after --warmup-minutes, in the second half of
            the run, and at least --settle-seconds after the daemon's last (re)start: the
            least-squares slope (growth per hour) and max - min are both within the
            thresholds printed (a bounded sawtooth is allowed, a climb is not);
  delivered every span id of the clean replay was received;
  repeats   spans received more than once are at most the largest export batch received
            times the number of kills.

It prints the figures, writes every sample to --csv and the figures to --json, and with
--plot draws RSS, fds and threads, /metrics series and state-dir bytes over time in a PNG.
--plot needs matplotlib, which is not a dependency of otel-bridge: `pip install matplotlib`
into the environment that runs the bench; it is imported only then. Default sizes are the
hour-long run of docs/performance.md ("A month in an hour"); keep --rate modest on a shared
machine (tens of lines a second are a month's sessions in an hour)."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/month.py",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--minutes", type=float, default=60.0, help="how long the writer writes (60)")
    add("--rate", type=float, default=20.0, help="lines written a second, in all (20)")
    add("--active", type=int, default=8, help="sessions growing at once (8)")
    add("--keep", type=int, default=200, help="finished sessions left before cleaning (200)")
    add(
        "--retire-seconds",
        type=float,
        default=60.0,
        help="a finished session is cleaned away no sooner than this (60)",
    )
    add("--kills", type=int, default=3, help="SIGKILLs of the daemon, spread over the run (3)")
    add("--outages", type=int, default=2, help="times the collector goes away (2)")
    add("--outage-seconds", type=float, default=20.0, help="how long it stays away (20)")
    add("--sample-seconds", type=float, default=5.0, help="between samples (5)")
    add("--warmup-minutes", type=float, default=5.0, help="not judged at the start (5)")
    add("--settle-seconds", type=float, default=120.0, help="not judged after a start (120)")
    add("--csv", type=Path, help="write every sample here")
    add("--json", type=Path, help="write the figures and verdicts here")
    add("--plot", type=Path, help="draw a PNG here (needs matplotlib)")
    add(
        "--from-json",
        type=Path,
        help="measure nothing: print (and --plot) the figures a --json of an earlier run holds",
    )
    add("--scratch", type=Path, help="work here (default: a temporary directory, deleted)")
    add("--pythonpath", type=Path, default=Path(__file__).resolve().parent.parent)
    return parser.parse_args(argv)


def _schedule(args: argparse.Namespace) -> list[tuple[float, str]]:
    """(seconds from the start, what): kills evenly spread, outages between them."""
    total = args.minutes * 60
    events = [(total * (k + 1) / (args.kills + 1), "kill") for k in range(args.kills)]
    for o in range(args.outages):
        at = total * (2 * o + 1) / (2 * args.outages + 1)
        events += [(at, "down"), (at + args.outage_seconds, "up")]
    return sorted(events)


class _Tally:
    """Span ids received (id -> times) and spans per export request, drained from the
    receiver as they come so that its memory stays small over an hour."""

    def __init__(self, receiver: OtlpReceiver) -> None:
        self.receiver = receiver
        self.ids: Counter[str] = Counter()
        self.batches: list[int] = []
        self.requests = 0

    def drain(self) -> None:
        receiver = self.receiver
        with receiver._cond:  # taken and cleared at once: nothing arriving between is lost
            taken = [r for r in receiver._requests if r.signal == "traces"]
            receiver._requests.clear()
        for request in taken:
            count = 0
            for rs in request.message.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        self.ids[span.span_id.hex()] += 1
                        count += 1
            self.batches.append(count)
        self.requests += len(taken)


def _expected_ids(dirs: Sequence[Path], env: dict[str, str], log: Path) -> set[str]:
    """Span ids a clean replay of `dirs` exports."""
    ids: set[str] = set()
    with OtlpReceiver() as clean:
        replay_env = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": clean.http_endpoint}
        for directory in dirs:
            if not any(directory.iterdir()):
                continue  # nothing archived (a short run), or nothing left
            _, _, status = run_to_end("replay", [str(directory), "--no-progress"], replay_env, log)
            if status != 0:
                raise RuntimeError(f"the clean replay of {directory} exited {status}")
        ids.update(s["span_id"] for s in clean.spans())
    return ids


def _wait_delivered(bridge: Bridge, tally: _Tally, quiet_s: float, timeout: float) -> None:
    """Until no span has arrived for `quiet_s` seconds (or `timeout`)."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline and bridge.alive():
        tally.drain()
        total = sum(tally.batches)
        if total != last:
            last, since = total, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.5)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole measurement; returns every figure (the samples under "samples")."""
    work = Path(tempfile.mkdtemp(prefix="otel-bridge-month-", dir=args.scratch))
    root, archive, state = work / "session-state", work / "archive", work / "state"
    for directory in (root, archive):
        directory.mkdir()
    samples: list[dict[str, float]] = []
    events: list[tuple[float, str]] = []
    try:
        with OtlpReceiver() as receiver:
            forwarder = Forwarder(free_port(), int(receiver.http_endpoint.rsplit(":", 1)[1]))
            forwarder.up()
            env = bridge_env(
                args.pythonpath,
                {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{forwarder.port}"},
            )
            bridge_args = ["--session-state", str(root), "--state-dir", str(state)]
            port = free_port()
            log = work / "bridge.log"
            tally = _Tally(receiver)
            writer = MonthWriter(
                root,
                archive,
                load_templates(LIVE_FIXTURES),
                rate=args.rate,
                active=args.active,
                keep=args.keep,
                retire_s=args.retire_seconds,
            )

            def start() -> Bridge:
                return Bridge(bridge_args, env, log, port=port)

            bridge = start()
            try:
                if bridge.wait_ready(120) is None:
                    raise RuntimeError(f"never ready\n{bridge.log_tail()}")
                started = time.monotonic()
                writer.start()
                bridge = _loop(
                    args, start, state, bridge, writer, tally, forwarder, samples, events, started
                )
                writer.stop()
                if not forwarder.is_up:
                    forwarder.up()
                _wait_delivered(bridge, tally, quiet_s=10.0, timeout=300.0)
                bridge.stop()
                tally.drain()
            finally:
                writer.stop()
                bridge.stop()
                forwarder.down()
            expected = _expected_ids([archive, root], env, work / "replay.log")
            listing = {
                str(p.relative_to(state)): p.stat().st_size for p in state.rglob("*") if p.is_file()
            }
    finally:
        if args.scratch is None:
            shutil.rmtree(work, ignore_errors=True)
    return _figures(args, samples, events, tally, expected, writer, listing)


def _loop(
    args: argparse.Namespace,
    start: Callable[[], Bridge],
    state: Path,
    bridge: Bridge,
    writer: MonthWriter,
    tally: _Tally,
    forwarder: Forwarder,
    samples: list[dict[str, float]],
    events: list[tuple[float, str]],
    started: float,
) -> Bridge:
    """Sample every --sample-seconds until --minutes have passed; kill and restart the daemon,
    take the collector away and back, as scheduled. Returns the daemon running at the end."""
    schedule = _schedule(args)
    total = args.minutes * 60
    cpu_base = 0.0
    next_sample = 0.0
    while (now := time.monotonic() - started) < total:
        while schedule and schedule[0][0] <= now:
            _, what = schedule.pop(0)
            events.append((round(now, 1), what))
            if what == "kill":
                cpu_base += bridge.cpu_seconds()
                bridge.kill()
                bridge = start()  # at once, with the same state directory
            elif what == "down":
                forwarder.down()
            else:
                forwarder.up()
        if now >= next_sample:
            next_sample = now + args.sample_seconds
            sample = _sample(bridge, state, cpu_base)
            if sample is not None:
                tally.drain()
                sample.update(
                    t_s=round(now, 1),
                    lines=writer.lines,
                    sessions=writer.sessions,
                    deleted=writer.deleted,
                    spans=len(tally.ids),
                    collector=1.0 if forwarder.is_up else 0.0,
                )
                samples.append(sample)
        time.sleep(0.2)
    return bridge


def _sample(bridge: Bridge, state: Path, cpu_base: float) -> dict[str, float] | None:
    """What is sampled of the daemon now; None if it cannot be read, or does not serve
    /metrics yet (just restarted)."""
    try:
        sample = proc_figures(bridge.pid)
        cpu = bridge.cpu_seconds()
    except OSError:
        return None
    series = metric_series(bridge.port) if bridge.port else None
    if series is None:
        return None  # not serving yet: a process still starting is not what is measured
    sample.update(
        up_s=round(time.monotonic() - bridge.started, 1),
        cpu_s=round(cpu_base + cpu, 2),
        series=float(series),
        state_kb=round(dir_bytes(state) / 1024, 1),
    )
    return sample


def _figures(
    args: argparse.Namespace,
    samples: list[dict[str, float]],
    events: list[tuple[float, str]],
    tally: _Tally,
    expected: set[str],
    writer: MonthWriter,
    listing: dict[str, int],
) -> dict[str, Any]:
    flat = flatness(samples, warmup_s=args.warmup_minutes * 60, settle_s=args.settle_seconds)
    spans = delivery(expected, tally.ids, tally.batches, args.kills)
    series = {}
    for name in SERIES:
        values = [s[name] for s in samples if not math.isnan(s[name])]
        series[name] = {
            "start": values[0] if values else None,
            "end": values[-1] if values else None,
            "min": min(values, default=None),
            "max": max(values, default=None),
        }
    elapsed = samples[-1]["t_s"] if samples else 0.0
    return {
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "lines": writer.lines,
        "sessions": writer.sessions,
        "deleted": writer.deleted,
        "cpu_pct": round(100 * samples[-1]["cpu_s"] / elapsed, 2) if elapsed else None,
        "events": events,
        "series": series,
        "flat": [
            {
                "name": f.name,
                "first": f.first,
                "last": f.last,
                "min": f.low,
                "max": f.high,
                "slope_per_h": round(f.slope_per_h, 3),
                "judged": f.judged,
                "slope_limit": f.limit.slope,
                "span_limit": f.limit.span,
                "unit": f.limit.unit,
                "flat": f.flat,
            }
            for f in flat
        ],
        "delivery": spans,
        "state_files": listing,
        "ok": all(f.flat for f in flat)
        and spans["all_delivered"]
        and spans["repeats_within_budget"],
        "samples": samples,
    }


def report(figures: dict[str, Any]) -> str:
    """The figures as text."""
    out = [
        f"lines {figures['lines']:,}, sessions {figures['sessions']:,} "
        f"({figures['deleted']:,} archived and deleted), "
        f"daemon CPU {figures['cpu_pct']}% of a core",
        "events: " + ", ".join(f"{what} at {t / 60:.1f} min" for t, what in figures["events"]),
        "",
        f"{'series':<10}{'start':>10}{'end':>10}{'min':>10}{'max':>10}",
    ]
    for name, s in figures["series"].items():
        out.append(
            f"{name:<10}" + "".join(f"{_num(s[k]):>10}" for k in ("start", "end", "min", "max"))
        )
    out += ["", "flat (judged samples: warm, second half, settled after a start):"]
    out.append(
        f"{'series':<10}{'min':>10}{'max':>10}{'max-min':>10}{'limit':>8}"
        f"{'slope/h':>10}{'limit':>8}{'n':>5}  verdict"
    )
    for f in figures["flat"]:
        out.append(
            f"{f['name']:<10}{_num(f['min']):>10}{_num(f['max']):>10}"
            f"{_num(f['max'] - f['min']):>10}{_num(f['span_limit']):>8}"
            f"{_num(f['slope_per_h']):>10}{_num(f['slope_limit']):>8}{f['judged']:>5}  "
            f"{'flat' if f['flat'] else 'NOT FLAT'}"
        )
    d = figures["delivery"]
    out += [
        "",
        f"spans expected {d['expected_spans']:,}, received {d['received_distinct']:,} distinct "
        f"({d['received_total']:,} in all): lost {d['lost']}, extra {d['extra']}",
        f"repeats {d['repeats']} ({d['repeats_per_kill']} a kill); largest batch "
        f"{d['max_batch_spans']}, mean {d['mean_batch_spans']}; budget {d['repeat_budget']}: "
        f"{'within' if d['repeats_within_budget'] else 'OVER'}",
        "state dir: "
        + ", ".join(f"{k} {v:,} B" for k, v in sorted(figures["state_files"].items())),
        "",
        "verdict: " + ("PASS" if figures["ok"] else "FAIL"),
    ]
    return "\n".join(out)


def _num(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{value:,.0f}"


def plot(figures: dict[str, Any], path: Path) -> None:
    """RSS, fds and threads, /metrics series and state-dir bytes over time, kills as red
    lines and outages shaded. matplotlib is imported here only: not a dependency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = figures["samples"]
    minutes = [s["t_s"] / 60 for s in samples]
    panels = [
        ("RSS (MB)", ["rss_mb"]),
        ("open fds, threads", ["fds", "threads"]),
        ("/metrics series", ["series"]),
        ("state dir (KiB)", ["state_kb"]),
    ]
    fig, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(8, 7.5), dpi=80)
    downs = [t / 60 for t, what in figures["events"] if what == "down"]
    ups = [t / 60 for t, what in figures["events"] if what == "up"]
    for ax, (title, names) in zip(axes, panels, strict=True):
        for name in names:
            ax.plot(minutes, [s[name] for s in samples], linewidth=1, label=name)
        ax.set_ylabel(title, fontsize=8)
        ax.set_ylim(bottom=0)
        for t, what in figures["events"]:
            if what == "kill":
                ax.axvline(t / 60, color="red", linewidth=0.8, linestyle="--")
        for a, b in zip(downs, ups, strict=False):
            ax.axvspan(a, b, color="orange", alpha=0.3)
        if len(names) > 1:
            ax.legend(fontsize=7, loc="lower right")
    axes[-1].set_xlabel("minutes (red: SIGKILL and restart; orange: collector away)")
    d = figures["delivery"]
    fig.suptitle(
        f"otel-bridge run, a month in an hour: {figures['sessions']:,} sessions, "
        f"{d['expected_spans']:,} spans, {d['lost']} lost, {d['repeats']} repeated",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_json:
        figures = json.loads(args.from_json.read_text())
        figures["events"] = [tuple(e) for e in figures["events"]]
    else:
        figures = run(args)
    print(report(figures))
    if args.csv:
        write_csv(args.csv, figures["samples"])
    if args.json and not args.from_json:
        args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n")
    if args.plot:
        plot(figures, args.plot)
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
