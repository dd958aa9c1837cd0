"""What the commands share: flags turned into pipeline options, and the summaries they log."""

from __future__ import annotations

import argparse
import getpass
import re
from collections.abc import Mapping

from .._exceptions import ConfigError
from .._lines import MAX_UNKNOWN_TYPES, ReadStats
from .._pipeline import PipelineConfig
from .._words import plural
from ..assembler import AssemblerConfig
from ..export import MetricsOptions, ResourceOptions, SpanSink
from ..export._sink import DEFAULT_QUEUE_SPANS
from ..processors import ScrubberConfig
from ..semconv import SEMCONV_RELEASED
from ..sources._discovery import read_client_name, read_session_name

__all__ = [
    "CONTENT_ENV",
    "destinations",
    "pipeline_config",
    "sampled",
    "summarize_reading",
]

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
