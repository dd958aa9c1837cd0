"""`run`'s source: follow the session logs as they grow (design.md beside this file)."""

from ._downstream import Downstream, StreamLedger
from ._manager import Tailer
from ._options import TailOptions

__all__ = ["Downstream", "StreamLedger", "TailOptions", "Tailer"]
