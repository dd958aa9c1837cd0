"""`otel-bridge stats` and `otel-bridge doctor`: look at logs and the set-up, export nothing."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from .._progress import printable
from .._version import __version__
from .._words import plural
from ..app import state_dir
from ..app._doctor import Check, RunSetup, diagnose
from ..app._stats import StatsAssembler, StatsCollector
from ..app._stats_table import render_context, render_table, table_width
from ..export import metric_exporter_names
from ..feed import StreamFeeder
from ..sources import find_logs, replay_logs
from ._checks import prometheus_wanted
from ._common import log_paths, session_state_roots, summarize_reading

__all__ = ["doctor", "stats"]

logger = logging.getLogger("otel_bridge")


def stats(args: argparse.Namespace) -> int:
    """Print the table (or JSON) of what the sessions did; 1 when a log could not be read."""
    logs = find_logs(log_paths(args.paths, os.environ))
    collector = StatsCollector(paths=args.path_mode)
    assembler = StatsAssembler(collector)
    # the trouble of old sessions goes in the table's notes, not in a log line per task
    trouble_lines = logging.getLogger(_TROUBLE_LOGGER)
    quiet = _NotTrouble()
    trouble_lines.addFilter(quiet)
    try:
        summary = replay_logs(logs, StreamFeeder(assembler, lambda records: None))
    finally:
        trouble_lines.removeFilter(quiet)
    sessions = sorted(collector.sessions.values(), key=lambda s: (s.started or "", s.session))
    total = collector.total()
    if args.json:
        print(
            json.dumps(
                {
                    "sessions": [s.to_dict() for s in sessions],
                    "total": total.to_dict(),
                    "context": {m: c.to_dict() for m, c in sorted(collector.context.items())},
                },
                indent=2,
            )
        )
    else:
        width = table_width(os.environ, sys.stdout)
        print(render_table(sessions, total, width))
        context = render_context(collector.context, width)
        if context:
            print(f"\n{context}")
    logger.info("read %s: %s", plural(summary.files, "log"), summarize_reading(summary.read))
    return 1 if summary.failed or summary.not_logs else 0


#: Where the assembler says a task may be in trouble (`assembler._in_flight.raise_signal`).
_TROUBLE_LOGGER = "otel_bridge.assembler._in_flight"


class _NotTrouble(logging.Filter):
    """Drops the assembler's "task ... may be in trouble" warnings: `run` says each as it
    happens; `stats` reports old sessions, whose trouble its table's notes give
    (`_stats_table.trouble_notes`), and a log line per task pushed the table away."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "may be in trouble" not in str(record.msg)


def doctor(args: argparse.Namespace) -> int:
    """Print the checks; 1 when one failed (a warning alone is not a failure)."""
    pairs = session_state_roots(args.session_state, os.environ, say=False)
    serves = not args.no_prometheus and (
        prometheus_wanted(args)
        or "prometheus" in metric_exporter_names(os.environ, ("prometheus",))
    )
    setup = RunSetup(
        state_dir=None if args.no_checkpoints else state_dir(args.state_dir, os.environ),
        port=(args.prometheus_host, args.prometheus_port) if serves else None,
        aliases={root: given for root, given in pairs},
    )
    checks = diagnose([root for root, _ in pairs], os.environ, args.traces_file, run=setup)
    problem = getattr(args, "config_problem", None)
    if problem is not None:  # the rest is checked with the flags alone
        checks.insert(0, Check(False, f"config file {printable(problem)}: run would not start"))
    print(f"otel-bridge {__version__}")
    for check in checks:
        mark = "!!" if not check.ok else "warn" if check.warning else "ok"
        print(f"  [{mark}] {check.message}")
    return 0 if all(check.ok for check in checks) else 1
