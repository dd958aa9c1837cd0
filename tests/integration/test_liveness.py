"""/healthz says whether `run`'s main loop still turns: 503 with the reason while it is stuck,
200 again once it goes round. Nothing here measures how soon: each wait is for a state, with a
deadline far above what it takes."""

from __future__ import annotations

import contextlib
import fcntl
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from otel_bridge import Assembler
from otel_bridge.app import LoopLiveness
from otel_bridge.export._http import TelemetryServer
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from tests.builder import Log
from tests.processes import bridge_env, start_bridge, terminate

DEADLINE = 60.0


def healthz(address: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://{address}/healthz", timeout=DEADLINE) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for(address: str, wanted: Callable[[int], bool]) -> tuple[int, str]:
    """/healthz until its status is one `wanted` says yes to (or the deadline passes)."""
    deadline = time.monotonic() + DEADLINE
    answer = healthz(address)
    while not wanted(answer[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
        answer = healthz(address)
    return answer


def session_log(root: Path, name: str, data: bytes) -> Path:
    path = root / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def a_task() -> bytes:
    log = Log.asked()
    log.simple_turn("0", "u1", [("c1", "bash")])
    return log.jsonl()


def test_a_loop_blocked_inside_a_poll_fails_healthz_until_it_turns_again(tmp_path) -> None:
    """The tailer hands finished spans to an exporter that blocks (as a collector that hangs
    would, were the hand-over synchronous): the poll stops inside a log's read."""
    root = tmp_path / "session-state"
    session_log(root, "s1", a_task())
    blocked, release = threading.Event(), threading.Event()

    def emit(records) -> None:
        if records:
            blocked.set()
            release.wait(DEADLINE)

    tailer = Tailer(
        [root], StreamFeeder(Assembler(), emit), TailOptions(backfill=True, watch=False)
    )
    liveness = LoopLiveness(tailer, stuck_after=0.5, poll_interval=0.05)
    server = TelemetryServer("127.0.0.1", 0)
    server.liveness = liveness
    stop = threading.Event()
    loop = threading.Thread(
        target=tailer.run,
        args=(stop.is_set,),
        kwargs={"poll_interval": 0.05, "after_poll": liveness.turned},
        daemon=True,
    )
    try:
        assert healthz(server.address) == (200, "ok\n")
        loop.start()
        assert blocked.wait(DEADLINE)
        status, reason = wait_for(server.address, lambda code: code != 200)
        assert status == 503
        assert reason.startswith("stuck: the main loop has neither finished a poll nor read")
        assert "--stuck-after 0.5" in reason
        release.set()
        assert wait_for(server.address, lambda code: code == 200) == (200, "ok\n")
    finally:
        release.set()
        stop.set()
        loop.join(DEADLINE)
        tailer.close()
        server.close()


def test_a_long_catch_up_poll_that_keeps_reading_is_alive(tmp_path) -> None:
    """Reading log after log inside one poll proves progress: each read notes it."""
    root = tmp_path / "session-state"
    for n in range(8):
        session_log(root, f"s{n}", a_task())
    tailer = Tailer(
        [root], StreamFeeder(Assembler(), lambda records: None), TailOptions(backfill=True)
    )
    liveness = LoopLiveness(tailer, stuck_after=0.3, poll_interval=0.0)
    seen: list[tuple[bool, str]] = []
    original = tailer._reading.read  # each read takes a while; the poll as a whole much longer

    def slow_read(follower, now):
        time.sleep(0.2)
        seen.append(liveness())
        return original(follower, now)

    tailer._reading.read = slow_read  # type: ignore[method-assign]
    tailer.start()
    tailer.poll_once()  # some 1.6 s in one poll, never 0.3 s without a read
    assert len(seen) == 8 and all(alive for alive, _ in seen), seen
    tailer.close()


def test_run_reports_a_stuck_main_loop_on_healthz(tmp_path) -> None:
    """`run` whose standard error is a pipe nobody reads (a log collector that stopped): once
    the pipe is full, the main loop blocks writing its warnings about bad lines, /healthz
    says so, and answers 200 again once the pipe is drained."""
    root = tmp_path / "session-state"
    root.mkdir()
    bridge = start_bridge(
        [
            *("run", "--session-state", str(root)),
            *("--no-checkpoints", "--prometheus-port", "0", "--poll-interval", "0.1"),
            *("--rescan-interval", "0.2", "--stuck-after", "1"),
        ],
        env=bridge_env({"OTEL_TRACES_EXPORTER": "none"}),
        new_session=True,
    )
    assert bridge.stderr is not None
    if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux: a small pipe fills with fewer lines
        with contextlib.suppress(OSError):
            fcntl.fcntl(bridge.stderr.fileno(), fcntl.F_SETPIPE_SZ, 4096)
    drained: list[bytes] = []
    reader = threading.Thread(target=lambda: drained.extend(bridge.stderr), daemon=True)
    try:
        address = None
        while address is None:
            line = bridge.stderr.readline()
            assert line, b"".join(drained)
            drained.append(line)
            found = re.search(rb"serving http://(127\.0\.0\.1:\d+)/", line)
            address = found.group(1).decode() if found else None
        assert wait_for(address, lambda code: code == 200) == (200, "ok\n")
        # Nobody reads standard error from here on. Each of these logs makes the loop warn
        # about its bad lines (the first few of each): far more than any pipe holds.
        bad = b"".join(b"{not json %d\n" % n for n in range(8))
        for n in range(400):
            session_log(root, f"s{n:03d}-{'x' * 60}", a_task() + bad)
        status, reason = wait_for(address, lambda code: code != 200)
        assert status == 503 and reason.startswith("stuck: the main loop"), reason
        reader.start()
        assert wait_for(address, lambda code: code == 200) == (200, "ok\n")
    finally:
        if reader.ident is None:  # not started: a stopping bridge writes too
            reader.start()
        terminate(bridge, group=True)
        reader.join(DEADLINE)
        bridge.stderr.close()
