"""`otel-bridge doctor`: what `run` would watch and where its spans would go, checked for real.

Why: the first thing a new user needs to know is whether the bridge sees their sessions and can
reach their collector, before waiting for spans that never come.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ._exceptions import ConfigError
from .export import trace_exporter_names
from .export._common import otlp_protocol
from .sources import scan_session_state

__all__ = ["Check", "diagnose"]

_DEFAULT_PORTS = {"grpc": 4317, "http/protobuf": 4318}


@dataclass(frozen=True, slots=True)
class Check:
    """One finding: ok or not, and a line a person can act on."""

    ok: bool
    message: str


def diagnose(roots: Sequence[Path], environ: Mapping[str, str], traces_file: Path | None,
             timeout: float = 2.0) -> list[Check]:
    """Look at the session-state directories and the exporter configuration."""
    checks = [_check_root(root) for root in roots]
    checks.extend(_check_exporters(environ, traces_file, timeout))
    return checks


def _check_root(root: Path) -> Check:
    if not root.is_dir():
        return Check(False, f"{root}: does not exist (yet). Has the Copilot CLI run as this user? "
                            f"Set COPILOT_HOME or pass --session-state DIR")
    logs = scan_session_state(root)
    if not logs:
        return Check(True, f"{root}: exists, no session logs yet")
    newest = max(log.path.stat().st_mtime for log in logs)
    age = _age(time.time() - newest)
    return Check(True, f"{root}: {len(logs)} session logs, the newest written {age} ago")


def _check_exporters(environ: Mapping[str, str], traces_file: Path | None,
                     timeout: float) -> list[Check]:
    names = trace_exporter_names(environ, traces_file is not None)
    checks: list[Check] = []
    if not names and traces_file is None:
        checks.append(Check(False, "no exporter: OTEL_TRACES_EXPORTER=none and no --traces-file"))
    for name in names:
        if name == "console":
            checks.append(Check(True, "exporter console: spans printed to stdout (set "
                                      "OTEL_EXPORTER_OTLP_ENDPOINT to send them to a collector)"))
        elif name == "otlp":
            checks.append(_check_otlp(environ, timeout))
        elif name != "none":
            checks.append(Check(False, f"exporter {name!r} is not supported: use otlp, console "
                                       f"or none"))
    if traces_file is not None:
        checks.append(Check(True, f"traces file: {traces_file}"))
    return checks


def _check_otlp(environ: Mapping[str, str], timeout: float) -> Check:
    try:
        protocol = otlp_protocol(environ, "traces")
    except ConfigError as exc:
        return Check(False, str(exc))
    endpoint = (environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or f"http://localhost:{_DEFAULT_PORTS[protocol]}")
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    host = parts.hostname or "localhost"
    port = parts.port or (443 if parts.scheme == "https" else _DEFAULT_PORTS[protocol])
    where = f"exporter otlp ({protocol}) at {endpoint}"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        return Check(False, f"{where}: NOT reachable ({exc.strerror or exc}); is the collector "
                            f"running, and is the port right ({_DEFAULT_PORTS['grpc']} for "
                            f"grpc, {_DEFAULT_PORTS['http/protobuf']} for http/protobuf)?")
    return Check(True, f"{where}: reachable")


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{max(seconds, 0):.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"
