"""Between the sources and the pipeline: one stream feeder (events -> assembler -> emit -> counts,
safe places, delivered spans, eviction) for replay, run's tailer, LiveBridge and the --jobs
workers alike.

The worker processes of a parallel replay (`._parallel`) load on first use (`_lazy.py`): they
import multiprocessing, which `run` never needs (some 0.5 MB of a daemon's memory)."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ._feeder import Emit, StreamFeeder
from ._jobs import WORKERS_FROM_BYTES, default_jobs, usable_cores
from ._ledger import Ledger

if TYPE_CHECKING:
    from ._parallel import Prepare, PreparedSink, Workers, replay_logs_parallel

__all__ = [
    "WORKERS_FROM_BYTES",
    "Emit",
    "Ledger",
    "Prepare",
    "PreparedSink",
    "StreamFeeder",
    "Workers",
    "default_jobs",
    "replay_logs_parallel",
    "usable_cores",
]

#: The names of the workers' module, imported on first use (`_lazy.py`).
_NAMES = dict.fromkeys(("Prepare", "PreparedSink", "Workers", "replay_logs_parallel"), "._parallel")

__getattr__, __dir__ = lazy_names(__name__, _NAMES)
