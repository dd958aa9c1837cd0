"""The application behind the commands: the daemon of `run` and the orchestration of
`replay`, as classes and functions a test runs in its own process.

The command line (`otel_bridge.cli`) parses flags and the configuration file into settings
(`cli._settings`) and hands them here; this package reads no flags. It does read the
environment it is given (the OTEL_* variables, as the SDK defines them), never `os.environ`
itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._checkpointing import Checkpointing
    from ._daemon import PROBLEM_COUNTERS, Daemon, DaemonOptions, register_gauges
    from ._locations import state_dir
    from ._probes import LoopLiveness, Readiness
    from ._replay import ReplayOptions, in_shard, plan_jobs, replay, signum_of, verdict
    from ._signals import Interrupted, SigtermStops
    from ._status import CatchUp, StatusLine
    from ._summary import destinations, sampled, summarize_reading

__all__ = [
    "PROBLEM_COUNTERS",
    "CatchUp",
    "Checkpointing",
    "Daemon",
    "DaemonOptions",
    "Interrupted",
    "LoopLiveness",
    "Readiness",
    "ReplayOptions",
    "SigtermStops",
    "StatusLine",
    "destinations",
    "in_shard",
    "plan_jobs",
    "register_gauges",
    "replay",
    "sampled",
    "signum_of",
    "state_dir",
    "summarize_reading",
    "verdict",
]

#: Where each name of the package is defined: imported on first use (`_lazy.py`).
_NAMES: dict[str, str] = {
    "CatchUp": "._status",
    "Checkpointing": "._checkpointing",
    "Daemon": "._daemon",
    "DaemonOptions": "._daemon",
    "Interrupted": "._signals",
    "LoopLiveness": "._probes",
    "PROBLEM_COUNTERS": "._daemon",
    "Readiness": "._probes",
    "ReplayOptions": "._replay",
    "SigtermStops": "._signals",
    "StatusLine": "._status",
    "destinations": "._summary",
    "in_shard": "._replay",
    "plan_jobs": "._replay",
    "register_gauges": "._daemon",
    "replay": "._replay",
    "sampled": "._summary",
    "signum_of": "._replay",
    "state_dir": "._locations",
    "summarize_reading": "._summary",
    "verdict": "._replay",
}

__getattr__, __dir__ = lazy_names(__name__, _NAMES)
