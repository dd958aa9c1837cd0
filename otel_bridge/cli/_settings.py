"""Settings from three places, into the typed configs the application takes: flags, a
configuration file (`--config FILE`, read by `_config_file`), and the environment.

Flags win over the file (`apply_config`); the file wins over the bridge's own variables'
defaults (OTEL_BRIDGE_STATE_DIR, OTEL_BRIDGE_CONTENT_HASH_SALT); the OTEL_* variables apply
as the OpenTelemetry SDK reads them, whatever the file says (docs/configuration.md). Then
`run_settings` and `replay_settings` make the `PipelineConfig` and the `DaemonOptions` or
`ReplayOptions` (`otel_bridge.app`) of the command: the only place where flags become them.
"""

from __future__ import annotations

import argparse
import getpass
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import _env as env
from .._exceptions import ConfigError
from ..app import state_dir
from ..app._pipeline import PipelineConfig
from ..assembler import AssemblerConfig, TroubleOptions
from ..export import DEFAULT_QUEUE_SPANS, MetricsOptions, ResourceOptions, sdk_disabled
from ..processors import ScrubberConfig
from ..semconv import MODE_AUTOPILOT, MODE_INTERACTIVE, MODE_PLAN, SEMCONV_RELEASED
from ..sources import not_a_session_state, read_client_name, read_session_name
from ._checks import prometheus_wanted
from ._common import log_paths, session_state_roots
from ._config_file import COMMANDS, command_line_options, config_keys, load_config
from ._options import Given
from ._parser import command_parser

if TYPE_CHECKING:  # each command's, imported when it is set up: replay never loads the
    # daemon, and run never loads replay's worker processes (multiprocessing)
    from ..app import DaemonOptions, ReplayOptions

__all__ = [
    "RunSettings",
    "apply_config",
    "pipeline_config",
    "replay_settings",
    "run_settings",
]


#: run: spans wait this long for company before an export call (each costs about a millisecond of
#: CPU, whatever it carries): a few times fewer calls at an agent's pace, at a cost in live
#: latency well inside the 100 ms bench/README.md holds it to.
_RUN_LINGER_SECONDS = 0.05
#: replay: an exporter waits for a full batch, however long (the queue is filled far faster
#: than a live source fills it): the traces file of one replay is then the same, line for
#: line, whenever it is made, rather than cut where a slower log kept the exporter waiting.
_REPLAY_LINGER_SECONDS = None


@dataclass(frozen=True)
class RunSettings:
    """What `run` is built from."""

    pipeline: PipelineConfig
    daemon: DaemonOptions


@dataclass(frozen=True)
class ReplaySettings:
    """What `replay` is built from."""

    pipeline: PipelineConfig
    replay: ReplayOptions


def apply_config(
    parser: argparse.ArgumentParser,
    sub: argparse.ArgumentParser,
    args: argparse.Namespace,
    argv: Sequence[str],
) -> None:
    """Set in `args` what the file of `args.config` says, but for what a flag gave. An
    option the file sets counts as given (`_options.Given`): the checks of contradicting
    flags see it.

    Raises:
        ConfigFileError: as `load_config`.
    """
    # doctor checks run's set-up: it reads run's file, and takes the options it has
    reads = "run" if args.command == "doctor" else args.command
    others = set().union(
        *(config_keys(command_parser(parser, name)) for name in COMMANDS if name != reads)
    )
    values = load_config(args.config, reads, command_parser(parser, reads), others)
    has = {action.dest for action in sub._actions}
    values = {dest: value for dest, value in values.items() if dest in has}
    given = command_line_options(parser, sub, argv)
    tracked = {a.dest for a in sub._actions if isinstance(a, Given)}
    for dest, value in values.items():
        if dest in given:
            continue
        setattr(args, dest, value)
        # what the file gave, for a problem to name the file's key rather than a flag
        args.config_options = getattr(args, "config_options", set()) | {dest}
        if dest in tracked:
            args.given_options = getattr(args, "given_options", set()) | {dest}


def run_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> RunSettings:
    """run's flags (and file) and the environment, as the daemon takes them.

    Raises:
        ConfigError: as `pipeline_config`, or a --session-state that is a log or one
            session's directory (`sources.not_a_session_state`).
    """
    daemon = daemon_options(args, environ)  # first: it says which directories it watches
    return RunSettings(run_pipeline_config(args, environ), daemon)


def replay_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> ReplaySettings:
    """replay's flags (and file) and the environment, as the replay takes them.

    Raises:
        ConfigError: as `pipeline_config`, or no PATH given and no default directory.
    """
    replay = replay_options(args, environ)  # first: no PATH to read is the first error
    return ReplaySettings(replay_pipeline_config(args, environ), replay)


def run_pipeline_config(args: argparse.Namespace, environ: Mapping[str, str]) -> PipelineConfig:
    """run's pipeline: spans appended to --traces-file, Prometheus by default, a refusing
    collector a warning (spans wait in the queue), exports lingering for company."""
    return pipeline_config(
        args,
        environ,
        traces_file_mode="a",
        metrics=MetricsOptions(
            default_exporters=("prometheus",),
            prometheus_host=args.prometheus_host,
            prometheus_port=None if args.no_prometheus else args.prometheus_port,
            probes=True,  # /healthz and /readyz whatever OTEL_METRICS_EXPORTER says
            metrics_file=args.metrics_file,
            file_mode="a",
            export_interval_millis=int(args.metrics_interval * 1000),
            semconv_mode=args.semconv,
            # a flag of the port serves it whatever OTEL_METRICS_EXPORTER says
            always=("prometheus",) if prometheus_wanted(args) else (),
        ),
        # A bad endpoint is an error (exit 2) before anything starts; one that refuses is a
        # warning: spans wait in the queue until it accepts them.
        collector_check="warn",
        queue_spans=args.queue_size,
        export_linger_seconds=_RUN_LINGER_SECONDS,
    )


def daemon_options(args: argparse.Namespace, environ: Mapping[str, str]) -> DaemonOptions:
    """run's flags for the daemon: what it watches, where its checkpoints go, its timings."""
    from ..app import DaemonOptions
    from ..sources import TailOptions

    roots = [root for root, _ in session_state_roots(args.session_state, environ)]
    for root in roots:  # a log or a session's directory: say what to pass instead
        mistaken = not_a_session_state(root)
        if mistaken is not None:
            raise ConfigError(mistaken)
    no_state = args.no_checkpoints or sdk_disabled(environ)
    return DaemonOptions(
        roots=tuple(roots),
        state_dir=None if no_state else state_dir(args.state_dir, environ),
        tail=TailOptions(
            backfill=args.backfill,
            catch_up_seconds=args.catch_up_minutes * 60,
            idle_timeout_seconds=args.idle_timeout,
            person_timeout_seconds=args.person_timeout,
            rescan_seconds=args.rescan_interval,
            max_line_bytes=args.max_line_bytes,
            shard=args.shard,
            max_log_bytes=args.max_log_bytes,
        ),
        queue_size=args.queue_size,
        unready_after=args.unready_after,
        stuck_after=args.stuck_after,
        poll_interval=args.poll_interval,
        status_interval=args.status_interval,
        export_timeout=args.export_timeout,
        progress=False if args.no_progress else None,
    )


def replay_options(args: argparse.Namespace, environ: Mapping[str, str]) -> ReplayOptions:
    """replay's flags for the replay: its logs, workers, shard and limits."""
    from ..app import ReplayOptions

    return ReplayOptions(
        paths=tuple(log_paths(args.paths, environ)),
        jobs=args.jobs,
        shard=args.shard,
        export_timeout=args.export_timeout,
        max_line_bytes=args.max_line_bytes,
        max_log_bytes=args.max_log_bytes,
        progress=False if args.no_progress else None,
        traces_file=args.traces_file is not None,
    )


def replay_pipeline_config(args: argparse.Namespace, environ: Mapping[str, str]) -> PipelineConfig:
    """replay's pipeline: --traces-file written afresh, metrics only where asked, a refusing
    collector an error before anything is written, and a full queue waited on."""
    return pipeline_config(
        args,
        environ,
        traces_file_mode="w",
        # Metrics only where asked: their points carry the current time, not the logs'
        # (docs/architecture.md, "Metrics and old logs").
        metrics=MetricsOptions(
            metrics_file=args.metrics_file,
            file_mode="w",
            prometheus_port=None,
            semconv_mode=args.semconv,
        ),
        # A collector that is not running is one clear line now, before --traces-file is
        # truncated, not a minute of retries and then every span failed.
        collector_check="fail",
        block_when_full=True,
        # Batches of 512 spans rather than of what each log gave: a batch written costs the
        # exporter's thread a wake-up and a write, some 0.1 ms, more than its spans' share.
        export_linger_seconds=_REPLAY_LINGER_SECONDS,
    )


def pipeline_config(
    args: argparse.Namespace,
    environ: Mapping[str, str],
    *,
    traces_file_mode: str,
    metrics: MetricsOptions,
    collector_check: str,
    block_when_full: bool = False,
    queue_spans: int = DEFAULT_QUEUE_SPANS,
    export_linger_seconds: float | None = 0.0,
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
    from_env = env.content_capture(environ)
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
        parent=_job_parent(environ),
        trouble=_trouble(args),
    )


def _trouble(args: argparse.Namespace) -> TroubleOptions:
    """The thresholds of the signals of a task in trouble: run's flags (replay has none and
    keeps the defaults)."""
    if getattr(args, "trouble_turns", None) is None:
        return TroubleOptions()
    return TroubleOptions(
        repeated_calls=args.trouble_repeated_calls,
        tool_failures=args.trouble_tool_failures,
        turns=args.trouble_turns,
        compactions=args.trouble_compactions,
        stalled_seconds=args.trouble_stalled_seconds,
        long_task_seconds=(
            (MODE_INTERACTIVE, args.trouble_task_minutes * 60),
            (MODE_PLAN, args.trouble_task_minutes * 60),
            (MODE_AUTOPILOT, args.trouble_autopilot_minutes * 60),
        ),
    )


def _job_parent(environ: Mapping[str, str]) -> tuple[int, int] | None:
    """The span every trace hangs under: TRACEPARENT's, as a CI job that traces itself sets
    it for the processes of its steps (the OpenTelemetry specification's "Environment
    Variables as Context Propagation Carriers"); None, each task is a trace of its own."""
    value = environ.get(env.TRACEPARENT, "").strip()
    if not value:
        return None
    from ..app._live import parent_from_traceparent

    try:
        return parent_from_traceparent(value)
    except ConfigError as exc:
        raise ConfigError(f"TRACEPARENT: {exc} (unset it for a trace per task)") from exc


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
