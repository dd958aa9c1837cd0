"""The bridge's HTTP endpoint: Prometheus `/metrics`, and `/healthz` and `/readyz` for probes.

One small server rather than prometheus_client's `start_http_server`, which serves metrics on
every path and nothing else. Loopback by default: metrics and health say what agents run here.

- `/healthz`: 200 while the process serves (liveness).
- `/readyz`: 200 when ready, 503 with the reason otherwise (readiness: `run` is not ready while
  it catches up logs at start, or while an exporter keeps failing).
"""

from __future__ import annotations

import errno
import json
import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

__all__ = ["Readiness", "TelemetryServer", "cannot_serve"]

logger = logging.getLogger(__name__)

#: Tells whether the bridge is ready, and why not.
Readiness = Callable[[], tuple[bool, str]]


def _always_ready() -> tuple[bool, str]:
    return True, "ok"


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


class TelemetryServer:
    """Serves /metrics, /healthz and /readyz on a background thread.

    Raises:
        OSError, OverflowError: the address cannot be bound (`cannot_serve` says why).
    """

    def __init__(self, host: str, port: int) -> None:
        self.readiness: Readiness = _always_ready
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(REGISTRY), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    self._send(200, b"ok\n", "text/plain; charset=utf-8")
                elif path == "/readyz":
                    try:
                        ready, reason = server_self.readiness()
                    except Exception as exc:  # a broken check must say so, not crash
                        ready, reason = False, f"readiness check failed: {exc}"
                    body = json.dumps({"ready": ready, "reason": reason}).encode() + b"\n"
                    self._send(200 if ready else 503, body, "application/json")
                else:
                    self._send(
                        404,
                        b"not found: try /metrics, /healthz or /readyz\n",
                        "text/plain; charset=utf-8",
                    )

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                logger.debug("http: " + format, *args)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.address = f"{host}:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="telemetry-http", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving. Idempotent."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
