"""Flags that contradict each other, or cannot take effect with the others and the OTEL_*
variables: an option error (exit status 2) before anything starts, never a flag silently
ignored.

Where a flag and a variable disagree, the flag wins instead when it can (it was typed for this
run, the variable may come from a profile): `--console-format` adds the console exporter,
`--prometheus-port` the Prometheus reader, `--no-prometheus` removes it. What is refused
here is what no reading makes work: `--no-checkpoints --state-dir X`, `--no-prometheus
--prometheus-port N`, `--backfill --catch-up-minutes M`, `--metrics-interval` with nothing
exported at intervals, `--metric-labels` with no metrics, `--content-max-chars` without
content, an attribute both allowed and denied. (`--user ''` is refused by its type.) And an
output where the agents live: a state directory, traces or metrics file inside a directory the
command reads, or equal to a log (`_output_places`), whether a flag, the configuration file or
OTEL_BRIDGE_STATE_DIR gave it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from .. import _env as env
from .._env import content_capture
from ..app import state_dir
from ..export import metric_exporter_names, sdk_disabled
from ..files._output_places import misplaced
from ..sources import default_session_state
from ._common import CONTENT_ENV, session_state_roots
from ._options import given

__all__ = ["contradiction", "prometheus_wanted"]

#: Flags that only mean something on the port run serves.
_PORT_FLAGS = (
    ("prometheus_host", "--prometheus-host"),
    ("prometheus_port", "--prometheus-port"),
    ("unready_after", "--unready-after"),
    ("stuck_after", "--stuck-after"),
)


def prometheus_wanted(args: argparse.Namespace) -> bool:
    """A flag of the port was given: run serves it even when OTEL_METRICS_EXPORTER leaves
    prometheus out (the flag wins)."""
    return any(given(args, name) for name, _ in _PORT_FLAGS)


def contradiction(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    """The first problem with the flags of `args.command`, as argparse says one ("argument
    --state-dir: not allowed with argument --no-checkpoints ..."); None when they agree."""
    command = getattr(args, "command", None)
    if command in ("run", "doctor"):
        problem = _checkpoints(args) or _port(args)
        if problem or command == "doctor":
            return problem
        problem = _catch_up(args) or _interval(args, environ)
    elif command == "replay":
        problem = None
    else:
        return None
    return (
        problem
        or _metric_labels(args, environ)
        or _content(args, environ)
        or _attributes(args)
        or _outputs(args, environ)
    )


def _checkpoints(args: argparse.Namespace) -> str | None:
    if args.no_checkpoints and given(args, "state_dir"):
        return (
            "argument --state-dir: not allowed with argument --no-checkpoints (with no "
            "checkpoints there is no state directory)"
        )
    return None


def _port(args: argparse.Namespace) -> str | None:
    if not args.no_prometheus:
        return None
    for name, flag in _PORT_FLAGS:
        if given(args, name):
            return (
                f"argument {flag}: not allowed with argument --no-prometheus (which serves no "
                "port: no /metrics, /healthz nor /readyz)"
            )
    return None


def _catch_up(args: argparse.Namespace) -> str | None:
    if args.backfill and given(args, "catch_up_minutes"):
        return (
            "argument --catch-up-minutes: not allowed with argument --backfill (which reads "
            "every log from its beginning, however old)"
        )
    return None


def _metric_names(args: argparse.Namespace, environ: Mapping[str, str]) -> set[str]:
    """The metric readers the command would build (files apart)."""
    if args.command == "replay":  # no defaults, no port (docs/architecture.md)
        return set(metric_exporter_names(environ, ())) - {"none", "prometheus"}
    names = set(metric_exporter_names(environ, ("prometheus",))) - {"none"}
    if prometheus_wanted(args):
        names.add("prometheus")
    if args.no_prometheus:
        names.discard("prometheus")
    return names


def _interval(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    if not given(args, "metrics_interval"):
        return None
    if args.metrics_file is None and not _metric_names(args, environ) & {"otlp", "console"}:
        return (
            "argument --metrics-interval: no metrics are exported at intervals (Prometheus "
            "scrapes /metrics when it likes); it applies to OTLP metrics (an OTLP endpoint, or "
            "OTEL_METRICS_EXPORTER=otlp), console metrics and --metrics-file"
        )
    return None


def _metric_labels(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    if not args.metric_labels or args.metrics_file is not None:
        return None
    if _metric_names(args, environ):
        return None
    where = (
        "replay writes metrics only with --metrics-file or OTEL_METRICS_EXPORTER=otlp"
        if args.command == "replay"
        else "--no-prometheus, and no OTLP endpoint nor --metrics-file"
    )
    return f"argument --metric-labels: no metrics are exported ({where})"


def _content(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    content = args.capture_content or content_capture(environ)
    if given(args, "content_max_chars") and not content:
        return (
            "argument --content-max-chars: content capture is off, so there is no text to cut "
            f"(--capture-content or {CONTENT_ENV}=true turns it on)"
        )
    return None


def _attributes(args: argparse.Namespace) -> str | None:
    both = sorted(set(args.deny_attribute) & set(args.allow_attribute or ()))
    if both:
        return (
            f"argument --deny-attribute: {', '.join(map(repr, both))} is also given to "
            "--allow-attribute"
        )
    return None


def _outputs(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    """An output inside what the command reads: run's watched session-state directories,
    replay's PATHs (or the default it reads). Nothing has been created yet."""
    if args.command == "run":
        roots = [root for root, _ in session_state_roots(args.session_state, environ, say=False)]
        reads = "a session-state directory run watches"
    else:
        roots = list(args.paths) or [default_session_state(dict(environ))]
        reads = "a PATH replay reads"
    for origin, path in _output_paths(args, environ):
        why = misplaced(path, roots, reads)
        if why is not None:
            return (
                f"{origin}: {why}: the bridge writes nothing where the Copilot CLI keeps its "
                "sessions (it reads them back on resume); give a path outside it"
            )
    return None


def _output_paths(args: argparse.Namespace, environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """What the command would write, each with what gave it (a flag, a key of the file, a
    variable, the default)."""
    outputs = [
        (_origin(args, dest, flag), path)
        for dest, flag in (("traces_file", "--traces-file"), ("metrics_file", "--metrics-file"))
        if (path := getattr(args, dest, None)) is not None
    ]
    if args.command == "run" and not args.no_checkpoints and not sdk_disabled(environ):
        if args.state_dir is not None:
            origin = _origin(args, "state_dir", "--state-dir")
        elif environ.get(env.OTEL_BRIDGE_STATE_DIR):
            origin = env.OTEL_BRIDGE_STATE_DIR
        else:
            origin = "the default state directory ($XDG_STATE_HOME/otel-bridge)"
        outputs.insert(0, (origin, state_dir(args.state_dir, environ)))
    return outputs


def _origin(args: argparse.Namespace, dest: str, flag: str) -> str:
    """ "argument --flag", or the configuration file's key when the file gave it."""
    if dest in getattr(args, "config_options", ()):
        return f"{args.config}: key {flag[2:]!r}"
    return f"argument {flag}"
