"""Package names that load with their modules on first use (PEP 562), not with the package.

Why: a command should pay, at start-up, for the parts it uses. `replay` to a traces file
never serves a port nor follows a directory, yet `import otel_bridge.export` used to load the
Prometheus client, the HTTP server and the SDK's metrics, and `otel_bridge.sources` watchdog:
some 50 ms of a replay's wall time, a tenth of it on a thousand sessions. A package lists its
names in a table, name -> module; `from package import name` then imports only that module
(and what it imports). The package also imports the names under `TYPE_CHECKING`, so that
type checkers and import contracts see the same imports as before.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose `names` (name -> relative module)
    are imported when first asked for, then kept as plain attributes of the package."""

    def getattr_(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:  # the package's names, not the helpers it imports for this
        module = sys.modules[package]
        private = (name for name in vars(module) if name.startswith("_"))
        # a package may load some names with it: those its __all__ lists beside the lazy ones
        return sorted({*private, *names, *getattr(module, "__all__", ())})

    return getattr_, dir_
