"""Between the sources and the pipeline: one stream feeder (events -> assembler -> emit -> counts,
safe places, delivered spans, eviction) for replay, run's tailer, LiveBridge and the --jobs
workers alike."""

from ._feeder import Emit, StreamFeeder
from ._ledger import Ledger

__all__ = ["Emit", "Ledger", "StreamFeeder"]
