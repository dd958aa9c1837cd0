"""The options `run` and `replay` share, by group (the commands' parsers are in `_parser`)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .. import _env as env
from ..decode._lines import DEFAULT_MAX_LINE_BYTES
from ..export import CONSOLE_FORMATS
from ..semconv import SEMCONV_MODES, SEMCONV_RELEASED
from ..sources import DEFAULT_MAX_LOG_BYTES
from ._common import CONTENT_ENV
from ._types import metric_labels, non_negative_float, path, positive_int, ratio, root_name

__all__ = [
    "Given",
    "background_wait",
    "export",
    "given",
    "limits",
    "metrics",
    "paths",
    "privacy",
    "user_id",
]


class Given(argparse.Action):
    """Stores the value, as argparse's store, and notes the option as given (`given`): its
    default is the same value as a flag given it, and what a flag can contradict is the flag
    given, not its default."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        noted: set[str] = getattr(namespace, "given_options", set())
        namespace.given_options = noted | {self.dest}


def given(args: argparse.Namespace, name: str) -> bool:
    """Whether the option `name` (its dest) was given on the command line (`Given`)."""
    return name in getattr(args, "given_options", ())


def paths(sub: argparse.ArgumentParser, what: str) -> None:
    sub.add_argument(
        "paths",
        nargs="*",
        type=path,
        metavar="PATH",
        help=f"an events.jsonl file, a session directory, or a session-state directory holding "
        f"many sessions; {what} (default: $COPILOT_HOME/session-state, COPILOT_HOME "
        "defaulting to ~/.copilot, as for run)",
    )


def export(group: Any, command: str) -> None:
    group.add_argument(
        "--traces-file",
        type=path,
        metavar="FILE",
        help="write spans as OTLP JSON Lines (one ExportTraceServiceRequest per line) to FILE, "
        + ("appending" if command == "run" else "overwriting it")
        + ", beside OTLP when an endpoint is set; with neither endpoint nor "
        "OTEL_TRACES_EXPORTER, the only output",
    )
    group.add_argument(
        "--console-format",
        choices=CONSOLE_FORMATS,
        default=None,
        help="print spans to the console as: summary (a line per finished task: how it ended, "
        "tools, tokens, duration, model), tree (the span tree), json (one span per line, "
        "OpenTelemetry's console format). Given, the console gets spans beside any other "
        "destination. Default: console only when no endpoint nor file is set, summary on a "
        "terminal, json otherwise",
    )
    group.add_argument(
        "--sample-ratio",
        type=ratio,
        default=1.0,
        metavar="R",
        help="export R (0 to 1) of the traces that went well; every trace with an error, an "
        "abort, a failed tool or a failed task is kept, and metrics count everything "
        "(default: 1)",
    )
    group.add_argument(
        "--export-timeout",
        type=non_negative_float,
        default=30.0,
        metavar="S",
        help="at exit (the end, Ctrl-C or SIGTERM), how long to keep trying to deliver queued "
        "spans (default: 30)",
    )
    _span_shape(group)


def _span_shape(group: Any) -> None:
    """What the spans are named and hold: the root's name, unknown events, GenAI names."""
    group.add_argument(
        "--root-name",
        type=root_name,
        metavar="TEMPLATE",
        help="name each task's root span from its facts, so that a trace list (Jaeger's) "
        "tells tasks apart: fields {agent} {mode} {outcome} {model} {repository} {branch} "
        "{client}, and {title} with content capture on; e.g. 'invoke_agent {agent} "
        "{repository} {mode} {outcome}'. Each field multiplies the operations a backend "
        "keeps (docs/viewers.md). Default: the GenAI name, invoke_agent {agent}",
    )
    group.add_argument(
        "--keep-unknown-events",
        action="store_true",
        help="put each event of a type the bridge does not know on its task's root span as a "
        "span event (id and size; its data too with content capture on); counted either way",
    )
    group.add_argument(
        "--semconv",
        choices=list(SEMCONV_MODES),
        default=SEMCONV_RELEASED,
        help="GenAI names: those of the semantic-conventions-genai repository (released), "
        "those of semantic-conventions 1.41.0 (previous: gen_ai.client.token.usage, "
        "gen_ai.client.operation.duration...), or both, for dashboards built on the previous "
        'ones (docs/metrics.md, "Convention version"; default: released)',
    )


def metrics(group: Any, command: str) -> None:
    group.add_argument(
        "--metrics-file",
        type=path,
        metavar="FILE",
        help="write metrics as OTLP JSON Lines (one ExportMetricsServiceRequest per line) to "
        + (
            "FILE, appending"
            if command == "run"
            else "FILE (replay writes metrics only then, "
            "or with OTEL_METRICS_EXPORTER: their points carry the time of the replay)"
        ),
    )
    group.add_argument(
        "--metric-labels",
        type=metric_labels,
        default=(),
        metavar="LIST",
        help="also label the metrics that carry the repository (tokens, latency, cost, code "
        "changes, tasks) by these, comma-separated: branch, host (the repository's), "
        "provider, client (github/cli, sdk). Each multiplies the series (docs/metrics.md); "
        "paths, commits and session ids are never labels (default: none)",
    )


def privacy(group: Any) -> None:
    group.add_argument(
        "--capture-content",
        action="store_true",
        help="put the texts (prompts, answers, tool arguments and results, error messages) on "
        f"spans; also on with {CONTENT_ENV}=true. Off by default: logs hold prompts, code and "
        "secrets (docs/privacy.md)",
    )
    group.add_argument(
        "--content-max-chars",
        action=Given,
        type=positive_int,
        default=8192,
        metavar="N",
        help="with content capture on, cut each text attribute to N characters (default: 8192)",
    )
    group.add_argument(
        "--content-hash-salt",
        metavar="SALT",
        default=os.environ.get(env.OTEL_BRIDGE_CONTENT_HASH_SALT),
        help="also put a salted SHA-256 of prompts, answers and tool arguments and results on "
        "spans, content on or off (default: $OTEL_BRIDGE_CONTENT_HASH_SALT; none)",
    )
    group.add_argument(
        "--scrub-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="also redact what this regular expression matches; repeatable (secrets of common "
        "kinds are always redacted)",
    )
    _filters(group)


def _filters(group: Any) -> None:
    """What leaves the bridge at all: attributes, paths, the user's id."""
    group.add_argument(
        "--deny-attribute",
        action="append",
        default=[],
        metavar="KEY",
        help="never send this span attribute; repeatable",
    )
    group.add_argument(
        "--allow-attribute",
        action="append",
        default=None,
        metavar="KEY",
        help="send only these span attributes; repeatable",
    )
    group.add_argument(
        "--paths",
        dest="path_mode",
        choices=["keep", "basename", "hash"],
        default="keep",
        help="file paths in text: keep them, keep only their last part, or replace them by a "
        "hash (default: keep)",
    )
    group.add_argument(
        "--user",
        type=user_id,
        default=None,
        metavar="os|ID",
        help="put enduser.id on the resource of every span and metric: the name of the OS user "
        "running the bridge (os) or the ID given. Off by default: it is personal data "
        "(docs/attribution.md)",
    )


def limits(group: Any, command: str) -> None:
    group.add_argument(
        "--max-line-bytes",
        type=positive_int,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"skip (and count) log lines longer than N bytes (default: {DEFAULT_MAX_LINE_BYTES})",
    )
    group.add_argument(
        "--max-log-bytes",
        type=positive_int,
        default=DEFAULT_MAX_LOG_BYTES,
        metavar="N",
        help="do not read a log larger than N bytes, far above what the CLI writes: a sparse "
        "or runaway file that would never be read to its end (said once"
        + ("; counted in otel_bridge.files.skipped" if command == "run" else "")
        + f") (default: {DEFAULT_MAX_LOG_BYTES})",
    )


def background_wait(group: Any) -> None:
    group.add_argument(
        "--background-wait",
        type=non_negative_float,
        default=900.0,
        metavar="S",
        help="how long a task whose agent loop has stopped waits for the work it left running "
        "(background shells and sub-agents) to report, counted from its last event; past "
        "that it ends at its last event (default: 900; give run and replay the same value "
        "to get the same spans)",
    )


def user_id(text: str) -> str:
    """--user: `os`, or an ID that says something: an empty one would put no enduser.id on
    the resource while the flag says to put one."""
    value = text.strip()
    if not value or not value.isprintable():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not os or an ID (printable characters, not only spaces)"
        )
    return value
