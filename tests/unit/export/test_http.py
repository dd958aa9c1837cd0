"""The /metrics, /healthz and /readyz server: every local user is a client, so none may hold
it: idle and slow clients cost no thread and cannot keep the probes from answering."""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from otel_bridge.export import _http
from otel_bridge.export._http import TelemetryServer

#: Long enough that only a server that does not answer at all fails; no test asserts speed.
ANSWER_WITHIN = 20.0


@pytest.fixture
def server() -> Iterator[TelemetryServer]:
    served = TelemetryServer("127.0.0.1", 0)
    served.readiness = lambda: (True, "ok")  # as run's daemon sets it once it has started
    try:
        yield served
    finally:
        served.close()


def get(server: TelemetryServer, path: str) -> tuple[int, str]:
    url = f"http://{server.address}{path}"
    try:
        with urllib.request.urlopen(url, timeout=ANSWER_WITHIN) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def connect(server: TelemetryServer) -> socket.socket:
    host, port = server.address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=ANSWER_WITHIN)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Waits (at most ANSWER_WITHIN) until the server closes the connection; False if it did
    not."""
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def raw(server: TelemetryServer, request: bytes) -> bytes:
    with connect(server) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_idle_connections_hold_no_thread_and_the_probes_still_answer(server) -> None:
    before = threading.active_count()
    idle = [connect(server) for _ in range(500)]
    try:
        assert get(server, "/healthz") == (200, "ok\n")
        assert get(server, "/readyz")[0] == 200
        assert get(server, "/metrics")[0] == 200
        # a thread per connection would have made 500
        assert threading.active_count() <= before + 2
    finally:
        for sock in idle:
            sock.close()


def test_a_client_that_never_finishes_its_request_is_closed(monkeypatch, server) -> None:
    monkeypatch.setattr(_http, "REQUEST_SECONDS", 0.5)
    with connect(server) as silent, connect(server) as slow:
        slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        assert closed_by_server(silent) and closed_by_server(slow)
    assert get(server, "/healthz") == (200, "ok\n")


def test_past_the_pending_limit_the_oldest_idle_connection_makes_room(monkeypatch, server):
    monkeypatch.setattr(_http, "MAX_PENDING", 8)
    first = [connect(server) for _ in range(3)]
    later = [connect(server) for _ in range(8)]
    try:
        assert get(server, "/healthz") == (200, "ok\n")  # the probe's own connection too
        assert all(closed_by_server(sock) for sock in first)
        for sock in later[-6:]:  # the youngest are still waiting for their request
            sock.settimeout(0.2)
            assert not closed_by_server(sock)
    finally:
        for sock in first + later:
            sock.close()


def test_metrics_readers_that_take_their_time_do_not_keep_the_probes_waiting(
    monkeypatch, server
) -> None:
    """Every /metrics worker busy (a collection that hangs, standing for a client that does
    not read its response) and the backlog full: the probes still answer, and a further
    scrape is told to come back rather than queued."""
    release = threading.Event()
    started = threading.Semaphore(0)

    def hanging_collection(registry: object) -> bytes:
        started.release()
        release.wait(ANSWER_WITHIN)
        return b"# nothing\n"

    monkeypatch.setattr(_http, "generate_latest", hanging_collection)
    scrapes = [connect(server) for _ in range(_http.METRICS_WORKERS + _http.METRICS_BACKLOG)]
    try:
        for sock in scrapes:
            sock.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        for _ in range(_http.METRICS_WORKERS):
            assert started.acquire(timeout=ANSWER_WITHIN)
        # once the backlog is full, a further scrape is turned away (the loop may not have
        # read all of those above yet: one that gets no answer has joined the backlog)
        answer = b""
        for _ in range(_http.METRICS_BACKLOG + 1):
            scrapes.append(connect(server))
            scrapes[-1].sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
            scrapes[-1].settimeout(1.0)
            with contextlib.suppress(TimeoutError):
                answer = scrapes[-1].recv(100)
                break
        assert answer.startswith(b"HTTP/1.1 503 ")
        assert get(server, "/healthz") == (200, "ok\n")
        assert get(server, "/readyz")[0] == 200
    finally:
        release.set()
        for sock in scrapes:
            sock.close()


def test_readyz_says_starting_until_its_owner_tells_otherwise() -> None:
    # the port is bound before run's daemon exists: nothing may say ready in between
    served = TelemetryServer("127.0.0.1", 0)
    try:
        assert get(served, "/readyz") == (503, '{"ready": false, "reason": "starting"}\n')
        assert get(served, "/healthz") == (200, "ok\n")
        served.readiness = lambda: (True, "ok")
        assert get(served, "/readyz") == (200, '{"ready": true, "reason": "ok"}\n')
    finally:
        served.close()


def test_healthz_says_why_the_bridge_is_not_alive(server) -> None:
    server.liveness = lambda: (False, "the main loop has not turned for 130 s")
    assert get(server, "/healthz") == (503, "the main loop has not turned for 130 s\n")
    server.liveness = lambda: (True, "ok")
    assert get(server, "/healthz") == (200, "ok\n")

    def broken() -> tuple[bool, str]:
        raise RuntimeError("boom")

    server.liveness = broken
    assert get(server, "/healthz") == (503, "liveness check failed: boom\n")


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", b"405"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", b"400"),  # TLS, say
        (b"GET /secret HTTP/1.1\r\n\r\n", b"404"),
        (b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\n\r\n", b"431"),
        (b"GET /healthz?verbose=1 HTTP/1.0\n\n", b"200"),
    ],
)
def test_requests_it_does_not_serve_get_a_status_and_a_closed_connection(
    server, request_bytes: bytes, status: bytes
) -> None:
    answer = raw(server, request_bytes)
    assert answer.split(b" ", 2)[1] == status
    assert b"\r\nConnection: close\r\n" in answer


def test_close_stops_serving_and_can_be_called_twice() -> None:
    served = TelemetryServer("127.0.0.1", 0)
    with connect(served) as pending:
        served.close()
        served.close()
        assert closed_by_server(pending)
    with pytest.raises(OSError), contextlib.closing(connect(served)):
        pass


def test_with_no_connection_waiting_the_server_sleeps_until_one_comes() -> None:
    """Idle is idle (issue 28): with no request head arriving there is no deadline to look
    at, so the selector waits without a timeout (it woke 4 times a second, a fifth of run's
    CPU over 10,000 quiet sessions); close() still ends it at once."""
    served = TelemetryServer("127.0.0.1", 0)
    timeouts: list[float | None] = []
    select = served._selector.select

    def recording(timeout: float | None = None):  # type: ignore[no-untyped-def]
        timeouts.append(timeout)
        return select(timeout)

    served._selector.select = recording  # type: ignore[method-assign]
    try:
        assert get(served, "/healthz") == (200, "ok\n")
        assert get(served, "/healthz") == (200, "ok\n")  # the first one's turn was recorded
    finally:
        served.close()
    assert not served._threads[0].is_alive()
    assert None in timeouts and _http._TICK in timeouts, timeouts
