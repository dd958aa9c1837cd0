"""The replay hot path against a bare loop: how close `otel-bridge replay` comes to only reading
the lines and decoding their JSON.

Builds a session-state-like tree of `--copies` copies of every fixture log (each copy its own
session directory), then times, in this one process:

- the bare loop: read each file's lines, `json.loads` each (the floor any reader pays);
- `otel-bridge replay` with no exporter (OTEL_TRACES_EXPORTER=none: decode, assemble, sample,
  scrub, map to SDK spans);
- `otel-bridge replay --traces-file` (the same, plus the OTLP JSON Lines file).

Each replay runs with `--jobs 1`, in this process: the default would read a corpus this size
in worker processes, whose CPU time this process's does not count. Prints events/s and each
replay's speed as a fraction of the bare loop's ("x bare"), by wall time and by CPU time (both
threads: the exporter writes in its own); never asserts (the machine is noisy). `--profile`
also prints the top of a cProfile of the --traces-file replay.

    python bench/bench_hotpath.py [--copies N] [--repeat N] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from otel_bridge.cli import main as cli_main

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures"


def build_corpus(root: Path, copies: int) -> tuple[list[Path], int]:
    """`copies` session directories per fixture log under `root`; the files and their events."""
    sources = sorted(FIXTURES.glob("*/events.jsonl"))
    files = []
    for copy in range(copies):
        for source in sources:
            session = root / f"{copy:05d}-{source.parent.name}"
            session.mkdir(parents=True)
            target = session / "events.jsonl"
            shutil.copyfile(source, target)
            files.append(target)
    events = sum(1 for path in files for line in path.open("rb") if line.strip())
    return files, events


def bare_loop(files: list[Path]) -> None:
    """The floor: read every line, decode its JSON, nothing else."""
    for path in files:
        with path.open("rb") as handle:
            for line in handle:
                if line.strip():
                    json.loads(line)


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set environment variables for the block (the CLI reads OTEL_* from os.environ)."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def replay(root: Path, traces_file: Path | None) -> None:
    """`otel-bridge replay` in this process, quiet, exporting to the file or nowhere."""
    # --jobs 1: this process alone (its CPU time would not count workers')
    argv = ["replay", str(root), "--no-progress", "--log-level", "ERROR", "--jobs", "1"]
    if traces_file is not None:
        argv += ["--traces-file", str(traces_file)]
    with environment(OTEL_TRACES_EXPORTER="none"):
        status = cli_main(argv)
    if status != 0:
        raise SystemExit(f"replay exited {status}")


def best_of(repeat: int, run: Callable[[], None]) -> tuple[float, float]:
    """The fastest of `repeat` runs: (wall seconds, CPU seconds of this process, all threads).
    CPU time is the steadier figure on a shared machine; the fastest run is the one the other
    load disturbed least."""
    times = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(times)


def profile_all_threads(run: Callable[[], None], stream: io.StringIO) -> pstats.Stats:
    """Profile `run` and every thread it starts (each exporter encodes in its own worker
    thread, which a plain cProfile of the main thread does not see), merged in one table.

    A worker's time waiting for work shows as `acquire` of a lock: not CPU. Where one profiler
    at a time is all Python allows (3.12 and later), the threads run unprofiled.
    """
    profilers: list[cProfile.Profile] = []
    original = threading.Thread.run

    def profiled_run(thread: threading.Thread) -> None:
        profiler = cProfile.Profile()
        try:
            profiler.enable()
        except ValueError:  # another profiler is active (sys.monitoring allows one)
            original(thread)
            return
        profilers.append(profiler)
        try:
            original(thread)
        finally:
            profiler.disable()

    threading.Thread.run = profiled_run  # type: ignore[method-assign]
    try:
        main_profiler = cProfile.Profile()
        main_profiler.runcall(run)
    finally:
        threading.Thread.run = original  # type: ignore[method-assign]
    stats = pstats.Stats(main_profiler, stream=stream)
    for profiler in profilers:
        stats.add(profiler)
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--copies", type=int, default=30, help="copies of every fixture log (default: 30)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, best kept")
    parser.add_argument(
        "--profile", action="store_true", help="also profile the --traces-file replay"
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench_hotpath-"))
    try:
        root = scratch / "session-state"
        files, events = build_corpus(root, args.copies)
        size = sum(path.stat().st_size for path in files)
        out = scratch / "traces.jsonl"
        print(f"{len(files)} sessions, {events} events, {size / 2**20:.1f} MiB")

        bare = best_of(args.repeat, lambda: bare_loop(files))
        rows = [
            ("bare loop", bare),
            ("replay, no exporter", best_of(args.repeat, lambda: replay(root, None))),
            ("replay --traces-file", best_of(args.repeat, lambda: replay(root, out))),
        ]
        print(f"{'':21} {'wall s':>7} {'events/s':>9} {'x bare':>6}   {'CPU s':>7} {'x bare':>6}")
        for name, (wall, cpu) in rows:
            print(
                f"{name:21} {wall:7.3f} {events / wall:9.0f} {bare[0] / wall:6.2f}   "
                f"{cpu:7.3f} {bare[1] / cpu:6.2f}"
            )
        print(f"(--traces-file wrote {out.stat().st_size / 2**20:.1f} MiB)")
        if args.profile:
            text = io.StringIO()
            stats = profile_all_threads(lambda: replay(root, out), text)
            stats.sort_stats("tottime").print_stats(25)
            stats.sort_stats("cumulative").print_stats(40)
            print(text.getvalue())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
