"""The README's quick start, run as a newcomer runs it: in a fresh copy of the repository, with
a home of its own that holds one real session, the first command block of "Quick start"
creates a virtual environment, installs the bridge from the copy, and runs it on the local
`~/.copilot`. It must print that session's spans and serve metrics.

The command is taken from the README itself, so the test fails when the README's command stops
working (a new dependency that does not install, a console script renamed, a default that
needs set-up). One thing is added to it: `--prometheus-port` with a free port, since the
default 9464 may be taken on the machine running the tests. pip keeps its usual cache, so only
the first run downloads the dependencies (from the package index, as a user's would).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from tests import paths
from tests.processes import terminate
from tests.prometheus import free_port

REPO = paths.REPO
FIXTURE = REPO / "tests" / "fixtures" / "run1_cli_prompt_basic" / "events.jsonl"
DEADLINE_S = 600  # a cold pip cache on a slow index; a warm one takes well under a minute


def quick_start_command() -> str:
    """The first ```sh block under "## Quick start" in the README."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "the Quick start section has no ```sh block"
    return match.group(1).strip()


def copy_of_the_repository(dest: Path) -> Path:
    """The files git tracks, as a clone would hold them (without .git and the working
    directories a developer has: .venv, node_modules, caches)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        name = raw.decode()
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def session_id(log: Path) -> str:
    first = json.loads(log.read_text().splitlines()[0])
    return str(first["data"]["sessionId"])


def test_the_quick_start_installs_and_runs_on_a_fresh_copy(tmp_path: Path) -> None:
    command = quick_start_command()
    assert command.endswith("otel-bridge run"), command  # the test appends run's options
    clone = copy_of_the_repository(tmp_path / "otel-bridge")
    home = tmp_path / "home"
    sid = session_id(FIXTURE)
    log = home / ".copilot" / "session-state" / sid / "events.jsonl"
    log.parent.mkdir(parents=True)
    shutil.copy(FIXTURE, log)  # modified now: the catch-up reads it from its start

    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "COPILOT_", "XDG_", "VIRTUAL_ENV", "PYTHON"))
    }
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    env["HOME"] = str(home)
    # a newcomer's shell has no virtual environment active: not the one running the tests
    env["PATH"] = os.pathsep.join(
        part for part in env.get("PATH", "").split(os.pathsep) if not part.startswith(sys.prefix)
    )
    port = free_port()
    with (tmp_path / "stderr.txt").open("wb") as stderr:
        process = subprocess.Popen(
            ["bash", "-c", f"{command} --prometheus-port {port}"],
            cwd=clone,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
        )
    spans: list[dict] = []
    reader = threading.Thread(target=_read_spans, args=(process, spans), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not any(s.get("parent_id") is None for s in spans):
            assert process.poll() is None, (tmp_path / "stderr.txt").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "stderr.txt").read_text()[-3000:]
            time.sleep(0.5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            metrics = answer.read().decode()
    finally:
        terminate(process, group=True)  # the shell and the bridge it started
        reader.join(timeout=10)
        assert process.stdout is not None
        process.stdout.close()
    roots = [s for s in spans if s.get("parent_id") is None]
    assert {s["attributes"].get("gen_ai.conversation.id") for s in roots} == {sid}
    assert "copilot_tasks_total" in metrics
    assert (clone / ".venv" / "bin" / "otel-bridge").exists()
    assert (home / ".local" / "state" / "otel-bridge" / "checkpoints.jsonl").exists()


def _read_spans(process: subprocess.Popen, spans: list[dict]) -> None:
    """Not on a terminal, run prints one JSON object per span, a line each; pip's own lines
    come first on the same output."""
    assert process.stdout is not None
    for raw in process.stdout:
        if raw.startswith(b"{"):
            spans.append(json.loads(raw))
