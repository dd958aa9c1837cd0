"""`replay --jobs N`: sessions read and assembled in N worker processes, written by the parent.

Why processes: decoding JSON and assembling spans is pure Python, so threads would share one
core. Why this split: a worker reads one session log at a time, start to end, with an assembler
of its own (a task is a run of consecutive logs of about 1 MiB, so that small logs do not each
pay a round trip between processes), and sends back everything that reading produced, as
values: the batches of span records, the metric observations (recorded, not made: see
`RecordingRecorder`), the read counts, the assembler's counts and the log records. The parent
takes the results in session order, whichever worker finished first, and replays each into the
one pipeline as a single process would have made it: the session's log lines, its
observations, then its batches to the sink. So the parent stays the only writer of every output
(traces file, console, OTLP, metrics), sampling sees the same traces in the same order, and the
output equals that of `--jobs 1`: span ids are derived, not random, and no state crosses
sessions in a replay (each log is its own stream, ended at its end).

What the parent still does per span is kept small: when no sampler drops spans (the default),
the workers also scrub them, with the sink's scrubber configuration (`Prepare`), and encode
them for the OTLP JSON file; with --traces-file as the only destination they send only each
span's id and text, which the parent queues as they are (`SpanSink.export_encoded`): no
records pickled or unpickled, nothing converted. Other exporters need SDK spans, which the
parent makes of the scrubbed records. A sampler that drops spans judges them before they are
scrubbed, so then the parent scrubs, as with one process. On 1240 small logs with
--traces-file, the parent's CPU time is some 0.5 s (0.26 s of it start-up), the workers' 1.0
to 1.2 s, against 1.2 to 1.4 s for one process (bench/bench_jobs.py).

Ctrl-C: the workers never see SIGINT (they are started with it blocked, and ignore it once
running), so none prints a traceback; the parent gets KeyboardInterrupt as it does with one
process (so does `replay` on SIGTERM), ends the workers and goes on with its own shutdown
(spans queued are delivered). A worker ended while it sent a result cannot leave the pool
waiting for the rest (`_stop`). A parent killed outright (SIGKILL) ends nothing: each worker
watches it and exits with it.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import fields

from .._records import SpanRecord
from ..assembler import Assembler, AssemblerStats
from ..decode._lines import DEFAULT_MAX_LINE_BYTES
from ..metrics._recorder import NullRecorder
from ..sources import DEFAULT_MAX_LOG_BYTES, LogFile, ReplaySummary, replay_logs
from ._feeder import StreamFeeder
from ._worker import (
    Prepare,
    PreparedSink,
    RecordingRecorder,
    SessionResult,
    _replay_task,
    _start_worker,
    _Task,
    replay_into,
)

__all__ = [
    "Prepare",
    "PreparedSink",
    "RecordingRecorder",
    "SessionResult",
    "Workers",
    "replay_into",
    "replay_logs_parallel",
]

#: Results each worker may have waiting ahead of the parent: enough to keep the workers busy
#: behind a long session, few enough that memory stays bounded when the parent is slower.
_AHEAD_PER_WORKER = 4

#: A task is a run of consecutive logs of about this many bytes, or this many logs.
_TASK_BYTES = 1 << 20
_TASK_LOGS = 64


class Workers:
    """The worker processes of a parallel replay, started when made.

    Made before the process starts any thread (the exporters' and the metric readers' come
    with the pipeline), they are forked from it on Linux: no interpreter to start, nothing to
    import again (see `_context`). A context manager: on an exception the workers are ended at
    once, else they are let go when idle.
    """

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        context = _context()
        level = logging.getLogger("otel_bridge").getEffectiveLevel()
        self.pool = ProcessPoolExecutor(
            jobs, context, initializer=_start_worker, initargs=(level, os.getpid())
        )
        if context.get_start_method() == "fork":
            # The first submit forks every worker (a later one, none), now, while this
            # process has no other thread a fork could copy halfway through a lock.
            try:
                with _sigint_held():
                    self.pool.submit(int)
            except BaseException:  # a Ctrl-C held back meanwhile: no owner to stop them
                self.stop()
                raise

    def stop(self) -> None:
        """End the workers now (see `_stop`)."""
        _stop(self.pool)

    def close(self) -> None:
        """Let the workers go once they are done."""
        self.pool.shutdown(wait=True)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.close()
        else:
            self.stop()


def replay_logs_parallel(
    logs: Sequence[LogFile],
    assembler: Assembler,
    emit: Callable[[list[SpanRecord]], object],
    *,
    jobs: int,
    workers: Workers | None = None,
    on_progress: Callable[[int], None] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    prepare: tuple[Prepare, PreparedSink] | None = None,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
) -> ReplaySummary:
    """`replay_logs` with the logs read in `jobs` worker processes; the same spans, metrics,
    log lines and summary, in the same order. One job (or one log) is `replay_logs` itself.

    `assembler` gives the configuration, receives the metric observations (on its recorder)
    and the counts (`assembler.stats`); `emit` and `on_progress` are called in the calling
    process only, `on_progress` once per log. `workers`: ones started beforehand (their
    owner closes them); else they are started here, and closed here. `prepare`: the workers
    also scrub (and encode) the spans as the `Prepare` says, and the parent queues them in
    the `PreparedSink` instead of calling `emit`: the work a single parent would otherwise do
    for every span is shared out (with one process, `emit` gets them all and its sink does
    it).
    """
    jobs = min(jobs, len(logs))
    if jobs <= 1:
        return replay_logs(
            logs,
            StreamFeeder(assembler, emit),
            on_progress=on_progress,
            max_line_bytes=max_line_bytes,
            max_log_bytes=max_log_bytes,
        )
    observe = not isinstance(assembler.metrics, NullRecorder)
    how = prepare[0] if prepare is not None else None
    tasks = [
        _Task(group, assembler.config, max_line_bytes, observe, how, max_log_bytes)
        for group in _groups(logs)
    ]
    summary = ReplaySummary()
    own = workers is None
    pool = Workers(jobs) if workers is None else workers
    try:
        for result in _in_order(pool.pool, tasks, pool.jobs):
            _take(result, assembler, emit, prepare)
            summary.merge(result.summary)
            if on_progress is not None:
                on_progress(result.summary.bytes)
    except BaseException:  # Ctrl-C, an error here or in a worker: the workers stop now
        pool.stop()
        raise
    if own:
        pool.close()
    return summary


def _take(
    result: SessionResult,
    assembler: Assembler,
    emit: Callable[[list[SpanRecord]], object],
    prepare: tuple[Prepare, PreparedSink] | None,
) -> None:
    """Make what a worker's session gave in this process, as reading it here would have:
    its log lines, its observations and counts, then its spans to the sink."""
    for record in result.log_records:
        logging.getLogger(record.name).handle(record)
    replay_into(result.observations, assembler.metrics)
    _add_stats(assembler.stats, result.stats)
    if prepare is None:
        for batch in result.batches:
            emit(batch)
    else:
        _queue_prepared(result, prepare[1])


def _queue_prepared(result: SessionResult, sink: PreparedSink) -> None:
    """Queue a log's prepared spans: ids and texts, or records (with their texts)."""
    texts: list[list[str] | None] = [*result.encoded]
    if result.span_ids:
        texts += [None] * (len(result.span_ids) - len(texts))
        for span_ids, maybe in zip(result.span_ids, texts, strict=True):
            sink.export_encoded(span_ids, maybe)
        return
    texts += [None] * (len(result.batches) - len(texts))
    for batch, maybe in zip(result.batches, texts, strict=True):
        sink.export_scrubbed(batch, maybe)


def _groups(logs: Sequence[LogFile]) -> Iterator[tuple[LogFile, ...]]:
    """The logs in order, cut into runs of about `_TASK_BYTES` (at most `_TASK_LOGS` logs): a
    task costs its round trip between processes, which many small logs would pay each."""
    group: list[LogFile] = []
    size = 0
    for log in logs:
        group.append(log)
        size += _size(log)
        if size >= _TASK_BYTES or len(group) >= _TASK_LOGS:
            yield tuple(group)
            group, size = [], 0
    if group:
        yield tuple(group)


def _size(log: LogFile) -> int:
    try:
        return log.path.stat().st_size
    except OSError:
        return 0


def _in_order(
    pool: ProcessPoolExecutor, tasks: Sequence[_Task], jobs: int
) -> Iterator[SessionResult]:
    """The tasks' results in task order, computed by `jobs` workers a bounded way ahead."""
    waiting: deque[Future[list[SessionResult]]] = deque()
    queue = iter(tasks)
    for task in queue:
        waiting.append(_submit(pool, task))
        if len(waiting) >= jobs * _AHEAD_PER_WORKER:
            break
    while waiting:
        results = waiting.popleft().result()
        following = next(queue, None)
        if following is not None:
            waiting.append(_submit(pool, following))
        yield from results


def _submit(pool: ProcessPoolExecutor, task: _Task) -> Future[list[SessionResult]]:
    """`pool.submit`, with Ctrl-C held back until it returns (see `_sigint_held`)."""
    with _sigint_held():
        return pool.submit(_replay_task, task)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold Ctrl-C back while a submit may be starting a process, then act on it.

    A submit can start a worker (and the forkserver); interrupted halfway, it would leave a
    worker the executor does not know of (so `_stop` cannot end it), which then dies with a
    traceback once this process is gone. So meanwhile SIGINT only sets a flag (whichever
    thread the system hands it to), and is blocked in this thread, so that the processes
    started here inherit it blocked: a worker cannot be interrupted while it imports, before
    its initializer ignores SIGINT. Only in the main thread (where signal handlers are set).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    masked = hasattr(signal, "pthread_sigmask")  # not on Windows
    if masked:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if masked:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending Ctrl-C lands now
        signal.signal(signal.SIGINT, previous)
    if caught:
        if callable(previous):
            previous(signal.SIGINT, None)  # the default one raises KeyboardInterrupt
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (SIGTERM: they print nothing),
    before this process goes on with its own shutdown, rather than let each finish its log.
    The executor has no public way to do so before Python 3.14, and forgets its processes on
    shutdown: they are taken first."""
    processes = list((pool._processes or {}).values())
    manager: threading.Thread | None = getattr(pool, "_executor_manager_thread", None)
    results = getattr(pool, "_result_queue", None)  # shutdown() lets go of it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
    # A worker ended while it wrote a result leaves half a message in the result pipe, and the
    # manager thread reading the rest of it for ever; the interpreter joins that thread at exit
    # (concurrent.futures.process._python_exit), so the process would never end. With the
    # workers gone, this process holds the pipe's last writing end: closing it ends that read
    # (EOF), which the manager takes for a broken pool, and it exits.
    writer = getattr(results, "_writer", None)
    if writer is not None and not any(process.is_alive() for process in processes):
        with contextlib.suppress(OSError):
            writer.close()
    # Let the executor's manager thread see its workers gone and close its wake-up pipe now:
    # left running, it races the interpreter's exit hook that writes to that pipe ("Exception
    # ignored ... Bad file descriptor" at exit, seen on Python 3.11 after a Ctrl-C).
    if manager is not None:
        manager.join(timeout=5)


def _context() -> multiprocessing.context.BaseContext:
    """fork on Linux while this process has no other thread: the workers start at once, with
    everything already imported. Otherwise (threads running, which a fork would copy in the
    middle of whatever they hold; or macOS, where fork is unsafe) forkserver where there is
    one: a fresh process forked per worker, none of the parent's threads half-copied. Else
    (Windows), spawn.

    The forkserver imports this module and, as by default, the main script (`otel-bridge`;
    not `python -m otel_bridge`'s, which workers skip), once for all workers: a worker imports
    the main script itself unless the server has."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["__main__", __name__])
        return context
    return multiprocessing.get_context("spawn")


def _add_stats(into: AssemblerStats, other: AssemblerStats) -> None:
    """Add a worker's assembler counts to the parent's, field by field (counters and
    numbers), so that a count added to `AssemblerStats` is summed too."""
    for item in fields(into):
        mine, theirs = getattr(into, item.name), getattr(other, item.name)
        if isinstance(mine, Counter):
            mine.update(theirs)
        else:
            setattr(into, item.name, mine + theirs)
