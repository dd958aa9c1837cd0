"""What the commands share: flags turned into pipeline options, and the summaries they log."""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import re
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._exceptions import ConfigError
from .._lines import MAX_UNKNOWN_TYPES, ReadStats
from .._pipeline import PipelineConfig
from .._words import plural
from ..assembler import AssemblerConfig
from ..export import MetricsOptions, ResourceOptions, SpanSink
from ..export._sink import DEFAULT_QUEUE_SPANS
from ..processors import ScrubberConfig
from ..semconv import SEMCONV_RELEASED
from ..sources._discovery import (
    EVENTS_FILE,
    default_session_state,
    read_client_name,
    read_session_name,
)

__all__ = [
    "CONTENT_ENV",
    "Interrupted",
    "SigtermStops",
    "destinations",
    "log_paths",
    "pipeline_config",
    "sampled",
    "session_state_roots",
    "summarize_reading",
]

logger = logging.getLogger("otel_bridge")

#: The GenAI conventions' switch for content capture, read beside --capture-content.
CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def pipeline_config(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    *,
    traces_file_mode: str,
    metrics: MetricsOptions,
    collector_check: str,
    block_when_full: bool = False,
    queue_spans: int = DEFAULT_QUEUE_SPANS,
    export_linger_seconds: float = 0.0,
) -> PipelineConfig:
    """The options replay and run share, from their flags; the rest is the command's.

    Raises:
        ConfigError: a --scrub-pattern that is not a regular expression.
    """
    return PipelineConfig(
        assembler=_assembler_config(args, environ),
        scrubber=_scrubber_config(args),
        sample_ratio=args.sample_ratio,
        traces_file=args.traces_file,
        traces_file_mode=traces_file_mode,
        console_format=args.console_format,
        block_when_full=block_when_full,
        metrics=metrics,
        collector_check=collector_check,
        queue_spans=queue_spans,
        export_linger_seconds=export_linger_seconds,
        resource=_resource_options(args),
    )


def _resource_options(args: argparse.Namespace) -> ResourceOptions:
    """`--user` (the OS user for `os`), and what sets this bridge's service.instance.id apart
    from others on the machine: its command, state directory and shard."""
    user = getattr(args, "user", None)
    if user == "os":
        try:
            user = getpass.getuser()
        except (KeyError, OSError) as exc:  # no name for this uid (a container's)
            raise ConfigError(f"--user os: the OS user has no name here ({exc})") from exc
    key = "\x00".join(str(getattr(args, name, None)) for name in ("command", "state_dir", "shard"))
    return ResourceOptions(enduser_id=user or None, instance_key=key)


def _assembler_config(args: argparse.Namespace, environ: Mapping[str, str]) -> AssemblerConfig:
    from_env = environ.get(CONTENT_ENV, "").strip().lower() == "true"
    return AssemblerConfig(
        capture_content=args.capture_content or from_env,
        hash_salt=args.content_hash_salt,
        background_wait_seconds=args.background_wait,
        keep_unknown_events=args.keep_unknown_events,
        client_name_of=read_client_name,
        session_name_of=read_session_name,
        metric_labels=tuple(getattr(args, "metric_labels", None) or ()),
        semconv=getattr(args, "semconv", SEMCONV_RELEASED),
        root_name=getattr(args, "root_name", None),
    )


def _scrubber_config(args: argparse.Namespace) -> ScrubberConfig:
    try:
        return ScrubberConfig(
            extra_patterns=tuple(args.scrub_pattern),
            deny_attributes=frozenset(args.deny_attribute),
            allow_attributes=frozenset(args.allow_attribute) if args.allow_attribute else None,
            paths=args.path_mode,
            content_max_chars=args.content_max_chars,
        )
    except re.error as exc:
        raise ConfigError(f"--scrub-pattern: not a regular expression: {exc}") from exc
    except ValueError as exc:  # an attribute both allowed and denied
        raise ConfigError(f"--allow-attribute, --deny-attribute: {exc}") from exc


def summarize_reading(stats: ReadStats) -> str:
    """'120 events, 2 malformed lines skipped, ...': what reading the logs gave."""
    parts = [plural(stats.events, "event")]
    if stats.malformed:
        parts.append(f"{plural(stats.malformed, 'malformed line')} skipped")
    if stats.oversized:
        parts.append(f"{plural(stats.oversized, 'oversized line')} skipped")
    if stats.too_deep:
        parts.append(f"{plural(stats.too_deep, 'too deeply nested line')} skipped")
    if stats.torn:
        parts.append(f"{plural(stats.torn, 'torn line')} repaired")
    if stats.invalid_utf8:
        parts.append(f"{plural(stats.invalid_utf8, 'line')} with invalid UTF-8")
    if stats.unknown_types:
        # past the cap the types are not all named: how many there were is not known
        distinct = len(stats.unknown_types)
        types = (
            f"more than {MAX_UNKNOWN_TYPES} unknown types"
            if stats.unknown_types_capped
            else plural(distinct, "unknown type")
        )
        parts.append(f"{plural(sum(stats.unknown_types.values()), 'event')} of {types}")
    return ", ".join(parts)


def destinations(sink: SpanSink) -> str:
    """ " (to each of 2 destinations; otlp ...: 6, file ...: 6)" when spans go to several, so
    that a destination that fell behind shows; else nothing."""
    if sink.destinations < 2:
        return ""
    return (
        f" (to each of {sink.destinations} destinations; "
        + ", ".join(f"{label}: {count}" for label, count in sink.stats.by_exporter.items())
        + ")"
    )


def sampled(sink: SpanSink) -> str:
    """ ", N spans sampled out" when sampling is on, else nothing."""
    dropped = sink.sampler.dropped_spans
    return f", {plural(dropped, 'span')} sampled out" if sink.sampler.ratio < 1 else ""


def session_state_roots(
    given: Sequence[Path] | None, environ: Mapping[str, str], *, say: bool = True
) -> list[tuple[Path, Path]]:
    """The session-state directories to watch, each with what was given for it: the
    `--session-state` values, else $COPILOT_HOME/session-state.

    A directory given that holds no session but a `session-state` directory is a
    COPILOT_HOME given for its session-state directory (`--session-state ~/.copilot`):
    that one is watched, and said once (`say`), as `replay ~/.copilot` reads it. Watched as
    given, it would have followed no log, and taken the CLI's other directories (logs,
    pkg...) for sessions that have not written their log yet.
    """
    roots = []
    for root in given or [default_session_state(dict(environ))]:
        inner = root / "session-state"
        if inner.is_dir() and not _holds_sessions(root):
            if say:
                logger.info(
                    "%s holds no session log but a session-state directory: watching %s",
                    root,
                    inner,
                )
            roots.append((inner, root))
        else:
            roots.append((root, root))
    return roots


def log_paths(given: Sequence[Path], environ: Mapping[str, str]) -> list[Path]:
    """The PATHs of replay and stats: those given, else $COPILOT_HOME/session-state, as run
    watches.

    Raises:
        ConfigError: none given, and that directory does not exist.
    """
    if given:
        return list(given)
    default = default_session_state(dict(environ))
    if not default.is_dir():
        raise ConfigError(
            f"{default}: no such directory (the default PATH, $COPILOT_HOME/session-state, "
            "COPILOT_HOME defaulting to ~/.copilot): has the Copilot CLI run as this user? "
            "Give the PATH of a log, a session or a session-state directory"
        )
    return [default]


def _holds_sessions(root: Path) -> bool:
    """Whether some directory in `root` holds a session log."""
    try:
        return any((entry / EVENTS_FILE).is_file() for entry in root.iterdir())
    except OSError:
        return False


class Interrupted(KeyboardInterrupt):
    """A stop asked for by a signal (Ctrl-C's SIGINT, or SIGTERM): the exit status is
    128 + `signum`, as a shell reports a process the signal ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class SigtermStops:
    """Within the block, SIGTERM stops the command as Ctrl-C does (`Interrupted`, raised in
    the main thread); the handler there before is put back after.

    A worker process forked meanwhile inherits the handler (fork copies the interpreter's
    handler table): there it ends the worker as the default disposition does, silently,
    since a worker is ended by SIGTERM (`feed._parallel`) and its parent tells the story.
    """

    def __init__(self) -> None:
        self.received = False
        self.said = False  # the command said it is stopping
        self._previous: Any = None

    def __enter__(self) -> SigtermStops:
        owner = os.getpid()

        def interrupt(signum: int, _frame: object) -> None:
            if os.getpid() != owner:  # a forked worker: die of it, as by default
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            self.received = True
            raise Interrupted(signum)

        self._previous = signal.signal(signal.SIGTERM, interrupt)
        return self

    def __exit__(self, *_: object) -> None:
        signal.signal(signal.SIGTERM, self._previous)
