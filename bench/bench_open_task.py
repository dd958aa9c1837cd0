"""Memory an open task holds as it goes on: a task that never ends, a million events long.

Feeds one `SessionAssembler` a synthetic autopilot task that never ends: turn after turn, each
with an LLM call, a message asking for two tools, both run (one moves a shell to the
background, reported later), and every tenth turn a sub-agent, every hundredth a compaction
and a steering message, every fiftieth an autopilot nudge with an interactionId of its own.
The events are made one at a time and dropped, and so are the spans: what stays allocated
(tracemalloc) is what the assembler holds for the open task. Prints it at a few points; never
asserts.

    python bench/bench_open_task.py [--events 1000000]
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

from otel_bridge import AssemblerConfig, AssemblerStats, SessionAssembler, event_from_json

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def stamp(ms: int) -> str:
    seconds, millis = divmod(BASE_MS + ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def task(events: int) -> Iterator[dict[str, Any]]:
    """The events of the endless task, `events` of them."""
    count = 0
    clock = 0

    def event(type_: str, agent: str | None = None, **data: Any) -> dict[str, Any]:
        nonlocal count, clock
        count += 1
        clock += 10
        obj: dict[str, Any] = {"type": type_, "data": data, "id": f"e{count}"}
        obj["timestamp"] = stamp(clock)
        if agent is not None:
            obj["agentId"] = agent
        return obj

    yield event("session.start", sessionId="s", copilotVersion="1.0.102", selectedModel="m")
    yield event("session.mode_changed", newMode="autopilot")
    yield event("user.message", content="go", interactionId="i0")
    turn = 0
    while count < events:
        turn += 1
        yield event("assistant.turn_start", turnId=str(turn), interactionId="i0")
        usage = {"model": "m", "inputTokens": 100, "outputTokens": 10, "duration": 5}
        usage |= {"apiCallId": f"a{turn}", "accounting": {"usageId": f"u{turn}"}}
        yield event("session.usage_record", usage=usage)
        requests = [{"toolCallId": f"c{turn}", "name": "bash"}]
        requests.append({"toolCallId": f"v{turn}", "name": "view"})
        yield event("assistant.message", content="ok", toolRequests=requests, apiCallId=f"a{turn}")
        yield event("tool.execution_start", toolCallId=f"c{turn}", toolName="bash")
        yield event("tool.execution_start", toolCallId=f"v{turn}", toolName="view")
        result = {"content": f"<command started in background with shellId: s{turn}>"}
        yield event("tool.execution_complete", toolCallId=f"c{turn}", success=True, result=result)
        yield event("tool.execution_complete", toolCallId=f"v{turn}", success=True)
        kind = {"type": "shell_completed", "shellId": f"s{turn}", "exitCode": 0}
        yield event("system.notification", kind=kind)
        if turn % 10 == 0:
            agent = f"sub{turn}"
            yield event("subagent.started", agent, toolCallId=f"t{turn}", agentName="explore")
            yield event("subagent.completed", agent, toolCallId=f"t{turn}")
        if turn % 100 == 0:
            yield event("session.compaction_start", trigger="threshold")
            yield event("user.message", content="and", interactionId="i0", delivery="steering")
        if turn % 50 == 0:
            nudge = {"content": "", "isAutopilotContinuation": True, "interactionId": f"n{turn}"}
            yield event("user.message", **nudge)
        yield event("assistant.turn_end", turnId=str(turn))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    points = sorted({args.events // 10, args.events // 4, args.events // 2, args.events})
    tracemalloc.start()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    session = SessionAssembler("s", AssemblerConfig(), AssemblerStats())
    started = time.perf_counter()
    print(f"{'events':>10} {'held KiB':>10} {'spans':>10}")
    for n, obj in enumerate(task(args.events), 1):
        session.feed(event_from_json(obj))  # the spans it finished are dropped
        if n in points:
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
            print(f"{n:>10} {held / 1024:>10.0f} {session.stats.spans:>10}", flush=True)
    still_open = session.interaction is not None
    print(f"({time.perf_counter() - started:.0f} s; task still open: {still_open})")


if __name__ == "__main__":
    main()
