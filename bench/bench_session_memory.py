"""Memory a quiet session holds: what `run` keeps per followed log between its tasks.

A daemon follows thousands of logs, most of them quiet with no task open. For each fixture log
this feeds every event to a `SessionAssembler`, closes its open interaction as `run` does for a
quiet log (`end_of_input`, the session kept), drops the events and spans, and prints the bytes
still allocated (tracemalloc) by the session alone. Prints figures, never asserts.

    python bench/bench_session_memory.py [--copies N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

from otel_bridge import AssemblerConfig, AssemblerStats, JsonLinesDecoder, SessionAssembler

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures"
#: The log whose one task a long session repeats, and the fields made unique in each copy.
TASK_LOG = FIXTURES / "one_tool_cli1092" / "events.jsonl"
ID_FIELDS = frozenset(
    {
        "id",
        "parentId",
        "messageId",
        "originatingMessageId",
        "interactionId",
        "toolCallId",
        "apiCallId",
    }
)


def _renamed(value: Any, suffix: str) -> Any:
    """`value` with every id field given `suffix`, so a copy of a task is a new task."""
    if isinstance(value, dict):
        return {
            k: f"{v}{suffix}" if k in ID_FIELDS and isinstance(v, str) else _renamed(v, suffix)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_renamed(v, suffix) for v in value]
    return value


def long_log(tasks: int) -> bytes:
    """A session of `tasks` tasks: the task of TASK_LOG again and again, a minute apart."""
    lines = [json.loads(line) for line in TASK_LOG.read_text().splitlines()]
    start, task, end = lines[0], lines[1:-1], lines[-1]
    out = [start]
    for number in range(tasks):
        for event in task:
            copy = _renamed(event, f"-{number}")
            moment = dt.datetime.fromisoformat(copy["timestamp"].replace("Z", "+00:00"))
            moment += dt.timedelta(minutes=number)
            copy["timestamp"] = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            out.append(copy)
    out.append(end)
    return "".join(json.dumps(event) + "\n" for event in out).encode()


def closed_session_bytes(data: bytes, copies: int) -> int:
    """Bytes per closed session, over `copies` sessions fed the same log."""
    config, stats = AssemblerConfig(), AssemblerStats()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    sessions = []
    for copy in range(copies):
        events = JsonLinesDecoder(f"s{copy}").feed(data)
        session = SessionAssembler(f"s{copy}", config, stats)
        for event in events:
            session.feed(event)
        session.end_of_input()
        del events
        sessions.append(session)
    stats.unplaced.clear()  # shared across sessions, not per session
    stats.unknown_types.clear()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    del sessions
    return held // copies


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=20, help="sessions per fixture log")
    parser.add_argument(
        "--tasks", type=int, default=1000, help="tasks in the long session (0: none)"
    )
    args = parser.parse_args()
    tracemalloc.start()
    figures = []
    for path in sorted(FIXTURES.glob("*/events.jsonl")):
        data = path.read_bytes()
        held = closed_session_bytes(data, args.copies)
        events = len(JsonLinesDecoder("count").feed(data))
        figures.append(held)
        print(f"{path.parent.name:28} {events:4d} events  {held:7d} bytes per closed session")
    figures.sort()
    print(
        f"{len(figures)} logs: median {figures[len(figures) // 2]} bytes, "
        f"max {figures[-1]} bytes per closed session"
    )
    if args.tasks:
        data = long_log(args.tasks)
        events = len(JsonLinesDecoder("count").feed(data))
        held = closed_session_bytes(data, 1)
        print(f"long session: {args.tasks} tasks, {events} events: {held} bytes when closed")


if __name__ == "__main__":
    main()
