"""The bridge's HTTP endpoint: Prometheus `/metrics`, and `/healthz` and `/readyz` for probes.

One small server rather than prometheus_client's `start_http_server`, which serves metrics on
every path and nothing else. Loopback by default: metrics and health say what agents run here.

- `/healthz`: 200 "ok" while the process serves and its main loop turns; 503 with the reason
  when the liveness check says the loop is stuck (liveness).
- `/metrics`: 404 with the reason when the port serves probes only (`no_metrics`).
- `/readyz`: 200 when ready, 503 with the reason otherwise (readiness: `run` is not ready until
  its daemon has started, while it catches up logs at start, or while an exporter keeps
  failing).

Anyone who can reach the port is a client, and on a shared host that is every local user: no
client can hold more than a bounded share of the server, nor keep the probes from answering
(see `TelemetryServer`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

__all__ = ["Liveness", "Readiness", "TelemetryServer", "cannot_serve"]

logger = logging.getLogger(__name__)

#: Tells whether the bridge is ready, and why not. Called on the server's one thread: it must
#: answer at once (read a few attributes), never wait.
Readiness = Callable[[], tuple[bool, str]]
#: Tells whether the bridge is alive (its main loop turns), and why not; as `Readiness`.
Liveness = Callable[[], tuple[bool, str]]

#: Seconds a client has, from its connection, to send its whole request head.
REQUEST_SECONDS = 5.0
#: Seconds a worker gives a client to take a /metrics response.
RESPONSE_SECONDS = 10.0
#: Connections held while their request head arrives; past this the oldest is closed.
MAX_PENDING = 128
#: Threads that build and send /metrics, and requests that may wait for one.
METRICS_WORKERS = 2
METRICS_BACKLOG = 8
_MAX_HEAD = 8192  # bytes of a request head (request line and headers)
_TICK = 0.25  # seconds between looks at the deadlines while connections wait
_WAKE = "wake"  # the selector's data of the socket close() writes to


def _ok() -> tuple[bool, str]:
    return True, "ok"


def _starting() -> tuple[bool, str]:
    """Readiness until the owner gives its own: the port is bound before the daemon that
    reads the logs exists, and a probe asked in between must not hear "ready"."""
    return False, "starting"


def cannot_serve(host: str, port: int, exc: OSError | OverflowError) -> str:
    """Why the endpoint cannot be served on host:port, and what to do, in one line.

    The OS says "Name or service not known" for a host that is not this machine's, and "Address
    already in use" for a taken port; neither says which flag to change.
    """
    where = f"cannot serve /metrics on {host}:{port}"
    if isinstance(exc, OverflowError):  # bind() checks the port range only this way
        return f"{where}: the port is not from 0 to 65535"
    if isinstance(exc, socket.gaierror) and ":" in host:  # the server is IPv4 (AF_INET)
        return (
            f"{where}: IPv6 addresses are not supported (use 127.0.0.1, 0.0.0.0 or a local "
            "interface's IPv4 address)"
        )
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"{where}: the host is not an address of this machine (use 127.0.0.1, 0.0.0.0 "
            "or a local interface's address)"
        )
    if exc.errno == errno.EADDRINUSE:
        return (
            f"{where}: the port is in use: pick another with --prometheus-port (0: any "
            "free port), or --no-prometheus"
        )
    if exc.errno == errno.EACCES:
        return (
            f"{where}: permission denied (ports below 1024 need privileges): pick another "
            "with --prometheus-port"
        )
    return (
        f"{where}: {exc.strerror or exc}: check --prometheus-host and --prometheus-port, or "
        "use --no-prometheus"
    )


@dataclass(slots=True)
class _Pending:
    """A connection whose request head is still arriving."""

    sock: socket.socket
    deadline: float
    head: bytearray = field(default_factory=bytearray)


class TelemetryServer:
    """Serves /metrics, /healthz and /readyz on background threads.

    How a slow or idle client is kept from costing much (a thread per connection with no
    timeout let 500 idle sockets hold 500 threads):

    - one thread waits on every socket at once (`selectors`): it accepts connections and reads
      their request heads as bytes arrive, so a connection that sends nothing costs no thread.
      It closes a connection whose head is not complete `REQUEST_SECONDS` after it was made,
      and the oldest one when more than `MAX_PENDING` wait (so a flood of idle connections
      cannot use up the file descriptors the process needs for the logs too);
    - /healthz, /readyz and errors are answered on that thread at once: a few hundred bytes,
      sent without waiting, from checks that only read attributes. No client can keep the
      probes waiting;
    - /metrics, the one response that takes time to build and to send, goes to
      `METRICS_WORKERS` threads, handed over only once its request is complete, with
      `METRICS_BACKLOG` more waiting at most (503 beyond) and `RESPONSE_SECONDS` for the
      client to take it;
    - every connection is closed after one response (`Connection: close`).

    Raises:
        OSError, OverflowError: the address cannot be bound (`cannot_serve` says why).
    """

    def __init__(self, host: str, port: int) -> None:
        self.readiness: Readiness = _starting  # until `run`'s daemon sets its own
        self.liveness: Liveness = _ok  # it serves: alive, until told how to tell stuck
        #: Why /metrics is not served on this port (answered 404 with it), or None.
        self.no_metrics: str | None = None
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(128)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        self._listener = listener
        self.address = f"{host}:{listener.getsockname()[1]}"
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ)
        # With no connection waiting, the selector thread sleeps until one comes (or close()
        # writes here), instead of waking 4 times a second to look at no deadline.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._pending: dict[socket.socket, _Pending] = {}  # in the order they came
        self._work: queue.Queue[socket.socket | None] = queue.Queue(METRICS_BACKLOG)
        self._closing = threading.Event()
        self._failed = False  # a failure of the loop itself was logged
        self._threads = [threading.Thread(target=self._serve, name="telemetry-http", daemon=True)]
        self._threads += [
            threading.Thread(
                target=self._metrics_worker, name=f"telemetry-metrics-{n}", daemon=True
            )
            for n in range(METRICS_WORKERS)
        ]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """Stop serving. Idempotent."""
        if self._closing.is_set():
            return
        self._closing.set()
        with contextlib.suppress(OSError):  # the selector thread ended already
            self._wake_w.send(b"x")
        self._threads[0].join(timeout=5)  # nothing is queued after this
        while True:
            try:
                waiting = self._work.get_nowait()
            except queue.Empty:
                break
            if waiting is not None:
                _close(waiting)
        for _ in self._threads[1:]:
            self._work.put(None)
        for thread in self._threads[1:]:
            thread.join(timeout=5)

    # --- the selector thread ----------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while not self._closing.is_set():
                try:
                    self._turn()
                except Exception:  # a bug must not stop the probes for good
                    if not self._failed:
                        self._failed = True
                        logger.warning("http: serving failed once (details at DEBUG)")
                    logger.debug("http: serving failed", exc_info=True)
        finally:
            for pending in list(self._pending.values()):
                self._drop(pending.sock)
            self._selector.close()
            self._listener.close()
            self._wake_r.close()
            self._wake_w.close()

    def _turn(self) -> None:
        for key, _ in self._selector.select(_TICK if self._pending else None):
            if key.data is None:  # the listener
                self._accept()
            elif key.data is _WAKE:
                return  # close(): `_serve` sees `_closing`
            elif key.data.sock in self._pending:  # not dropped earlier in this turn
                self._receive(key.data)
        now = time.monotonic()
        for pending in list(self._pending.values()):
            if pending.deadline > now:
                break  # in the order they came: the rest are younger
            self._drop(pending.sock)

    def _accept(self) -> None:
        for _ in range(MAX_PENDING):  # a burst, not for ever
            try:
                sock, _address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors, say
                logger.debug("http: accept failed: %s", exc)
                # The listener stays readable: without a pause or a freed descriptor the loop
                # would spin. The oldest waiting connection gives its descriptor back.
                if self._pending:
                    self._drop(next(iter(self._pending)))
                else:
                    self._closing.wait(_TICK)
                return
            sock.setblocking(False)
            if len(self._pending) >= MAX_PENDING:
                self._drop(next(iter(self._pending)))  # the oldest waiter makes room
            pending = _Pending(sock, time.monotonic() + REQUEST_SECONDS)
            self._pending[sock] = pending
            self._selector.register(sock, selectors.EVENT_READ, pending)

    def _receive(self, pending: _Pending) -> None:
        try:
            data = pending.sock.recv(_MAX_HEAD)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(pending.sock)
            return
        if not data:  # the client went away
            self._drop(pending.sock)
            return
        pending.head += data
        end = _head_end(pending.head)
        if end > _MAX_HEAD or (end < 0 and len(pending.head) > _MAX_HEAD):
            self._answer(pending, 431, b"request head too large\n")
        elif end >= 0:
            self._route(pending, bytes(pending.head[:end]))

    def _route(self, pending: _Pending, head: bytes) -> None:
        parts = head.split(b"\r\n", 1)[0].split(b"\n", 1)[0].split()
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
            self._answer(pending, 400, b"bad request\n")
            return
        method, target = parts[0], parts[1].split(b"?", 1)[0]
        if method != b"GET":
            self._answer(pending, 405, b"only GET\n", b"Allow: GET\r\n")
        elif target == b"/healthz":
            alive, reason = _check(self.liveness, "liveness")
            self._answer(pending, 200 if alive else 503, reason.encode() + b"\n")
        elif target == b"/readyz":
            ready, reason = _check(self.readiness, "readiness")
            body = json.dumps({"ready": ready, "reason": reason}).encode() + b"\n"
            self._answer(pending, 200 if ready else 503, body, content_type="application/json")
        elif target == b"/metrics" and self.no_metrics is not None:
            self._answer(pending, 404, self.no_metrics.encode() + b"\n")
        elif target == b"/metrics":
            self._forget(pending.sock)
            try:
                self._work.put_nowait(pending.sock)
            except queue.Full:
                _send_now(pending.sock, _response(503, b"busy: try again\n"))
                _close(pending.sock)
        else:
            self._answer(pending, 404, b"not found: try /metrics, /healthz or /readyz\n")

    def _answer(
        self,
        pending: _Pending,
        status: int,
        body: bytes,
        extra: bytes = b"",
        content_type: str = "text/plain; charset=utf-8",
    ) -> None:
        """Send a small response without waiting (a client that does not take a few hundred
        bytes gets what its buffer takes) and close."""
        self._forget(pending.sock)  # nothing logged: a blocked log must not block the probes
        _send_now(pending.sock, _response(status, body, content_type, extra))
        _close(pending.sock)

    def _forget(self, sock: socket.socket) -> None:
        if self._pending.pop(sock, None) is not None:
            self._selector.unregister(sock)

    def _drop(self, sock: socket.socket) -> None:
        self._forget(sock)
        _close(sock)

    # --- the /metrics workers ---------------------------------------------------------------

    def _metrics_worker(self) -> None:
        while True:
            sock = self._work.get()
            if sock is None:
                return
            try:
                body = generate_latest(REGISTRY)
                sock.settimeout(RESPONSE_SECONDS)  # for all of sendall (Python 3.5 and later)
                sock.sendall(_response(200, body, CONTENT_TYPE_LATEST))
            except OSError as exc:  # a client that left or took too long
                logger.debug("http: /metrics not sent: %s", exc)
            except Exception:  # a collection that failed must not end the worker
                logger.debug("http: /metrics failed", exc_info=True)
                _send_now(sock, _response(500, b"collecting metrics failed\n"))
            finally:
                _close(sock)


def _check(check: Callable[[], tuple[bool, str]], what: str) -> tuple[bool, str]:
    try:
        return check()
    except Exception as exc:  # a broken check must say so, not crash
        return False, f"{what} check failed: {exc}"


def _head_end(head: bytearray) -> int:
    """Where the request head ends (its blank line), or -1."""
    end = head.find(b"\r\n\r\n")
    if end >= 0:
        return end
    end = head.find(b"\n\n")  # bare newlines, as some tools send
    return end


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _response(
    status: int,
    body: bytes,
    content_type: str = "text/plain; charset=utf-8",
    extra: bytes = b"",
) -> bytes:
    return (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n".encode()
        + extra
        + b"\r\n"
        + body
    )


def _send_now(sock: socket.socket, data: bytes) -> None:
    """What the socket's buffer takes of `data` now: all of it, but for a client that does not
    read (then it gets what fits)."""
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        sock.send(data)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # the client may have gone
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
