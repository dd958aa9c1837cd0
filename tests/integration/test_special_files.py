"""Special files everywhere (issue 32, item 4): every file the bridge reads is opened as the
logs are, without blocking and regular files only. A FIFO as the checkpoints or the lock, a
FIFO or a device as --config, a configuration of more than 1 MiB: a clear line at once, never a
start that hangs (and ignores SIGTERM) or reads /dev/zero until memory runs out; doctor reports
each as a failure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otel_bridge._exceptions import ConfigError
from otel_bridge.checkpoint._lock import StateLock
from otel_bridge.cli import main
from otel_bridge.cli._config_file import MAX_CONFIG_BYTES, read_config_text
from tests import paths
from tests.corpus import session_state, spans_in_order
from tests.processes import bridge_env, start_bridge, terminate

#: The address space a bridge that reads a device as its configuration gets: far more than
#: it needs to start, far less than reading /dev/zero whole takes (it grew 5.5 GB in 6 s).
_ADDRESS_SPACE = 2 << 30
_LIMITED = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({0}, {0})); "
    "os.execv(sys.executable, [sys.executable, '-m', 'otel_bridge', *sys.argv[1:]])"
)


def bridge(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The bridge with a bounded address space; the timeout stops a start that hangs."""
    return subprocess.run(
        [sys.executable, "-c", _LIMITED.format(_ADDRESS_SPACE), *args],
        env=bridge_env({"PYTHONPATH": str(paths.REPO), **env}),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def error_line(stderr: str) -> str:
    (line,) = [x for x in stderr.splitlines() if ": error: " in x]
    return line


def test_run_with_a_fifo_for_its_checkpoints_reads_the_logs_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    root = session_state(tmp_path / "session-state")
    state = tmp_path / "state"
    state.mkdir()
    os.mkfifo(state / "checkpoints.jsonl")
    traces = tmp_path / "traces.jsonl"
    log = tmp_path / "run.log"
    run = start_bridge(
        [
            *("run", "--session-state", str(root), "--state-dir", str(state)),
            *("--no-prometheus", "--poll-interval", "0.1", "--traces-file", str(traces)),
        ],
        env=bridge_env({"OTEL_TRACES_EXPORTER": "none", "PYTHONPATH": str(paths.REPO)}),
        log=log,
    )
    try:
        deadline = time.monotonic() + 30
        while "following" not in log.read_text():
            assert run.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == 0, log.read_text()
    finally:
        terminate(run)
    said = log.read_text()
    assert f"cannot use {state / 'checkpoints.jsonl'} (not a regular file (a FIFO))" in said
    assert "read from their start" in said
    assert spans_in_order(traces)  # every log read from its start (no usable checkpoint)


def test_a_fifo_as_the_lock_file_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "run.lock")
    with pytest.raises(ConfigError, match=r"not a regular file \(a FIFO\)"):
        StateLock(tmp_path)


@pytest.mark.parametrize("special", ["FIFO", "/dev/zero", "/dev/urandom"])
def test_a_special_file_as_config_is_one_line_at_once(tmp_path: Path, special: str) -> None:
    if special == "FIFO":
        special = str(tmp_path / "config.toml")
        os.mkfifo(special)
    result = bridge("run", "--config", special, "--session-state", str(tmp_path))
    assert result.returncode == 2, result.stderr
    kind = "a FIFO" if special.endswith(".toml") else "a character device"
    assert error_line(result.stderr) == (
        f"otel-bridge run: error: {special}: cannot be read (not a regular file ({kind}))"
    )
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr


def test_a_config_over_1_mib_is_refused_and_one_of_1_mib_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bridge.toml"
    line = "# a comment, as long as a line may be\n"
    text = line * (MAX_CONFIG_BYTES // len(line))
    text += "#" * (MAX_CONFIG_BYTES - len(text) - 1) + "\n"
    config.write_text(text)
    assert read_config_text(config) == text  # 1 MiB exactly: read
    config.write_text(text + "#\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["replay", "--config", str(config)])
    assert exit_info.value.code == 2
    assert error_line(capsys.readouterr().err) == (
        f"otel-bridge replay: error: {config}: {MAX_CONFIG_BYTES + 2} bytes, more than a "
        f"configuration file holds (at most {MAX_CONFIG_BYTES} bytes, 1 MiB)"
    )


def test_doctor_reports_a_fifo_for_the_config_the_checkpoints_and_the_lock(
    tmp_path: Path,
) -> None:
    root = session_state(tmp_path / "session-state")
    state = tmp_path / "state"
    state.mkdir()
    os.mkfifo(state / "checkpoints.jsonl")
    os.mkfifo(state / "run.lock")
    config = tmp_path / "bridge.toml"
    os.mkfifo(config)
    result = bridge(
        *("doctor", "--config", str(config), "--session-state", str(root)),
        *("--state-dir", str(state), "--no-prometheus"),
        OTEL_TRACES_EXPORTER="console",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    problems = [x.strip() for x in result.stdout.splitlines() if x.strip().startswith("[!!]")]
    assert problems == [
        f"[!!] config file {config}: cannot be read (not a regular file (a FIFO)): run would "
        "not start",
        f"[!!] state directory {state}: run.lock is not a regular file (a FIFO); "
        "checkpoints.jsonl is not a regular file (a FIFO): run refuses such a lock file, and "
        "uses no such checkpoints (it reads every log from its start); remove it",
    ]
    assert f"[ok] {root}:" in result.stdout  # the rest is checked with the flags
