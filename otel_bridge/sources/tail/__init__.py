"""`run`'s source: follow the session logs as they grow (design.md beside this file)."""

from typing import TYPE_CHECKING

from ..._lazy import lazy_names

if TYPE_CHECKING:
    from ._downstream import Downstream, StreamLedger
    from ._manager import Tailer
    from ._options import TailOptions

__all__ = ["Downstream", "StreamLedger", "TailOptions", "Tailer"]

#: Where each name of the package is defined: imported on first use (`_lazy.py`).
_NAMES: dict[str, str] = {
    "Downstream": "._downstream",
    "StreamLedger": "._downstream",
    "TailOptions": "._options",
    "Tailer": "._manager",
}

__getattr__, __dir__ = lazy_names(__name__, _NAMES)
