"""`otel-bridge doctor`: what `run` would watch and where its spans would go, checked for real.

Why: the first thing a new user needs to know is whether the bridge sees their sessions and can
reach their collector, before waiting for spans that never come; and, since the Copilot CLI
exports its own telemetry when the same variables reach it, whether they are about to get every
trace twice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ._exceptions import ConfigError
from ._progress import printable
from ._words import plural
from .export import DEFAULT_SERVICE_NAME, trace_exporter_names
from .export._common import (
    DEFAULT_ENDPOINTS,
    OtlpEndpoint,
    otlp_endpoint,
    reachability,
    sdk_disabled,
    shown_endpoint,
)
from .export._metrics import metric_exporter_names
from .sources import scan_session_state

__all__ = ["Check", "diagnose"]

_EVENTS_FILE = "events.jsonl"
_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class Check:
    """One finding: ok or not, and a line a person can act on.

    `warning` marks something that works but is probably not what the user wants (it does not
    change the exit status).
    """

    ok: bool
    message: str
    warning: bool = False


def diagnose(
    roots: Sequence[Path],
    environ: Mapping[str, str],
    traces_file: Path | None,
    timeout: float = 2.0,
) -> list[Check]:
    """Look at the session-state directories and the exporter configuration. The messages
    are safe to print: a directory's or a variable's control characters come escaped."""
    return [
        Check(check.ok, printable(check.message), check.warning)
        for check in _diagnose(roots, environ, traces_file, timeout)
    ]


def _diagnose(
    roots: Sequence[Path],
    environ: Mapping[str, str],
    traces_file: Path | None,
    timeout: float,
) -> list[Check]:
    checks = [_check_root(root) for root in roots]
    if sdk_disabled(environ):
        checks.append(
            Check(
                True,
                "OTEL_SDK_DISABLED=true: run and replay export no spans and "
                "no metrics (and run keeps its checkpoints where they are); "
                "unset it to export",
                warning=True,
            )
        )
        return checks
    checks.extend(_check_exporters(environ, traces_file, timeout))
    duplicate = _check_cli_telemetry(environ)
    if duplicate is not None:
        checks.append(duplicate)
    return checks


def _check_root(root: Path) -> Check:
    if root.is_file():
        return Check(
            False,
            f"{root} is a file: pass the session-state directory (e.g. "
            f"~/.copilot/session-state), or read this log with "
            f"`otel-bridge replay {root}`",
        )
    if not root.is_dir():
        return Check(
            False,
            f"{root}: does not exist (yet). Has the Copilot CLI run as this user? "
            f"Set COPILOT_HOME or pass --session-state DIR",
        )
    if (root / _EVENTS_FILE).is_file():
        return Check(
            False,
            f"{root} is one session's directory (it holds {_EVENTS_FILE}): pass "
            f"its parent, --session-state {root.parent}, to follow every "
            f"session, or read this one with `otel-bridge replay {root}`",
        )
    logs = scan_session_state(root)
    if not logs:
        return Check(True, f"{root}: exists, no session logs yet")
    newest = max(log.path.stat().st_mtime for log in logs)
    age = _age(time.time() - newest)
    count = plural(len(logs), "session log")
    return Check(True, f"{root}: {count}, the newest written {age} ago")


def _check_exporters(
    environ: Mapping[str, str], traces_file: Path | None, timeout: float
) -> list[Check]:
    names = trace_exporter_names(environ, traces_file is not None)
    checks: list[Check] = []
    if not [n for n in names if n != "none"] and traces_file is None:
        checks.append(Check(False, "no exporter: OTEL_TRACES_EXPORTER=none and no --traces-file"))
    checked: set[tuple[str, int]] = set()
    for name in names:
        if name == "console":
            checks.append(
                Check(
                    True,
                    "exporter console: spans printed to stdout (set "
                    "OTEL_EXPORTER_OTLP_ENDPOINT to send them to a collector)",
                )
            )
        elif name == "otlp":
            checks.append(_check_otlp(environ, "traces", timeout, checked))
        elif name != "none":
            checks.append(
                Check(False, f"exporter {name!r} is not supported: use otlp, console or none")
            )
    if traces_file is not None:
        checks.append(
            Check(
                True,
                f"traces file: {traces_file} (as well)" if names else f"traces file: {traces_file}",
            )
        )
    if _metrics_over_otlp(environ):
        metrics = _check_otlp(environ, "metrics", timeout, checked)
        said = {check.message.partition(": ")[2] for check in checks}
        if metrics.message and metrics.message.partition(": ")[2] not in said:
            checks.append(metrics)  # not when it is the traces' endpoint, or the same error
    return checks


def _metrics_over_otlp(environ: Mapping[str, str]) -> bool:
    """Whether `run` would send metrics over OTLP."""
    return "otlp" in metric_exporter_names(environ, ("prometheus",))


def _check_otlp(
    environ: Mapping[str, str], signal: str, timeout: float, checked: set[tuple[str, int]]
) -> Check:
    """The endpoint is usable and accepts a connection; an endpoint already checked for the
    other signal gives an ok check with no message (left out)."""
    try:
        endpoint = otlp_endpoint(environ, signal)
    except ConfigError as exc:
        return Check(False, f"{signal}: {exc}")
    if (endpoint.host, endpoint.port) in checked:
        return Check(True, "")
    checked.add((endpoint.host, endpoint.port))
    what = "exporter otlp" if signal == "traces" else "metrics otlp"
    where = f"{what} at {endpoint.describe()}{_origin(endpoint)}"
    problem = reachability(endpoint, timeout)
    if problem is not None:
        return Check(
            False,
            f"{where}: NOT reachable ({problem}); is the collector running, "
            f"and is the port right (4317 for grpc, 4318 for http/protobuf)?",
        )
    if (
        endpoint.protocol == "http/protobuf"
        and endpoint.variable is not None
        and endpoint.variable != "OTEL_EXPORTER_OTLP_ENDPOINT"
        and urlsplit(endpoint.url).path in ("", "/")
    ):
        # The signal's own variable is the full URL: a collector answers 404 at its root.
        return Check(
            True,
            f"{where}: reachable, but {endpoint.variable} is used as it is, "
            f"with no path: did you mean "
            f"{shown_endpoint(endpoint.url).removesuffix('/')}/v1/{signal}?",
            warning=True,
        )
    return Check(True, f"{where}: reachable")


def _origin(endpoint: OtlpEndpoint) -> str:
    if endpoint.variable is None:
        return f" (no endpoint set: the default, {DEFAULT_ENDPOINTS[endpoint.protocol]})"
    return ""


def _check_cli_telemetry(environ: Mapping[str, str]) -> Check | None:
    """Warn when the environment would turn the Copilot CLI's own OpenTelemetry on.

    The CLI exports traces itself when COPILOT_OTEL_ENABLED is true, when
    COPILOT_OTEL_FILE_EXPORTER_PATH is set, or when OTEL_EXPORTER_OTLP_ENDPOINT reaches it;
    its traces use service.name=github-copilot, the bridge's default too, and are shaped
    differently (no turn spans, other trace boundaries), so one backend would show each task
    twice. What reaches the CLI is what is exported in the shell; doctor sees its own
    environment, the closest it can get to that.
    """
    copilot = sorted(
        name
        for name, value in environ.items()
        if name.startswith("COPILOT_OTEL_") and value.strip().lower() not in _FALSE
    )
    endpoint = bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())
    if not copilot and not endpoint:
        return None
    causes = [*copilot, "OTEL_EXPORTER_OTLP_ENDPOINT"] if endpoint else copilot
    named = _service_name(environ)
    as_what = (
        "under service.name=github-copilot, like the bridge's"
        if named in (None, DEFAULT_SERVICE_NAME)
        else f"under service.name=github-copilot (or {named}, if it takes OTEL_SERVICE_NAME "
        f"from the shell too)"
    )
    return Check(
        True,
        f"{' and '.join(causes)} set: a Copilot CLI started with this environment "
        f"exports its own traces too, {as_what}, so a backend gets two "
        f"differently shaped copies of each trace. Give the bridge its own name "
        f"on its command line (OTEL_SERVICE_NAME=otel-bridge otel-bridge run), "
        f"or give the endpoint to one of the two only (e.g. "
        f"OTEL_EXPORTER_OTLP_ENDPOINT=... otel-bridge run, not exported)",
        warning=True,
    )


def _service_name(environ: Mapping[str, str]) -> str | None:
    if environ.get("OTEL_SERVICE_NAME", "").strip():
        return environ["OTEL_SERVICE_NAME"].strip()
    for pair in environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, _, value = pair.partition("=")
        if key.strip() == "service.name" and value.strip():
            return value.strip()
    return None


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{max(seconds, 0):.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"
