"""`replay --jobs`: events per second with one process and with two, on a grown corpus.

The corpus is the real fixture logs (tests/fixtures/*/events.jsonl) copied N times into a
session-state tree: each copy gets a fresh session id (in `session.start` and as its directory
name, so that its spans get ids of their own) and its times shifted by a day per copy. Each run
is the real command, `python -m otel_bridge replay DIR --traces-file FILE --jobs J`, timed from
the outside (start-up included); the runs of each --jobs value alternate, and the best counts,
so that a burst of load elsewhere does not favour one. It also measures, in this process, what
sending a log's results between processes costs (pickling them in the worker, unpickling them
in the parent) against reading the logs. Prints figures, never asserts: the machine is noisy.

    python bench/bench_jobs.py [--copies N] [--jobs 1 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures"
ROOT = Path(__file__).parent.parent


def grow_corpus(target: Path, copies: int) -> tuple[int, int]:
    """Write `copies` copies of every fixture log under `target`; returns (logs, events)."""
    sources = sorted(FIXTURES.glob("*/events.jsonl"))
    logs = events = 0
    for copy in range(copies):
        shift = timedelta(days=copy)
        for source in sources:
            session = str(uuid.UUID(int=(copy << 32) + logs + 1, version=4))
            directory = target / session
            directory.mkdir(parents=True)
            lines = [_rewrite(line, session, shift) for line in source.read_bytes().splitlines()]
            (directory / "events.jsonl").write_bytes(b"\n".join(lines) + b"\n")
            logs += 1
            events += sum(1 for line in lines if line.strip())
    return logs, events


def _rewrite(line: bytes, session: str, shift: timedelta) -> bytes:
    """The line with its session id and times moved; a line that is not JSON as it is."""
    try:
        event = json.loads(line)
    except ValueError:
        return line
    if not isinstance(event, dict):
        return line
    if isinstance(event.get("timestamp"), str):
        event["timestamp"] = _shifted(event["timestamp"], shift)
    data = event.get("data")
    if event.get("type") == "session.start" and isinstance(data, dict):
        data["sessionId"] = session
        if isinstance(data.get("startTime"), str):
            data["startTime"] = _shifted(data["startTime"], shift)
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


def _shifted(stamp: str, shift: timedelta) -> str:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return (moment + shift).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def replay_seconds(corpus: Path, out: Path, jobs: int) -> float:
    """Wall-clock seconds of one `replay --jobs` run of the whole corpus."""
    command = [sys.executable, "-m", "otel_bridge", "replay", str(corpus)]
    command += ["--traces-file", str(out), "--no-progress", "--jobs", str(jobs)]
    command += ["--log-level", "WARNING"]
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "none", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return time.perf_counter() - start


def pickling_cost(corpus: Path) -> None:
    """Print the time to read and assemble the logs in one process, and the time to pickle and
    unpickle what the workers would send back for them (metric observations included)."""
    from otel_bridge import Assembler, AssemblerConfig
    from otel_bridge.sources import _parallel as parallel
    from otel_bridge.sources import find_logs, replay_logs

    logs = find_logs([corpus])
    start = time.perf_counter()
    replay_logs(logs, Assembler(), lambda records: None)
    work = time.perf_counter() - start
    logging.disable(logging.WARNING)  # what a worker logs is kept, not printed: quiet here too
    dumps = loads = 0.0
    size = 0
    for log in logs:
        task = parallel._Task((log,), AssemblerConfig(), 1 << 24, True)
        result = parallel._replay_one(log, task)
        start = time.perf_counter()
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        dumps += time.perf_counter() - start
        start = time.perf_counter()
        pickle.loads(data)
        loads += time.perf_counter() - start
        size += len(data)
    logging.disable(logging.NOTSET)
    print(
        f"read + assemble in one process {work:.2f} s; sending the results: pickle "
        f"{dumps:.2f} s (workers) + unpickle {loads:.2f} s (parent), {size / 2**20:.1f} MiB; "
        f"unpickling is {loads / work:.0%} of the work moved"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=60, help="copies of every fixture log")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="--jobs values")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best counts")
    parser.add_argument("--keep", type=Path, help="build the corpus here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as scratch:
        corpus = args.keep or Path(scratch) / "session-state"
        logs, events = grow_corpus(corpus, args.copies)
        size = sum(p.stat().st_size for p in corpus.glob("*/events.jsonl"))
        print(f"corpus: {logs} logs, {events} events, {size / 2**20:.1f} MiB")
        pickling_cost(corpus)
        runs: dict[int, list[float]] = {jobs: [] for jobs in args.jobs}
        for _ in range(args.repeat):
            for jobs in args.jobs:
                out = Path(scratch) / f"traces-{jobs}.jsonl"
                runs[jobs].append(replay_seconds(corpus, out, jobs))
        best = {jobs: min(times) for jobs, times in runs.items()}
        for jobs, times in runs.items():
            print(
                f"--jobs {jobs}: best {best[jobs]:6.2f} s of {args.repeat} "
                f"({', '.join(f'{t:.2f}' for t in times)}), {events / best[jobs]:8.0f} events/s"
            )
        first = args.jobs[0]
        for jobs in args.jobs[1:]:
            print(f"--jobs {jobs} vs --jobs {first}: {best[first] / best[jobs]:.2f}x as fast")
        print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
