"""A real Arize Phoenix server for tests, alone in its own network namespace.

Why a real one: Phoenix is one of the viewers people look at the bridge's traces in, and the
honest check that they see the tree the bridge built is to send the spans to Phoenix over OTLP
and read them back through its API. PyPI `arize-phoenix` gives the server
(`python -m phoenix.server.main serve`).

Why a network namespace: Phoenix serves the UI, its REST and GraphQL APIs and OTLP/HTTP on
`PHOENIX_HOST:PHOENIX_PORT`, which we set to 127.0.0.1, but its OTLP/gRPC receiver binds
`[::]:PHOENIX_GRPC_PORT`, every interface, and no setting changes that (arize-phoenix 20.26.1:
`GrpcServer` calls `add_insecure_port(f"[::]:{port}")`; it is disabled only in read-only mode,
which refuses OTLP/HTTP too). So the server runs under `unshare --net` in a namespace of its own
whose only interface is a loopback we bring up: nothing it opens is reachable from outside, and
it can reach nothing either (no telemetry, no model-price download). Being a fresh namespace,
every port in it is free, so the ports are fixed. Whatever talks to the server has to be in that
namespace too: `PhoenixServer.run` starts a command there with `nsenter --net`, and the API
helpers open their sockets from a thread that joined the namespace with setns(2). Both need root
(CAP_SYS_ADMIN), as the tests here have.

The server is started with a temporary PHOENIX_WORKING_DIR (its SQLite database), in a new
session, and stopped by its process group id (its own pid), SIGTERM then SIGKILL: it is never
left running.

Usage, in pytest::

    from tests.phoenix_server import phoenix_fixture  # noqa: F401  (the fixture `phoenix`)

    def test_something(phoenix):
        phoenix.run([sys.executable, "-m", "otel_bridge", "replay", ...], env=...)
        spans = phoenix.wait_for_spans("my-project", count=18)

Nothing is skipped: when arize-phoenix is missing the fixture fails and says how to install it.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.processes import log_tail, terminate

__all__ = ["PHOENIX_REQUIREMENT", "PhoenixServer", "phoenix_fixture"]

# The version these tests were written against (the API paths and the gRPC bind above).
# `opentelemetry-exporter-otlp` is pinned beside it because arize-phoenix-otel asks for it
# unpinned, and its newest release would move the bridge's pinned OTLP exporters.
PHOENIX_REQUIREMENT = "arize-phoenix==20.26.1"
_INSTALL_HINT = (
    f'pip install "{PHOENIX_REQUIREMENT}" "opentelemetry-exporter-otlp==1.45.1" '
    "(about 600 MB; the tests start their own server)"
)

_HOST = "127.0.0.1"
_HTTP_PORT = 6006  # UI, REST, GraphQL and OTLP/HTTP (/v1/traces)
_GRPC_PORT = 4317  # OTLP/gRPC, on [::] but inside the namespace
_CLONE_NEWNET = 0x40000000

T = TypeVar("T")


def _find(name: str) -> str:
    path = shutil.which(name) or next(
        (
            p
            for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}", f"/sbin/{name}")
            if os.access(p, os.X_OK)
        ),
        None,
    )
    if path is None:
        pytest.fail(f"`{name}` not found (Debian packages util-linux / iproute2)", pytrace=False)
    return path


def _setns(fd: int) -> None:
    """Move the calling thread into the network namespace open at `fd`."""
    if hasattr(os, "setns"):  # Python 3.12+
        os.setns(fd, _CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns(CLONE_NEWNET): {os.strerror(errno)}")


class PhoenixServer:
    """One Phoenix process in a network namespace of its own.

    Args:
        workdir: an empty directory for PHOENIX_WORKING_DIR and the server's log.
    """

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.log_path = workdir / "phoenix.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"http://{_HOST}:{_HTTP_PORT}"

    # ------------------------------------------------------------------ lifecycle
    @property
    def netns(self) -> str:
        """The path of the server's network namespace."""
        assert self.process is not None, "not started"
        return f"/proc/{self.process.pid}/ns/net"

    def environment(self) -> dict[str, str]:
        """The server's environment: ours without OTEL_* and PHOENIX_*, then its settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
        env.update(
            {
                "PHOENIX_WORKING_DIR": str(self.workdir),
                "PHOENIX_HOST": _HOST,
                "PHOENIX_PORT": str(_HTTP_PORT),
                "PHOENIX_GRPC_PORT": str(_GRPC_PORT),
                "PHOENIX_TELEMETRY_ENABLED": "false",
                "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
                "PHOENIX_ENABLE_MCP_SERVER": "false",
                "PHOENIX_LOG_MIGRATIONS": "false",
            }
        )
        return env

    def command(self) -> list[str]:
        return [
            _find("unshare"),
            "--net",
            "--",
            "sh",
            "-c",
            f'{_find("ip")} link set lo up && exec "$@"',
            "phoenix",
            sys.executable,
            "-m",
            "phoenix.server.main",
            "serve",
        ]

    def start(self, timeout: float = 60.0) -> PhoenixServer:
        """Start the server and wait until /healthz answers 200."""
        try:
            metadata.version("arize-phoenix")
        except metadata.PackageNotFoundError:
            pytest.fail(f"arize-phoenix is not installed: {_INSTALL_HINT}", pytrace=False)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(),
                cwd=self.workdir,
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            self._wait_ready(self.process, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, process: subprocess.Popen[bytes], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"phoenix exited with {process.returncode}:\n{self.log_tail()}")
            try:
                self.request("GET", "/healthz", timeout=1)
            except (OSError, urllib.error.URLError):  # not listening yet
                time.sleep(0.2)
                continue
            # what it listens on is out of reach of every other process here
            assert os.readlink(self.netns) != os.readlink("/proc/self/ns/net")
            return
        raise TimeoutError(f"phoenix not ready after {timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM the server's process group (its pid: it leads a session of its own), then
        SIGKILL what is left of it."""
        process, self.process = self.process, None
        terminate(process, 15, group=True)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)

    def __enter__(self) -> PhoenixServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ in the namespace
    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on a thread that joined the server's network namespace, so that the sockets
        it opens reach the server's 127.0.0.1 (the thread ends with the call)."""
        outcome: list[Any] = []

        def target() -> None:
            try:
                fd = os.open(self.netns, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    _setns(fd)
                finally:
                    os.close(fd)
                outcome.append((True, fn()))
            except BaseException as exc:  # handed to the caller's thread
                outcome.append((False, exc))

        thread = threading.Thread(target=target, name="phoenix-netns", daemon=True)
        thread.start()
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    def run(
        self, args: Sequence[str], *, env: Mapping[str, str], cwd: Path | str, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in the server's network namespace (where `self.url` is reachable)."""
        return subprocess.run(
            [_find("nsenter"), f"--net={self.netns}", "--", *args],
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        """An HTTP request to the server; the decoded JSON answer, or the text of another."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )

        def fetch() -> Any:
            try:
                with urllib.request.urlopen(req, timeout=timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:  # it holds the answer open: close it
                exc.close()
                raise
            return json.loads(raw) if raw.strip().startswith((b"{", b"[")) else raw.decode()

        return self.call(fetch)

    # ------------------------------------------------------------------ API
    def get(self, path: str, **params: Any) -> Any:
        """GET a REST path with query parameters (lists repeat the parameter)."""
        query = urllib.parse.urlencode(
            {k: v for k, v in params.items() if v is not None}, doseq=True
        )
        return self.request("GET", path + (f"?{query}" if query else ""))

    def graphql(self, query: str, **variables: Any) -> Any:
        """POST /graphql, the API the UI itself reads; the `data` of the answer."""
        answer = self.request("POST", "/graphql", {"query": query, "variables": variables})
        if answer.get("errors"):
            raise AssertionError(f"GraphQL errors: {answer['errors']}")
        return answer["data"]

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span of a project, from GET /v1/projects/{project}/spans (all pages)."""
        spans: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.get(
                f"/v1/projects/{urllib.parse.quote(project, safe='')}/spans",
                limit=1000,
                cursor=cursor,
            )
            spans += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return spans

    def wait_for_spans(
        self, project: str, count: int, timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        """The project's spans once there are at least `count` (Phoenix inserts in batches)."""
        deadline = time.monotonic() + timeout
        spans: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            try:
                spans = self.spans(project)
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # 404: no span has created the project yet
                    raise
            if len(spans) >= count:
                return spans
            time.sleep(0.2)
        raise TimeoutError(
            f"{len(spans)} of {count} spans in Phoenix project {project!r} "
            f"after {timeout}s:\n{self.log_tail()}"
        )


@pytest.fixture(scope="module", name="phoenix")
def phoenix_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    """A started Phoenix server, shared by a module's tests, stopped at its end."""
    with PhoenixServer(tmp_path_factory.mktemp("phoenix")) as server:
        yield server
