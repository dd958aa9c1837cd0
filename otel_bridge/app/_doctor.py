"""`otel-bridge doctor`: what `run` would watch and where its spans would go, checked for real.

Why: the first thing a new user needs to know is whether the bridge sees their sessions and can
reach their collector, before waiting for spans that never come; and, since the Copilot CLI
exports its own telemetry when the same variables reach it, whether they are about to get every
trace twice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import _env as env
from .._progress import printable
from .._words import plural
from ..export import (
    DEFAULT_SERVICE_NAME,
    NONE,
    TRACE_EXPORTERS,
    Looked,
    check_otlp,
    metric_exporter_names,
    sdk_disabled,
    trace_exporter_choices,
    trace_exporter_names,
)
from ..files._output_places import misplaced
from ..sources import not_a_session_state
from ._doctor_run import Check, check_port, check_state_dir, session_logs

__all__ = ["Check", "RunSetup", "diagnose"]

_WATCHED = "a session-state directory run watches"
#: What run says of an output inside a watched directory (`_output_places`), and does.
_REFUSES = (
    "run refuses to start (it writes nothing where the Copilot CLI keeps its sessions, "
    "which it reads back on resume): give it another"
)
_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class RunSetup:
    """What `run` would use besides its directories and exporters, when asked to check it.

    Attributes:
        state_dir: where it keeps checkpoints; None: none (--no-checkpoints).
        port: the host and port it serves /metrics, /healthz, /readyz on; None: none.
        aliases: a directory given as --session-state for each root watched in its stead
            (a COPILOT_HOME given for its session-state directory), to say so.
    """

    state_dir: Path | None = None
    port: tuple[str, int] | None = None
    aliases: Mapping[Path, Path] = field(default_factory=dict)


def diagnose(
    roots: Sequence[Path],
    environ: Mapping[str, str],
    traces_file: Path | None,
    timeout: float = 2.0,
    run: RunSetup | None = None,
) -> list[Check]:
    """Look at the session-state directories, what `run` needs (`run`, when given) and the
    exporter configuration. The messages are safe to print: a directory's or a variable's
    control characters come escaped."""
    return [
        Check(check.ok, printable(check.message), check.warning)
        for check in _diagnose(roots, environ, traces_file, timeout, run or RunSetup())
    ]


def _diagnose(
    roots: Sequence[Path],
    environ: Mapping[str, str],
    traces_file: Path | None,
    timeout: float,
    run: RunSetup,
) -> list[Check]:
    checks = []
    for root in roots:
        checks.extend(_check_root(root, run.aliases.get(root)))
    disabled = sdk_disabled(environ)
    running = None
    if run.state_dir is not None and not disabled:  # disabled: run keeps no checkpoints
        inside = misplaced(run.state_dir, roots, _WATCHED)
        if inside is not None:
            checks.append(Check(False, f"state directory {inside}: {_REFUSES} --state-dir"))
        else:
            state, running = check_state_dir(run.state_dir)
            checks.append(state)
    if run.port is not None:
        checks.append(check_port(*run.port, running))
    if disabled:
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
    exporters = _check_exporters(environ, traces_file, timeout)
    inside = None if traces_file is None else misplaced(traces_file, roots, _WATCHED)
    if inside is not None:  # in the stead of its "[ok] traces file" line
        exporters = [c for c in exporters if not c.message.startswith("traces file: ")]
        exporters.append(Check(False, f"traces file {inside}: {_REFUSES} --traces-file"))
    checks.extend(exporters)
    duplicate = _check_cli_telemetry(environ)
    if duplicate is not None:
        checks.append(duplicate)
    return checks


def _check_root(root: Path, given: Path | None = None) -> list[Check]:
    checks = _check_one_root(root)
    if given is not None and given != root:
        said = (
            f"{given} holds no session but a session-state directory: run watches {root}; "
            + checks[0].message.removeprefix(f"{root}: ")
        )
        checks[0] = Check(checks[0].ok, said, checks[0].warning)
    return checks


def _check_one_root(root: Path) -> list[Check]:
    mistaken = not_a_session_state(root)  # run refuses it with these words too
    if mistaken is not None:
        return [Check(False, mistaken)]
    if not root.is_dir():
        return [
            Check(
                False,
                f"{root}: does not exist (yet). Has the Copilot CLI run as this user? "
                f"Set COPILOT_HOME or pass --session-state DIR",
            )
        ]
    logs, unread = session_logs(root)
    if not logs:
        found = Check(True, f"{root}: exists, no session logs yet")
    else:
        age = _age(time.time() - max(_mtime(log.path) for log in logs))
        count = plural(len(logs), "session log")
        found = Check(True, f"{root}: {count}, the newest written {age} ago")
    return [found] if unread is None else [found, unread]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # gone since it was listed
        return 0.0


def _check_exporters(
    environ: Mapping[str, str], traces_file: Path | None, timeout: float
) -> list[Check]:
    """A finding per exporter OTEL_TRACES_EXPORTER names, each made by its row of the
    exporter table (the row `run` builds it from), then the metrics' OTLP endpoint."""
    names = trace_exporter_names(environ, traces_file is not None)
    checks: list[Check] = []
    if not [n for n in names if n != NONE] and traces_file is None:
        checks.append(Check(False, "no exporter: OTEL_TRACES_EXPORTER=none and no --traces-file"))
    looked = Looked(timeout)
    for name in names:
        row = TRACE_EXPORTERS.get(name)
        if row is not None:
            finding = row.check(environ, looked)
            checks.append(Check(finding.ok, finding.message))
        elif name != NONE:
            checks.append(
                Check(False, f"exporter {name!r} is not supported: use {trace_exporter_choices()}")
            )
    if traces_file is not None:
        checks.append(
            Check(
                True,
                f"traces file: {traces_file} (as well)" if names else f"traces file: {traces_file}",
            )
        )
    if _metrics_over_otlp(environ):
        finding = check_otlp(environ, "metrics", looked)
        metrics = Check(finding.ok, finding.message)
        said = {check.message.partition(": ")[2] for check in checks}
        if metrics.message and metrics.message.partition(": ")[2] not in said:
            checks.append(metrics)  # not what the traces' check said already
    return checks


def _metrics_over_otlp(environ: Mapping[str, str]) -> bool:
    """Whether `run` would send metrics over OTLP."""
    return "otlp" in metric_exporter_names(environ, ("prometheus",))


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
        if name.startswith(env.COPILOT_OTEL_PREFIX) and value.strip().lower() not in _FALSE
    )
    endpoint = bool(environ.get(env.OTEL_EXPORTER_OTLP_ENDPOINT, "").strip())
    if not copilot and not endpoint:
        return None
    causes = [*copilot, env.OTEL_EXPORTER_OTLP_ENDPOINT] if endpoint else copilot
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
    if environ.get(env.OTEL_SERVICE_NAME, "").strip():
        return environ[env.OTEL_SERVICE_NAME].strip()
    for pair in environ.get(env.OTEL_RESOURCE_ATTRIBUTES, "").split(","):
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
