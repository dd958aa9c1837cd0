"""What `run`'s running-now gauges cost: one scan of the open tasks per scrape.

`run` computes the gauges of docs/metrics.md ("Running now") from the assembler's open state
when /metrics is scraped (`Assembler.in_flight`), the status line's glance every
`--status-interval` (`Assembler.glance`), and every 5 s looks for the signals only a clock
tells (`StreamFeeder.watch`: the quiet-task policy over every open task, then
`Assembler.watch`). Each is a walk over the open tasks, nothing between them. This feeds
one `Assembler` N sessions, each with a task left open (turns of an LLM call and a shell call,
one session in ten with a permission prompt unanswered, one in twenty repeating a call), then
times each walk (the median of a few) against feeding those same events: the figure to read is
how many events' worth of feeding one scrape costs, which a noisy machine keeps. Never asserts.

    python bench/bench_running_now.py [--sessions 100,1000,10000] [--turns 20]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from otel_bridge import Assembler, Event  # noqa: E402
from otel_bridge.feed import StreamFeeder  # noqa: E402
from tests.builder import Log  # noqa: E402


def open_task(n: int, turns: int) -> tuple[list[Event], int]:
    """Session `n`'s events, a task of `turns` turns still open at its end, and the time of its
    last event."""
    log = Log.asked(f"s{n}")
    for turn in range(turns):
        call = f"c{turn}"
        log.turn(str(turn))
        log.usage(f"u{turn}")
        log.message([(call, "bash")], turn=str(turn))
        command = "ls" if n % 20 == 0 else f"echo {turn}"  # one session in 20 repeats a call
        log.add(
            "tool.execution_start", toolCallId=call, toolName="bash", arguments={"command": command}
        )
        if turn == turns - 1 and n % 10 == 0:  # asks a person, who has not answered
            ask = {"kind": "shell", "toolCallId": call}
            log.add("permission.requested", requestId=f"p{turn}", permissionRequest=ask)
            break
        log.tool_done(call)
        log.turn_end(str(turn))
    return log.events(), log.now


def median_ms(work: Callable[[], object], repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(sessions: int, turns: int) -> dict[str, float]:
    tasks = [open_task(n, turns) for n in range(sessions)]
    events = sum(len(batch) for batch, _ in tasks)
    assembler = Assembler()
    start = time.perf_counter()
    for n, (batch, _) in enumerate(tasks):
        assembler.feed(f"log-{n}", batch)
    feed_ms = (time.perf_counter() - start) * 1000
    # a minute after the tasks' last events: no clock signal due, so every walk is the steady
    # one (a signal is raised once per task, then only looked at)
    now_ns = max(last for _, last in tasks) + 60 * 10**9
    view = assembler.in_flight(now_ns)
    feeder = StreamFeeder(assembler, lambda _records: None)  # run's clock goes through it
    per_event_ms = feed_ms / events
    figures = {
        "open": sum(view["copilot.tasks.open"].values()),
        "waiting": sum(view["copilot.tasks.waiting_for_user"].values()),
        "events": events,
        "feed_us_per_event": per_event_ms * 1000,
        "in_flight_ms": median_ms(lambda: assembler.in_flight(now_ns)),
        "glance_ms": median_ms(assembler.glance),
        "watch_ms": median_ms(lambda: feeder.watch(now_ns / 1e9)),
    }
    for walk in ("in_flight", "glance", "watch"):
        figures[f"{walk}_events"] = figures[f"{walk}_ms"] / per_event_ms
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="100,1000,10000", help="comma-separated counts")
    parser.add_argument("--turns", type=int, default=20, help="turns of each open task")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the repeated calls' signals, one line per task
    print(
        f"{'open':>7} {'waiting':>7} {'feed/event':>11} "
        f"{'scrape (in_flight)':>24} {'status (glance)':>22} {'clock (watch)':>22}"
    )
    for sessions in (int(s) for s in args.sessions.split(",")):
        f = measure(sessions, args.turns)
        print(
            f"{f['open']:>7.0f} {f['waiting']:>7.0f} {f['feed_us_per_event']:>8.1f} us "
            f"{f['in_flight_ms']:>8.2f} ms = {f['in_flight_events']:>6.0f} events "
            f"{f['glance_ms']:>6.2f} ms = {f['glance_events']:>6.0f} events "
            f"{f['watch_ms']:>6.2f} ms = {f['watch_events']:>6.0f} events"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
