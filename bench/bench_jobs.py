"""`replay --jobs`: events per second with one process and with two, on a grown corpus.

The corpus is the real fixture logs (tests/fixtures/*/events.jsonl) copied N times into a
session-state tree: each copy gets a fresh session id (in `session.start` and as its directory
name, so that its spans get ids of their own) and its times shifted by a day per copy. Each run
is the real command, `otel-bridge replay DIR --jobs J`, with `--traces-file FILE` and then with
no exporter, timed from the outside (start-up included); the runs of each --jobs value
alternate, and the best counts, so that a burst of load elsewhere does not favour one. Each run
also reports the CPU time of the parent and of its workers: on a busy machine the wall times
say little, the CPU times still say where the work is, and so the speed-up that free cores
would give at best ("bound"). It also measures, in this process, what sending a log's results
between processes costs (pickling them in the worker, unpickling them in the parent). Prints
figures, never asserts: the machine is noisy. Run it from outside a checkout other than this
one (`python -c` puts the current directory first on the path).

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


#: Runs `otel-bridge replay` (the arguments after -c) and prints, on its last line, the CPU
#: seconds of this process and of its workers (reaped children), as JSON.
_MEASURED = """
import json, resource, sys
from otel_bridge.cli import main
status = main(sys.argv[1:])
me, workers = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(json.dumps([me.ru_utime + me.ru_stime, workers.ru_utime + workers.ru_stime]))
sys.exit(status)
"""


def replay_seconds(corpus: Path, out: Path | None, jobs: int) -> tuple[float, float, float]:
    """One `replay --jobs` run of the whole corpus (to the traces file `out`, or to no
    exporter): wall-clock seconds, the parent's CPU seconds, the workers' CPU seconds."""
    command = [sys.executable, "-c", _MEASURED, "replay", str(corpus)]
    command += ["--no-progress", "--jobs", str(jobs), "--log-level", "WARNING"]
    if out is not None:
        command += ["--traces-file", str(out)]
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "none", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(command, check=True, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    parent, workers = json.loads(done.stdout.splitlines()[-1])
    return wall, parent, workers


def pickling_cost(corpus: Path) -> None:
    """Print the time to read and assemble the logs in one process, and the time to pickle and
    unpickle what the workers send back for them (metric observations included): span records
    (as when a sampler drops spans, or for exporters of SDK spans), or each span's id and its
    text for the traces file (--traces-file alone: the workers scrub and encode)."""
    from otel_bridge import Assembler, AssemblerConfig
    from otel_bridge.feed import StreamFeeder
    from otel_bridge.feed import _worker as parallel
    from otel_bridge.processors import Scrubber, ScrubberConfig
    from otel_bridge.sources import find_logs, replay_logs

    logs = find_logs([corpus])
    start = time.perf_counter()
    replay_logs(logs, StreamFeeder(Assembler(), lambda records: None))
    work = time.perf_counter() - start
    logging.disable(logging.WARNING)  # what a worker logs is kept, not printed: quiet here too
    payloads = {
        "records": None,
        "ids and texts": parallel.Prepare(ScrubberConfig(), encode=True, records=False),
    }
    for name, prepare in payloads.items():
        dumps = loads = 0.0
        size = 0
        scrubber = Scrubber(prepare.scrub) if prepare is not None else None
        for log in logs:
            task = parallel._Task((log,), AssemblerConfig(), 1 << 24, True, prepare)
            result = parallel._replay_one(log, task, scrubber)
            start = time.perf_counter()
            data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            dumps += time.perf_counter() - start
            start = time.perf_counter()
            pickle.loads(data)
            loads += time.perf_counter() - start
            size += len(data)
        print(
            f"read + assemble in one process {work:.2f} s; sending {name}: pickle "
            f"{dumps:.2f} s (workers) + unpickle {loads:.2f} s (parent), {size / 2**20:.1f} MiB"
        )
    logging.disable(logging.NOTSET)


def compare(
    corpus: Path, out: Path | None, jobs_values: list[int], repeat: int, events: int
) -> None:
    """Print each --jobs value's best wall time (runs alternating), and the CPU time of the
    parent and of the workers in that run. On a busy machine the wall times say little; the
    CPU times still say where the work is: with N workers, the run can take no less than the
    parent's CPU time, nor than the workers' over N ("bound", the speed-up a machine with N
    free cores would give at best, against --jobs 1's CPU time)."""
    runs: dict[int, list[tuple[float, float, float]]] = {jobs: [] for jobs in jobs_values}
    for _ in range(repeat):
        for jobs in jobs_values:
            runs[jobs].append(replay_seconds(corpus, out, jobs))
    best = {jobs: min(times) for jobs, times in runs.items()}
    one = best[jobs_values[0]][1] + best[jobs_values[0]][2]
    for jobs, times in runs.items():
        wall, parent, workers = best[jobs]
        bound = one / max(parent, workers / jobs) if jobs > 1 else 1.0
        print(
            f"  --jobs {jobs}: best {wall:6.2f} s of {repeat} "
            f"({', '.join(f'{t[0]:.2f}' for t in times)}), {events / wall:8.0f} events/s; "
            f"CPU s: parent {parent:.2f}, workers {workers:.2f}; bound {bound:.2f}x"
        )
    first = jobs_values[0]
    for jobs in jobs_values[1:]:
        print(f"  --jobs {jobs} vs --jobs {first}: {best[first][0] / best[jobs][0]:.2f}x as fast")


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
        for name, out in (("--traces-file", Path(scratch) / "traces.jsonl"), ("no exporter", None)):
            print(f"{name}:")
            compare(corpus, out, args.jobs, args.repeat, events)
        print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
