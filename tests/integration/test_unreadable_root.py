"""A session-state root the bridge's user cannot read (a hostPath owned by another uid, a home
directory of mode 0700) stopped `run` at start with a traceback, or, below the first check,
was listed as empty: nothing followed, nothing said, /readyz 200. Now one line names the path
and says what to do, /readyz answers 503 with the same words, and once the root can be read
the bridge follows it and turns ready (tailer's `RootHealth`, looked at every rescan).

The denial is real: the bridge runs as an unprivileged user (`nobody`, through setpriv, when
the tests run as root, which reads everything), on a directory of mode 000."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import paths
from tests.processes import bridge_env, terminate
from tests.prometheus import free_port, scrape_metrics

NOBODY = 65534


def _as_unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux): no way to be denied")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory under /tmp that an unprivileged user can reach (pytest's own is 0700)."""
    made = Path(tempfile.mkdtemp(prefix="otel-bridge-unreadable-", dir="/tmp"))
    made.chmod(0o755)
    try:
        yield made
    finally:
        for path in (made, *made.rglob("*")):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(made)


def _readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def _until(what: str, check: object, timeout: float = 30.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = check()  # type: ignore[operator]
        except OSError:
            found = None
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_an_unreadable_root_is_said_and_makes_run_unready_until_it_can_be_read(
    shared_dir: Path,
) -> None:
    root = shared_dir / "session-state"
    session = root / "1b0e4c2a-0000-4000-8000-00000000000a"
    session.mkdir(parents=True)
    shutil.copy(paths.FIXTURES / "run1_cli_prompt_basic" / "events.jsonl", session)
    for path in (session, session / "events.jsonl"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    root.chmod(0o000)
    port = free_port()
    log = shared_dir / "run.log"
    command = [
        *_as_unprivileged(),
        *(sys.executable, "-m", "otel_bridge", "run", "--session-state", str(root)),
        *("--no-checkpoints", "--prometheus-port", str(port), "--rescan-interval", "0.3"),
    ]
    env = bridge_env({"OTEL_TRACES_EXPORTER": "none", "PYTHONPATH": str(paths.REPO)})
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        # past the start ("starting: listing the session logs"), which a loaded machine may
        # still be in at the first answer
        status, why = _until(  # type: ignore[misc]
            "/readyz to say why the root cannot be listed",
            lambda: (answer := _readyz(port)) and "starting" not in answer[1] and answer,
        )
        assert process.poll() is None, log.read_text()
        assert status == 503 and str(root) in why and "cannot be read" in why, (status, why)
        said = log.read_text()
        assert f"{root} cannot be read (Permission denied)" in said, said
        assert "Traceback" not in said

        root.chmod(0o755)
        _until("ready", lambda: _readyz(port)[0] == 200)
        assert f"{root} can be read now" in log.read_text()
        events = len((session / "events.jsonl").read_text().splitlines())
        _until(
            "the session's events",
            lambda: (
                scrape_metrics(f"127.0.0.1:{port}").value("otel_bridge_events_read_total") == events
            ),
        )
    finally:
        terminate(process)
    assert "Traceback" not in log.read_text()
