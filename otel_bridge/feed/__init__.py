"""Between the sources and the pipeline: one stream feeder (events -> assembler -> emit -> counts,
safe places, delivered spans, eviction) for replay, run's tailer, LiveBridge and the --jobs
workers alike."""

from ._feeder import Emit, StreamFeeder
from ._ledger import Ledger
from ._parallel import (
    WORKERS_FROM_BYTES,
    Prepare,
    PreparedSink,
    Workers,
    default_jobs,
    replay_logs_parallel,
    usable_cores,
)

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
