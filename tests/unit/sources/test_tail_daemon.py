"""The follower as a daemon beside many sessions: idle costs nothing, quiet sessions leave
memory and come back identical, notifications that fail or overflow are counted and covered."""

from __future__ import annotations

import gc
import logging
import os
import struct
import threading
import time
import tracemalloc
import types
from pathlib import Path

import pytest

from otel_bridge import Assembler
from otel_bridge.checkpoint._store import CheckpointStore
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from otel_bridge.sources import _inotify as inotify_module
from otel_bridge.sources import _watch as watch_module
from otel_bridge.sources._shard import Shard
from otel_bridge.sources.tail import _finder as finder_module
from otel_bridge.sources.tail import _manager as manager_module
from tests.builder import Log
from tests.recorder import Clock, Counting


def task(log: Log, interaction: str, usage: str, call: str) -> None:
    log.user(interaction=interaction)
    log.simple_turn("0", usage, [(call, "bash")], interaction=interaction)
    log.simple_turn("1", usage + "b", interaction=interaction)


def sessions(root: Path, count: int, prefix: str = "sess") -> dict[str, Log]:
    logs = {}
    for n in range(count):
        log = Log(session=f"{prefix}-{n:04d}")
        log.start()
        task(log, f"i{n}", f"u{n}", f"c{n}")
        directory = root / f"{prefix}-{n:04d}"
        directory.mkdir(parents=True)
        (directory / "events.jsonl").write_bytes(log.jsonl())
        logs[str(directory / "events.jsonl")] = log
    return logs


def read_once(
    root: Path,
    clock: Clock,
    store: Path | None = None,
    assembler: Assembler | None = None,
    **options,
) -> tuple[list, Tailer]:
    """One poll of a polling tailer (checkpoints in `store`, saved after it): its spans."""
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(assembler or Assembler(), out.extend),
        TailOptions(rescan_seconds=0, watch=False, **options),
        clock=clock,
        checkpoints=CheckpointStore(store) if store is not None else None,
    )
    tailer.start()
    tailer.poll_once()
    tailer.save_checkpoints()
    tailer.close()
    return out, tailer


def test_an_idle_poll_reads_nothing_lists_nothing_and_writes_no_checkpoint(
    tmp_path, monkeypatch
) -> None:
    root = tmp_path / "session-state"
    logs = sessions(root, 50)
    mtime = max(os.path.getmtime(p) for p in logs)
    out: list = []
    store = CheckpointStore(tmp_path / "state")
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=3600),
        clock=Clock(mtime + 1),
        checkpoints=store,
    )
    tailer.start()
    tailer.poll_once()
    tailer.save_checkpoints()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 50
    writes = store.writes
    journal = store.path.stat().st_size
    opened: list[str] = []
    real_open = Path.open

    def counting_open(self, *args, **kwargs):
        opened.append(str(self))
        return real_open(self, *args, **kwargs)

    listed: list[Path] = []
    real_subdirectories = finder_module._subdirectories

    def counting_subdirectories(path: Path) -> list[tuple[str, str]]:
        listed.append(path)
        return real_subdirectories(path)

    # A file written inside a session directory (not its log) is a notification too.
    (root / "sess-0001" / "workspace.yaml").write_text("name: x\n")
    tailer.wake.wait(2)
    monkeypatch.setattr(Path, "open", counting_open)
    monkeypatch.setattr(finder_module, "_subdirectories", counting_subdirectories)
    for _ in range(20):
        assert tailer.poll_once() == 0
        tailer.save_checkpoints()
    tailer.close()
    assert opened == []  # no log read, no fingerprint taken
    assert listed == []  # the session-state directory not listed again
    assert store.writes == writes and store.path.stat().st_size == journal


def test_a_session_that_appears_is_followed_from_its_notification(tmp_path) -> None:
    root = tmp_path / "session-state"
    sessions(root, 3)
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=3600),
        clock=Clock(0),
    )
    tailer.start()
    tailer.poll_once()
    new = sessions(tmp_path / "later", 1)
    (path,) = new
    target = root / "sess-new"
    target.mkdir()
    (target / "events.jsonl").write_bytes(Path(path).read_bytes())
    for _ in range(50):  # notifications come on watchdog's thread
        tailer.wake.wait(0.1)
        tailer.poll_once()
        if str(target / "events.jsonl") in tailer.followed:
            break
    tailer.close()
    assert str(target / "events.jsonl") in tailer.followed
    assert sum(s.name == "invoke_agent copilot" for s in out) == 4


def test_quiet_sessions_leave_memory_and_come_back_giving_the_same_spans(tmp_path) -> None:
    root = tmp_path / "session-state"
    logs = sessions(root, 5)
    clock = Clock(max(os.path.getmtime(p) for p in logs))
    assembler = Assembler()
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(assembler, out.extend),
        TailOptions(rescan_seconds=0, evict_seconds=30, watch=False),
        clock=clock,
    )
    tailer.start()
    tailer.poll_once()
    assert assembler.resident == 0  # read whole at start: out of memory at once

    def second_task(name: str) -> None:
        for path, log in logs.items():
            size = len(log.jsonl())
            task(log, name, name + "u", name + "c")
            with open(path, "ab") as handle:
                handle.write(log.jsonl()[size:])

    second_task("second")
    clock.now += 1
    tailer.poll_once()
    assert assembler.resident == 5  # live: kept while active
    clock.now += 31
    tailer.poll_once()
    assert assembler.resident == 0 and tailer.resident == 0  # quiet for the evict time
    second_task("third")
    tailer.poll_once()
    tailer.close()
    assert assembler.resident == 5

    whole: list = []
    reader = Tailer(
        [root],
        StreamFeeder(Assembler(), whole.extend),
        TailOptions(rescan_seconds=0, watch=False),
        clock=clock,
    )
    reader.start()
    reader.poll_once()
    reader.close()
    assert sorted(out, key=lambda s: s.span_id) == sorted(whole, key=lambda s: s.span_id)
    roots = [s for s in out if s.name == "invoke_agent copilot"]
    assert len(roots) == 15 and sum(bool(s.links) for s in roots) == 10  # linked to the last


def test_a_checkpointed_log_that_stays_quiet_costs_no_session(tmp_path) -> None:
    root = tmp_path / "session-state"
    logs = sessions(root, 20)
    clock = Clock(max(os.path.getmtime(p) for p in logs))
    store = tmp_path / "state"
    for _ in range(2):
        assembler = Assembler()
        _, tailer = read_once(root, clock, store, assembler)
    assert tailer.followed_count == 20 and tailer.catching_up == 0
    assert assembler.resident == 0  # resumed at their ends: nothing read, nothing built
    assert tailer.sleeping == 20  # nor any follower: asleep from the start


def settle(tailer: Tailer, clock: Clock, seconds: float = 31) -> None:
    """Quiet for `seconds`: sessions evicted, checkpoints saved, logs asleep."""
    clock.now += seconds
    for _ in range(2):
        tailer.poll_once()
        tailer.save_checkpoints()


def append_task(path: str, log: Log, name: str) -> None:
    size = len(log.jsonl())
    task(log, name, name + "u", name + "c")
    with open(path, "ab") as handle:
        handle.write(log.jsonl()[size:])


def whole_spans(root: Path, clock: Clock) -> list:
    """The spans of reading every log under `root` whole, in one go."""
    spans, _ = read_once(root, clock)
    return sorted(spans, key=lambda s: s.span_id)


def asleep(tmp_path: Path, count: int, *, watch: bool = False, emit=None):
    """`count` logs read, then quiet long enough to sleep: (logs, clock, store, out, tailer)."""
    root = tmp_path / "session-state"
    logs = sessions(root, count)
    clock = Clock(max(os.path.getmtime(p) for p in logs))
    store = CheckpointStore(tmp_path / "state")
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), emit or out.extend),
        TailOptions(rescan_seconds=0, evict_seconds=30, watch=watch),
        clock=clock,
        checkpoints=store,
    )
    tailer.start()
    tailer.poll_once()
    settle(tailer, clock)
    assert tailer.sleeping == count and tailer.followed_count == count
    return logs, clock, store, out, tailer


@pytest.mark.parametrize("watch", [False, True])
def test_a_quiet_checkpointed_log_sleeps_and_wakes_giving_the_same_spans(tmp_path, watch) -> None:
    """Asleep, a log keeps nothing in memory but its inode and size; growing, it wakes from
    its checkpoint (by its notification, or the sweep without them) and goes on as if it had
    never slept."""
    logs, clock, _, out, tailer = asleep(tmp_path, 6, watch=watch)
    assert tailer.resident == 0
    grown = list(logs.items())[:2]
    for round_ in ("second", "third"):
        for path, log in grown:
            append_task(path, log, round_)
        for _ in range(50):
            tailer.wake.wait(0.1)
            tailer.poll_once()
            if tailer.sleeping == 4 and tailer.resident == 2:
                break
        assert tailer.sleeping == 4 and tailer.resident == 2  # the two that grew
        settle(tailer, clock)
        assert tailer.sleeping == 6
    tailer.close()
    assert sorted(out, key=lambda s: s.span_id) == whole_spans(tmp_path / "session-state", clock)
    roots = [s for s in out if s.name == "invoke_agent copilot"]
    assert len(roots) == 10 and sum(bool(s.links) for s in roots) == 4  # linked to the last


def test_a_sleeping_log_removed_is_forgotten_and_one_replaced_is_read_anew(tmp_path) -> None:
    logs, _, store, out, tailer = asleep(tmp_path, 3)
    paths = list(logs)
    os.remove(paths[0])
    other = Log(session="sess-0001")
    other.start()
    task(other, "new", "nu", "nc")
    task(other, "newer", "mu", "mc")  # longer than what it replaces: it grew, to a sweep
    replacement = Path(paths[1]).with_name("replacement")
    replacement.write_bytes(other.jsonl())
    os.replace(replacement, paths[1])
    before = len(out)
    tailer.poll_once()
    tailer.save_checkpoints()
    tailer.close()
    assert paths[0] not in tailer.followed and tailer.followed_count == 2
    assert store.get(paths[0]) is None
    names = [s.name for s in out[before:]].count("invoke_agent copilot")
    assert names == 2  # the replacement, read from its start


def test_a_sleeping_log_costs_well_under_a_kilobyte(tmp_path) -> None:
    """Memory that stays flat: what a log asleep keeps (its path, inode and size, its
    journal place and its directory's watch) is a few hundred bytes, whatever its session held.
    """
    root = tmp_path / "session-state"
    logs = sessions(root, 400)
    clock = Clock(max(os.path.getmtime(p) for p in logs))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), lambda records: None),
        TailOptions(rescan_seconds=0, evict_seconds=30, watch=True),
        clock=clock,
        checkpoints=CheckpointStore(tmp_path / "state"),
    )
    tailer.start()
    tailer.poll_once()
    settle(tailer, clock)
    gc.collect()
    per_log = (tracemalloc.get_traced_memory()[0] - before) / 400
    tracemalloc.stop()
    tailer.close()
    assert tailer.sleeping == 400
    assert per_log < 1000, per_log  # awake and evicted, a log took about 2,800 bytes


def counted_tailer(
    root: Path, logs: dict[str, Log], options: TailOptions
) -> tuple[Tailer, list, Counting]:
    """A tailer of `root` at the logs' time, its output and its metrics."""
    metrics = Counting()
    out: list = []
    clock = Clock(max(os.path.getmtime(p) for p in logs))
    return (
        Tailer([root], StreamFeeder(Assembler(metrics=metrics), out.extend), options, clock=clock),
        out,
        metrics,
    )


def grow(logs: dict[str, Log]) -> None:
    """One more task in the first log."""
    path, log = next(iter(logs.items()))
    size = len(log.jsonl())
    task(log, "more", "w", "e")
    with open(path, "ab") as handle:
        handle.write(log.jsonl()[size:])


@pytest.mark.parametrize("backend", ["inotify", "watchdog"])
def test_a_watch_that_cannot_be_set_up_falls_back_to_polling_counted(
    tmp_path, monkeypatch, caplog, backend
) -> None:
    """The kernel's inotify limits cannot be lowered for one test without changing the
    machine, so the OSError a full max_user_watches gives (ENOSPC) is raised where the
    watcher would get it."""
    root = tmp_path / "session-state"
    logs = sessions(root, 2)

    def refuse(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    if backend == "inotify":
        monkeypatch.setattr(inotify_module.Inotify, "watch", refuse)
    else:
        monkeypatch.setattr(inotify_module, "available", lambda: False)
        monkeypatch.setattr(watch_module.Observer, "schedule", refuse)
    tailer, out, metrics = counted_tailer(root, logs, TailOptions(rescan_seconds=0))
    with caplog.at_level(logging.WARNING):
        tailer.start()
        for _ in range(3):
            tailer.poll_once()
    assert tailer._watcher.backend == backend
    grow(logs)
    tailer.poll_once()  # polling: found without any notification
    tailer.close()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 3
    assert tailer.watch_problems["unavailable"] >= 1
    assert (
        metrics.total("otel_bridge.watch.problems", **{"otel_bridge.reason": "unavailable"})
        == tailer.watch_problems["unavailable"]
    )
    assert sum("cannot watch" in r.getMessage() for r in caplog.records) == 1  # said once


def test_the_kernels_overflow_event_is_recognised() -> None:
    """IN_Q_OVERFLOW as the kernel writes it: watch descriptor -1, no name."""
    paths: list[str] = []
    overflows: list[bool] = []
    watcher = inotify_module.Inotify(paths.append, lambda: overflows.append(True))
    try:
        watcher._dispatch(struct.pack("iIII", -1, inotify_module.IN_Q_OVERFLOW, 0, 0))
    finally:
        watcher.close()
    assert overflows == [True] and paths == []


@pytest.mark.parametrize("backend", ["inotify", "watchdog"])
def test_a_queue_overflow_makes_every_log_looked_at_and_is_counted(
    tmp_path, monkeypatch, backend
) -> None:
    if backend == "watchdog":
        monkeypatch.setattr(inotify_module, "available", lambda: False)
    root = tmp_path / "session-state"
    logs = sessions(root, 3)
    tailer, out, metrics = counted_tailer(root, logs, TailOptions(rescan_seconds=3600))
    tailer.start()
    tailer.poll_once()
    # Grown while notifications were lost: nothing tells the tailer but the overflow report.
    watcher = tailer._watcher
    watcher.enabled = False
    watcher.close()
    watcher.enabled = True  # not degraded: no sweep at every rescan
    grow(logs)
    assert tailer.poll_once() == 0
    if backend == "watchdog":  # its only report of IN_Q_OVERFLOW is this warning
        watcher._filter.attach()
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        watcher._filter.detach()
    else:
        watcher._overflow()  # what the reader calls on IN_Q_OVERFLOW (recognised above)
    assert tailer.poll_once() > 0
    assert sum(s.name == "invoke_agent copilot" for s in out) == 4
    assert metrics.total("otel_bridge.watch.problems", **{"otel_bridge.reason": "overflow"}) == 1


@pytest.mark.parametrize("stop_after", [1, 3, 5])
def test_a_restart_mid_task_exports_nothing_delivered_twice(tmp_path, stop_after) -> None:
    """Stopped while a task is open, with some of its spans delivered: the restart reads the
    task again from its start (its checkpoint) but exports only what was not delivered."""
    log = Log(session="sess-k")
    log.start()
    task(log, "one", "a", "x")
    log.user(interaction="two")
    for turn in range(6):
        log.simple_turn(str(turn), f"t{turn}", [(f"k{turn}", "bash")], interaction="two")
    data = log.jsonl()
    lines = data.splitlines(keepends=True)
    root = tmp_path / "session-state"
    (root / "sess-k").mkdir(parents=True)
    path = root / "sess-k" / "events.jsonl"
    cut = len(lines) - 12 + 2 * stop_after  # inside the second task
    path.write_bytes(b"".join(lines[:cut]))
    clock = Clock(os.path.getmtime(path))
    store = tmp_path / "state"
    first, _ = read_once(root, clock, store)
    path.write_bytes(data)
    second, _ = read_once(root, clock, store, idle_timeout_seconds=0)
    whole, _ = read_once(root, clock, idle_timeout_seconds=0)
    first_ids = {s.span_id for s in first}
    assert any(s.name.startswith("execute_tool") for s in first if s.trace_id == second[0].trace_id)
    assert first_ids.isdisjoint(s.span_id for s in second)
    assert sorted(first + second, key=lambda s: s.span_id) == sorted(whole, key=lambda s: s.span_id)


def test_hints_and_polls_from_two_threads_do_not_race(tmp_path) -> None:
    """Watchdog's thread records hints while the tailer polls: nothing is lost."""
    root = tmp_path / "session-state"
    root.mkdir()
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=3600),
        clock=Clock(0),
    )
    tailer.start()
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            tailer.poll_once()
            tailer.wake.wait(0.01)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        sessions(root, 30)
        for _ in range(100):
            if sum(s.name == "invoke_agent copilot" for s in list(out)) == 30:
                break
            threading.Event().wait(0.05)
    finally:
        done.set()
        poller.join()
        tailer.close()
    assert tailer.followed_count == 30
    assert sum(s.name == "invoke_agent copilot" for s in out) == 30


def test_a_log_whose_reading_raises_stops_nothing_else(tmp_path, caplog) -> None:
    """Past the session's own guard (decoding, scrubbing, queueing): the other logs are read,
    the failure is said once and counted, and the log goes on."""
    root = tmp_path / "session-state"
    logs = sessions(root, 3)
    bad = sorted(logs)[1]
    out: list = []

    def emit(records):
        if any(bad.split("/")[-2] in str(r.attributes.values()) for r in records):
            raise RuntimeError("an exporter bug")
        out.extend(records)

    metrics = Counting()
    clock = Clock(max(os.path.getmtime(p) for p in logs))
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(metrics=metrics), emit),
        TailOptions(rescan_seconds=0, watch=False),
        clock=clock,
    )
    with caplog.at_level(logging.WARNING):
        tailer.start()
        tailer.poll_once()
        grow({bad: logs[bad]})
        tailer.poll_once()
    tailer.close()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 2  # the two good logs
    assert bad in tailer.followed
    assert metrics.total("otel_bridge.events.failed", **{"otel_bridge.step": "read"}) == 2
    assert sum("reading it raised RuntimeError" in r.getMessage() for r in caplog.records) == 1


def test_three_run_shards_follow_every_session_once(tmp_path) -> None:
    """Three replicas over one session-state directory, each with its own checkpoints: their
    spans together are one unsharded follower's, span for span, none in two shards; sessions
    that appear later land in exactly one shard too."""
    root = tmp_path / "session-state"
    logs = sessions(root, 30)
    clock = Clock(max(os.path.getmtime(p) for p in logs))
    shards: list[Shard | None] = [None, Shard(0, 3), Shard(1, 3), Shard(2, 3)]
    outs: list[list] = [[] for _ in shards]
    tailers = [
        Tailer(
            [root],
            StreamFeeder(Assembler(), out.extend),
            TailOptions(rescan_seconds=0, watch=False, shard=shard),
            clock=clock,
            checkpoints=CheckpointStore(tmp_path / f"state-{n}"),
        )
        for n, (shard, out) in enumerate(zip(shards, outs, strict=True))
    ]
    for tailer in tailers:
        tailer.start()
        tailer.poll_once()
    late = sessions(tmp_path / "elsewhere", 12, prefix="late")
    for path in late:  # new sessions appear while the replicas run
        target = root / Path(path).parent.name
        target.mkdir()
        (target / "events.jsonl").write_bytes(Path(path).read_bytes())
    for tailer in tailers:
        tailer.poll_once()
        tailer.close()
    whole, *parts = outs
    assert sum(t.followed_count for t in tailers[1:]) == tailers[0].followed_count == 42
    ids = [{s.span_id for s in part} for part in parts]
    assert all(ids)  # 42 sessions: every shard has some
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert sorted((s for part in parts for s in part), key=lambda s: s.span_id) == sorted(
        whole, key=lambda s: s.span_id
    )


def test_old_empty_session_directories_take_no_watch_and_are_looked_at_in_turn(
    tmp_path, monkeypatch
) -> None:
    """Session folders with no log cost neither a watch each (inotify's are the user's, and
    few) nor a stat each at every rescan: old ones are looked at a few at a time, in turn,
    and a log that appears in one is still found."""
    monkeypatch.setattr(finder_module, "_WAITING_PER_RESCAN", 10)
    root = tmp_path / "session-state"
    old = time.time() - 7 * 86400
    for n in range(40):
        directory = root / f"empty-{n:02d}"
        directory.mkdir(parents=True)
        os.utime(directory, (old, old))
    out: list = []
    tailer = Tailer([root], StreamFeeder(Assembler(), out.extend), TailOptions(rescan_seconds=0))
    tailer.start()
    assert tailer._watcher._inotify is not None
    assert tailer._watcher._inotify.watches == 1  # the session-state directory only
    log = Log(session="late")
    log.start()
    task(log, "i", "u", "c")
    (root / "empty-17" / "events.jsonl").write_bytes(log.jsonl())
    for _ in range(5):  # 40 directories, 10 a rescan
        tailer.poll_once()
    tailer.close()
    assert tailer.followed == [str(root / "empty-17" / "events.jsonl")]
    assert sum(s.name == "invoke_agent copilot" for s in out) == 1


def test_new_empty_session_directories_are_watched_up_to_a_cap(tmp_path, monkeypatch) -> None:
    """A session folder made while `run` runs is watched (the CLI writes its log right after
    making it), the newest ones up to a cap: the oldest give their watch back."""
    monkeypatch.setattr(finder_module, "_WATCHED_WAITING", 5)
    root = tmp_path / "session-state"
    root.mkdir()
    out: list = []
    tailer = Tailer([root], StreamFeeder(Assembler(), out.extend), TailOptions(rescan_seconds=3600))
    tailer.start()
    for n in range(12):  # one after the other: the last made is the newest seen
        (root / f"new-{n:02d}").mkdir()
        for _ in range(50):
            tailer.wake.wait(0.1)
            tailer.wake.clear()  # (poll_once leaves it set: the next wait would not wait)
            tailer.poll_once()
            if len(tailer._finder.waiting_dirs) == n + 1:
                break
    assert len(tailer._finder.waiting_dirs) == 12
    assert tailer._watcher._inotify is not None
    assert tailer._watcher._inotify.watches == 1 + 5
    log = Log(session="new-11")
    log.start()
    task(log, "i", "u", "c")
    (root / "new-11" / "events.jsonl").write_bytes(log.jsonl())  # told by its notification
    for _ in range(50):
        tailer.wake.wait(0.1)
        tailer.wake.clear()
        tailer.poll_once()
        if out:
            break
    tailer.close()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 1


def test_a_log_that_grew_while_the_machine_slept_is_read_before_its_task_is_judged_quiet(
    tmp_path, monkeypatch
) -> None:
    """A task quiet for almost the idle timeout; the machine sleeps (the wall clock jumps, the
    monotonic one does not) after the CLI wrote its end. On waking, the timeout is judged
    before that notification is taken: the log has grown, so it is read, not closed."""
    mono = [1000.0]
    monkeypatch.setattr(
        manager_module, "time", types.SimpleNamespace(monotonic=lambda: mono[0], time=time.time)
    )
    monkeypatch.setattr(watch_module.Watcher, "degraded", property(lambda self: False))
    log = Log.asked()
    log.turn("0")
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(log.jsonl())
    clock = Clock(os.path.getmtime(path))
    out: list = []
    tailer = Tailer(
        [tmp_path],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=5, watch=False, idle_timeout_seconds=900),
        clock=clock,
    )
    tailer.start()
    tailer.poll_once()
    for _ in range(28):  # 840 s quiet, the bridge polling
        clock.now += 30
        mono[0] += 30
        tailer.poll_once()
    size = len(log.jsonl())
    log.turn_end("0")
    log.simple_turn("1", "u2")
    with path.open("ab") as handle:
        handle.write(log.jsonl()[size:])
    clock.now += 3600  # asleep
    mono[0] += 5
    tailer.poll_once()
    tailer.poll_once()
    tailer.close()
    (root,) = [s for s in out if s.name == "invoke_agent copilot"]
    assert "copilot.incomplete" not in root.attributes


def test_a_catch_up_reads_its_logs_a_batch_a_poll_and_goes_on_at_once(
    tmp_path, monkeypatch
) -> None:
    """Catching up on many logs, a poll reads a batch of them, so that `run` saves their
    checkpoints (and lets go of what those waited for) before reading the next batch; the
    next poll goes on without waiting, and every log is read, each once."""
    monkeypatch.setattr(manager_module, "_CATCH_UP_BATCH", 2)
    root = tmp_path / "session-state"
    logs = sessions(root, 5)
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=0, watch=False, backfill=True),
        clock=Clock(max(os.path.getmtime(p) for p in logs)),
        checkpoints=CheckpointStore(tmp_path / "state"),
    )
    tailer.start()
    waits = []
    left = [tailer.catching_up]
    for _ in range(4):
        tailer.wake.clear()
        tailer.poll_once()
        tailer.save_checkpoints()
        left.append(tailer.catching_up)
        waits.append(not tailer._reading.more)
    assert left == [5, 3, 1, 0, 0]
    assert waits == [False, False, True, True]  # no wait while logs are left to catch up
    roots = [s for s in out if s.parent_span_id is None]
    assert sorted(r.trace_id for r in roots) == sorted({r.trace_id for r in roots})
    assert len(roots) == 5


def test_old_logs_followed_from_their_end_sleep_at_once(tmp_path) -> None:
    """An old log with nothing to read is asleep from the start: no reader, its first
    checkpoint (its end) written by the first save. Before, its reader stayed awake for good
    (its session never in memory, so never evicted): 3 KB a log, 30 MB over 10,000 old
    sessions. Growing, even before that save, it wakes at its end and gives only what was
    appended."""
    root = tmp_path / "session-state"
    logs = sessions(root, 5)
    clock = Clock(max(os.path.getmtime(p) for p in logs) + 7200)  # two hours old
    store = CheckpointStore(tmp_path / "state")
    out: list = []
    tailer = Tailer(
        [root],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(rescan_seconds=0, watch=False, catch_up_seconds=3600, evict_seconds=30),
        clock=clock,
        checkpoints=store,
    )
    tailer.start()
    assert tailer.sleeping == 5 and tailer.followed_count == 5 and not tailer._tracker.awake
    path, log = next(iter(logs.items()))
    append_task(path, log, "later")  # before any save: woken from the checkpoint taken
    tailer.poll_once()
    assert [s.name for s in out].count("invoke_agent copilot") == 1 and out[-1]
    assert tailer.save_checkpoints() == 5
    assert all(store.get(p) is not None for p in logs)
    settle(tailer, clock)
    assert tailer.sleeping == 5
    tailer.close()
    _, again = read_once(root, clock, tmp_path / "state", catch_up_seconds=3600)
    assert again.sleeping == 5  # resumed at their ends from those checkpoints
