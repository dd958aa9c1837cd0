"""How many worker processes a replay gets: a module apart from the workers themselves, so
that asking (the parser's --jobs help, `run`) does not import multiprocessing."""

from __future__ import annotations

import os

__all__ = ["WORKERS_FROM_BYTES", "default_jobs", "usable_cores"]

#: Below this many bytes of logs, the default is to read them in the one process: the workers
#: cost their start (some 0.05 s forked on Linux, 0.2 s with a forkserver's interpreter and
#: imports) and some CPU time (sending results), more than they save on less
#: (bench/bench_jobs.py: some 45 MiB/s in one process), and less still on a machine whose
#: cores are busy.
WORKERS_FROM_BYTES = 16 << 20


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system says, e.g. in a
    container limited with cpusets), else every core."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # no sched_getaffinity: macOS, Windows
        return os.cpu_count() or 1


def default_jobs(total_bytes: int) -> int:
    """The jobs when none are asked for: the usable cores, unless the logs are too few bytes
    for workers to pay for their start (`WORKERS_FROM_BYTES`)."""
    return usable_cores() if total_bytes >= WORKERS_FROM_BYTES else 1
