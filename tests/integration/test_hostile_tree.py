"""A session-state tree other users write into: no file in it can hang `run` or `replay`, none
leads out of it, none is read twice, and none is too large to ever be read to its end.

Whatever could hang with a bug present runs under a timeout of its own (a subprocess's, or a
thread joined with one), so that the test fails instead of hanging the run."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otel_bridge import Assembler
from otel_bridge.checkpoint._store import CheckpointStore
from otel_bridge.feed import StreamFeeder
from otel_bridge.files import _safe_open as safe_open
from otel_bridge.sources import Tailer, TailOptions, find_logs, replay_logs
from otel_bridge.sources._discovery import read_client_name
from tests import processes
from tests.builder import Log
from tests.processes import terminate
from tests.recorder import Clock, Counting

ROOT_SPAN = "invoke_agent copilot"


def session_log(session: str, tasks: int = 1) -> bytes:
    """A log of `tasks` finished tasks of session `session`; its event ids are its own."""
    log = Log(session=session)
    log.start()
    for n in range(tasks):
        log.user(interaction=f"i{n}")
        log.simple_turn("0", f"u{n}", [(f"c{n}", "bash")], interaction=f"i{n}")
        log.simple_turn("1", f"v{n}", interaction=f"i{n}")  # the answer: the task ends
    return log.jsonl().replace(b'"id": "e', f'"id": "{session}-e'.encode())


def write_session(root: Path, name: str, session: str | None = None, tasks: int = 1) -> Path:
    path = root / name / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(session_log(session or name, tasks))
    return path


def conversations(spans: list) -> list[str]:
    """The session of each task span (records or OTLP JSON spans), in order."""
    found = []
    for span in spans:
        if isinstance(span, dict):
            if span["name"] == ROOT_SPAN:
                attributes = {a["key"]: a["value"] for a in span["attributes"]}
                found.append(attributes["gen_ai.conversation.id"]["stringValue"])
        elif span.name == ROOT_SPAN:
            found.append(span.attributes["gen_ai.conversation.id"])
    return found


def in_time(function: Callable[[], Any], timeout: float = 15.0, release: Path | None = None) -> Any:
    """`function()`, on a thread given `timeout` seconds: a call that blocks fails the test
    instead of hanging it. `release`: a FIFO to open for writing afterwards, which lets a
    reader blocked on it go."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            result.append(function())
        except BaseException as exc:  # handed to the test's thread
            errors.append(exc)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(timeout)
    blocked = thread.is_alive()
    if blocked and release is not None:
        with contextlib.suppress(OSError):
            os.close(os.open(release, os.O_WRONLY | os.O_NONBLOCK))
    assert not blocked, f"blocked for more than {timeout} s"
    if errors:
        raise errors[0]
    return result[0]


def tailer(root: Path, clock: Clock, **options: Any) -> tuple[Tailer, list, Counting]:
    metrics = Counting()
    out: list = []
    store = options.pop("store", None)
    made = Tailer(
        [root],
        StreamFeeder(Assembler(metrics=metrics), out.extend),
        TailOptions(rescan_seconds=0, watch=False, **options),
        clock=clock,
        checkpoints=store,
    )
    return made, out, metrics


def traces_spans(path: Path) -> list[dict]:
    """The spans of an OTLP JSON Lines file being written (a line still being written is
    left for later)."""
    spans: list[dict] = []
    if not path.exists():
        return spans
    for line in path.read_text().splitlines():
        try:
            request = json.loads(line)
        except ValueError:
            continue
        for resource in request["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                spans.extend(scope["spans"])
    return spans


def no_traces_env() -> dict[str, str]:
    return processes.bridge_env({"OTEL_TRACES_EXPORTER": "none"})


# --- no file can hang the daemon ------------------------------------------------------------


def fifo_tree(tmp_path: Path) -> Path:
    """Two sessions; the first one's workspace.yaml is a FIFO that nobody writes."""
    root = tmp_path / "session-state"
    write_session(root, "s1")
    write_session(root, "s2")
    os.mkfifo(root / "s1" / "workspace.yaml")
    return root


def test_replay_with_a_fifo_for_a_workspace_yaml_finishes_and_exports_every_session(
    tmp_path,
) -> None:
    root = fifo_tree(tmp_path)
    out = tmp_path / "traces.jsonl"
    try:
        result = subprocess.run(
            [sys.executable, "-m", "otel_bridge", "replay", str(root), "--traces-file", str(out)],
            env=no_traces_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("replay blocked on the FIFO")
    assert result.returncode == 0, result.stderr
    assert sorted(conversations(traces_spans(out))) == ["s1", "s2"]


def test_run_with_a_fifo_for_a_workspace_yaml_exports_every_session_and_stops(tmp_path) -> None:
    root = fifo_tree(tmp_path)
    out = tmp_path / "traces.jsonl"
    process = processes.start_bridge(
        [
            "run",
            "--session-state",
            str(root),
            "--state-dir",
            str(tmp_path / "bridge-state"),
            "--traces-file",
            str(out),
            "--no-prometheus",
            "--poll-interval",
            "0.1",
            "--rescan-interval",
            "0.3",
        ],
        env=no_traces_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sorted(conversations(traces_spans(out))) != [
            "s1",
            "s2",
        ]:
            time.sleep(0.2)
        exported = sorted(conversations(traces_spans(out)))
        process.send_signal(signal.SIGTERM)
        try:
            _, stderr = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("run did not stop on SIGTERM: its main loop is blocked")
    finally:
        terminate(process)
        with contextlib.suppress(OSError):  # lets a reader blocked on the FIFO go
            os.close(os.open(root / "s1" / "workspace.yaml", os.O_WRONLY | os.O_NONBLOCK))
    assert exported == ["s1", "s2"], stderr
    assert process.returncode == 0, stderr


def test_a_quiet_log_swapped_for_a_fifo_blocks_nothing(tmp_path, caplog) -> None:
    """Asleep (its checkpoint saved), a log is replaced by a FIFO: waking it, which compares
    the file with its checkpoint, must not block the loop, and the other logs go on."""
    root = tmp_path / "session-state"
    path = write_session(root, "s1")
    clock = Clock(os.path.getmtime(path))
    follow, out, _ = tailer(root, clock, evict_seconds=30, store=CheckpointStore(tmp_path / "st"))
    follow.start()
    follow.poll_once()
    clock.now += 31
    for _ in range(2):
        follow.poll_once()
        follow.save_checkpoints()
    assert follow.sleeping == 1
    path.unlink()
    os.mkfifo(path)
    other = write_session(root, "s2")
    os.utime(other, (clock.now, clock.now))

    def poll() -> None:
        for _ in range(3):
            follow.poll_once()
            follow.save_checkpoints()

    in_time(poll, release=path)
    follow.close()
    assert conversations(out) == ["s1", "s2"]
    assert caplog.text.count("not a regular file (a FIFO)") == 1


def test_reading_a_workspace_yaml_that_is_a_fifo_returns_at_once(tmp_path) -> None:
    path = write_session(tmp_path, "s1")
    os.mkfifo(path.with_name("workspace.yaml"))
    workspace = path.with_name("workspace.yaml")
    assert in_time(lambda: read_client_name(str(path)), release=workspace) is None


# --- the root is a boundary ------------------------------------------------------------------


def outside_log(tmp_path: Path) -> Path:
    """A session log outside the watched tree (another user's, say)."""
    outside = tmp_path / "outside" / "secret"
    outside.mkdir(parents=True)
    (outside / "events.jsonl").write_bytes(session_log("outside-secret"))
    (outside / "workspace.yaml").write_text("client_name: stolen\nname: the secret project\n")
    return outside / "events.jsonl"


@pytest.mark.parametrize("swap", ["log", "directory"])
@pytest.mark.parametrize("asleep", [False, True], ids=["awake", "asleep"])
def test_a_log_swapped_for_a_link_out_of_the_tree_is_not_read(
    tmp_path, caplog, swap, asleep
) -> None:
    """Found inside the tree, the log (or its session directory) later becomes a symbolic
    link to a file outside: it is checked again at every open, and not read."""
    root = tmp_path / "session-state"
    secret = outside_log(tmp_path)
    path = write_session(root, "s1")
    clock = Clock(os.path.getmtime(path))
    options: dict[str, Any] = {"evict_seconds": 30}
    if asleep:
        options["store"] = CheckpointStore(tmp_path / "st")
    follow, out, _ = tailer(root, clock, **options)
    follow.start()
    follow.poll_once()
    if asleep:
        clock.now += 31
        for _ in range(2):
            follow.poll_once()
            follow.save_checkpoints()
        assert follow.sleeping == 1
    if swap == "log":
        path.unlink()
        os.symlink(secret, path)
    else:
        path.parent.rename(tmp_path / "moved")
        os.symlink(secret.parent, path.parent)
    for _ in range(3):
        follow.poll_once()
        follow.save_checkpoints()
    follow.close()
    assert "outside-secret" not in conversations(out)
    assert conversations(out) == ["s1"]
    assert "symbolic link" in caplog.text


def test_a_workspace_yaml_that_links_out_of_the_tree_is_not_read(tmp_path) -> None:
    secret = outside_log(tmp_path)
    path = write_session(tmp_path / "session-state", "s1")
    os.symlink(secret.with_name("workspace.yaml"), path.with_name("workspace.yaml"))
    assert read_client_name(str(path)) is None
    path.with_name("workspace.yaml").unlink()
    path.with_name("workspace.yaml").write_text("client_name: github/cli\n")
    assert read_client_name(str(path)) == "github/cli"


def test_nor_one_in_a_session_directory_that_links_out_of_the_tree(tmp_path) -> None:
    secret = outside_log(tmp_path)
    root = tmp_path / "session-state"
    root.mkdir()
    os.symlink(secret.parent, root / "s1")
    assert read_client_name(str(root / "s1" / "events.jsonl")) is None


def hard_linked(root: Path) -> None:
    """s2's log is a second name of s1's (a hard link: no symbolic link to refuse)."""
    write_session(root, "s1", tasks=2)
    (root / "s2").mkdir()
    os.link(root / "s1" / "events.jsonl", root / "s2" / "events.jsonl")


def test_a_hard_link_to_another_sessions_log_is_followed_once(tmp_path, caplog) -> None:
    root = tmp_path / "session-state"
    hard_linked(root)
    clock = Clock(os.path.getmtime(root / "s1" / "events.jsonl"))
    follow, out, metrics = tailer(root, clock)
    follow.start()
    for _ in range(3):
        follow.poll_once()
    follow.close()
    assert conversations(out) == ["s1", "s1"]  # its two tasks, once
    assert follow.followed == [str(root / "s1" / "events.jsonl")]
    assert caplog.text.count("the same file as") == 1
    assert metrics.total("otel_bridge.files.skipped", **{"otel_bridge.reason": "duplicate"}) == 1


def test_a_log_replaced_by_a_hard_link_to_another_sessions_log_is_not_read_again(
    tmp_path,
) -> None:
    root = tmp_path / "session-state"
    write_session(root, "s1", tasks=2)
    mine = write_session(root, "s2")
    clock = Clock(os.path.getmtime(mine))
    follow, out, _ = tailer(root, clock)
    follow.start()
    follow.poll_once()
    mine.unlink()
    os.link(root / "s1" / "events.jsonl", mine)
    for _ in range(3):
        follow.poll_once()
    follow.close()
    assert sorted(conversations(out)) == ["s1", "s1", "s2"]


def test_replay_of_a_tree_reads_a_hard_linked_log_once(tmp_path) -> None:
    root = tmp_path / "session-state"
    hard_linked(root)
    out: list = []
    replay_logs(find_logs([root]), StreamFeeder(Assembler(), out.extend))
    assert conversations(out) == ["s1", "s1"]


def test_a_directory_name_that_is_not_printable_is_refused_in_one_escaped_line(
    tmp_path, caplog
) -> None:
    root = tmp_path / "session-state"
    write_session(root, "s1")
    write_session(root, "evil\nERROR forged line", session="evil")
    clock = Clock(time.time())
    follow, out, metrics = tailer(root, clock)
    with caplog.at_level(logging.INFO):
        follow.start()
        for _ in range(3):
            follow.poll_once()
    follow.close()
    assert conversations(out) == ["s1"]
    assert all("\n" not in record.getMessage() for record in caplog.records)
    assert sum("not printable" in record.getMessage() for record in caplog.records) == 1
    assert metrics.total("otel_bridge.files.skipped", **{"otel_bridge.reason": "name"}) == 1


# --- bounded costs ----------------------------------------------------------------------------


def sparse(path: Path, size: int = 1 << 40) -> Path:
    """A sparse file of `size` bytes (a terabyte by default): holes, no disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


@pytest.mark.parametrize("backfill", [True, False])
def test_a_sparse_terabyte_log_is_skipped_once_and_is_not_caught_up(
    tmp_path, caplog, backfill
) -> None:
    root = tmp_path / "session-state"
    good = write_session(root, "good")
    sparse(root / "huge" / "events.jsonl")
    clock = Clock(os.path.getmtime(good) + (0 if backfill else 7200))
    follow, out, metrics = tailer(root, clock, backfill=backfill, catch_up_seconds=3600)
    if not backfill:  # followed from its end: the old good log gives nothing, nor the sparse
        os.utime(good, (clock.now, clock.now))

    def catch_up() -> None:
        follow.start()
        for _ in range(3):
            follow.poll_once()

    in_time(catch_up)
    follow.close()
    assert follow.catching_up == 0
    assert conversations(out) == ["good"]
    assert caplog.text.count("--max-log-bytes") == 1
    assert metrics.total("otel_bridge.files.skipped", **{"otel_bridge.reason": "too_large"}) == 1


def test_a_log_that_grows_past_the_limit_stops_being_read_and_is_said_once(
    tmp_path, caplog
) -> None:
    root = tmp_path / "session-state"
    path = write_session(root, "s1")
    clock = Clock(os.path.getmtime(path))
    follow, out, _ = tailer(root, clock, max_log_bytes=1 << 20)
    follow.start()
    follow.poll_once()
    with path.open("ab") as handle:
        handle.truncate(2 << 20)
    for _ in range(3):
        follow.poll_once()
    assert follow.followed == [] and follow.catching_up == 0
    path.write_bytes(session_log("s1", tasks=2))  # back under it: read anew, from its start
    follow.poll_once()
    follow.close()
    assert conversations(out) == ["s1", "s1", "s1"]
    assert caplog.text.count("--max-log-bytes") == 1


def test_replay_of_a_tree_with_a_sparse_terabyte_log_ends_and_says_why(tmp_path) -> None:
    root = tmp_path / "session-state"
    write_session(root, "good")
    sparse(root / "huge" / "events.jsonl")
    out = tmp_path / "traces.jsonl"
    try:
        result = subprocess.run(
            [sys.executable, "-m", "otel_bridge", "replay", str(root), "--traces-file", str(out)],
            env=no_traces_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("replay kept reading the sparse file")
    assert result.returncode == 1  # a log it was given was not read
    assert "more than --max-log-bytes" in result.stderr
    assert conversations(traces_spans(out)) == ["good"]


# --- the opener itself ------------------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["openat", "lstat"])
def opener(request, monkeypatch):
    """`open_regular` as POSIX systems run it (a walk with openat), and as systems without
    openat do (lstat of each part, then a check of the resolved path)."""
    monkeypatch.setattr(safe_open, "_AT", request.param and safe_open._AT)
    return safe_open.open_regular


def test_the_opener_reads_a_regular_file_below_its_root_and_one_named_as_named(
    tmp_path, opener
) -> None:
    path = write_session(tmp_path / "root", "s1")
    with opener(path, tmp_path / "root") as handle:
        assert handle.read_at(0, 8) == path.read_bytes()[:8]
        assert handle.stat.st_ino == path.stat().st_ino
    os.symlink(path, tmp_path / "named")
    with opener(tmp_path / "named") as handle:  # named by the user: the link is theirs
        assert handle.read(8) == path.read_bytes()[:8]
    os.symlink(tmp_path / "root", tmp_path / "root-link")
    with opener(tmp_path / "root-link" / "s1" / "events.jsonl", tmp_path / "root-link"):
        pass  # the root itself may be a link: the user chose it


@pytest.mark.parametrize("kind", ["fifo", "directory", "log link", "directory link", "outside"])
def test_the_opener_refuses_what_is_not_a_regular_file_in_its_tree(tmp_path, opener, kind) -> None:
    root = tmp_path / "root"
    secret = outside_log(tmp_path)
    (root / "s1").mkdir(parents=True)
    path = root / "s1" / "events.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "log link":
        os.symlink(secret, path)
    elif kind == "directory link":
        (root / "s1").rmdir()
        os.symlink(secret.parent, root / "s1")
    else:
        path = secret
    with pytest.raises(safe_open.UnsafeFile) as refused:
        in_time(lambda: opener(path, root).close(), release=path)
    assert refused.value.strerror
