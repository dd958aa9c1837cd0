"""Starting, watching and stopping the `otel-bridge` processes under measure.

Why a black box: the harness must measure whatever code is importable from the checkout given
(PYTHONPATH), before and after others change it, so it only runs the command and reads what the
kernel says about the process (/proc/<pid>/stat, status, fd), never the bridge's internals.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.processes import start_bridge

__all__ = [
    "Bridge",
    "bridge_env",
    "free_port",
    "run_to_end",
    "status_mb",
]

_TICK = os.sysconf("SC_CLK_TCK")


def bridge_env(pythonpath: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a bridge process: ours without OTEL_* and COPILOT_* (a stray
    collector setting must not change what is measured), the checkout under measure first on
    the path, and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env["PYTHONPATH"] = str(pythonpath)
    # `python -m` would put the working directory first on the path, before PYTHONPATH: started
    # inside another checkout, the harness would measure that one (Python 3.11's safe path).
    env["PYTHONSAFEPATH"] = "1"
    env.update(extra or {})
    return env


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (a small race, acceptable for a benchmark)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def status_mb(pid: int, field: str) -> float:
    """A memory field of /proc/<pid>/status (VmRSS, VmHWM...) in MB (MiB: the kernel's kB are
    KiB); 0.0 when the field is absent."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def command(sub: str, args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "otel_bridge", sub, *args]


class Bridge:
    """One `otel-bridge run` process; stop() (also on context exit) always ends it."""

    def __init__(
        self,
        args: Sequence[str],
        env: Mapping[str, str],
        log: Path,
        *,
        port: int | None = None,
    ) -> None:
        self.port = port
        full = list(args)
        if port is None:
            full.append("--no-prometheus")
        else:
            full += ["--prometheus-host", "127.0.0.1", "--prometheus-port", str(port)]
        self.log = log
        self.started = time.monotonic()
        self.process = start_bridge(["run", *full], env=env, log=log, append=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    def __enter__(self) -> Bridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def alive(self) -> bool:
        return self.process.poll() is None

    def cpu_seconds(self) -> float:
        """User + system CPU seconds so far (fields 14 and 15 of /proc/<pid>/stat)."""
        with open(f"/proc/{self.pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK

    def rss_mb(self) -> float:
        """Resident set size in MB (VmRSS of /proc/<pid>/status)."""
        return status_mb(self.pid, "VmRSS")

    def peak_rss_mb(self) -> float:
        """The largest resident set size since the start, in MB (VmHWM: the kernel's
        high-water mark, so no peak between two samples is missed)."""
        return status_mb(self.pid, "VmHWM")

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def readyz(self, timeout: float = 1.0) -> int | None:
        """The HTTP status of /readyz, None when nothing answers (yet)."""
        if self.port is None:
            raise RuntimeError("no Prometheus port: /readyz is served beside /metrics")
        url = f"http://127.0.0.1:{self.port}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except (OSError, urllib.error.URLError):
            return None

    def metric(self, name: str) -> float | None:
        """The sum of a Prometheus metric's samples on /metrics (e.g.
        otel_bridge_events_read_total), None when it cannot be read."""
        if self.port is None:
            raise RuntimeError("no Prometheus port")
        url = f"http://127.0.0.1:{self.port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=5.0) as response:
                text = response.read().decode()
        except (OSError, urllib.error.URLError):
            return None
        values = [
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith((name + "{", name + " "))
        ]
        return sum(values) if values else None

    def wait_ready(
        self, timeout: float, *, following: int = 0, interval: float = 0.1
    ) -> float | None:
        """Seconds from start until /readyz said 200 and the bridge follows at least
        `following` logs (otel_bridge_files_followed: /readyz alone may say 200 before the
        first scan of the directories); None if not within `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            if self.readyz() == 200 and (
                not following or (self.metric("otel_bridge_files_followed") or 0) >= following
            ):
                return time.monotonic() - self.started
            time.sleep(interval)
        return None

    def kill(self) -> None:
        """SIGKILL: no flush, no checkpoint; what a crash or an OOM kill does."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (finished spans are flushed), then SIGKILL after `timeout`."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def run_to_end(
    sub: str, args: Sequence[str], env: Mapping[str, str], log: Path, timeout: float = 3600
) -> tuple[float, float, int]:
    """Run `otel-bridge sub args` to its end; (wall seconds, CPU seconds, exit status).

    CPU comes from wait4's rusage, so it is the child's own, whatever else the machine runs.
    """
    started = time.perf_counter()
    process = start_bridge([sub, *args], env=env, log=log, append=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                process.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"otel-bridge {sub} ran over {timeout} s")
            time.sleep(0.02)
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, process.returncode
