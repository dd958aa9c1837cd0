"""requests, loaded without a character-detection library, for the OTLP/HTTP exporters.

Why: requests imports charset_normalizer when it is itself imported, only to guess the
encoding of a response body that declares none (`Response.apparent_encoding`). Its tables
take some 2.5 MB of resident memory, 6% of a daemon that follows a thousand sessions, and
the bridge never needs the guess: it sends protobuf, and reads a collector's answer only for
its status and a short error text. With neither chardet nor charset_normalizer importable,
requests takes such a body as UTF-8 (`apparent_encoding` in requests/models.py, "If no
character detection library is available, we'll fall back to a standard Python utf-8 str"),
and warns once at import that it found neither: that warning is the one silenced here.

Only requests' choice is affected: the two names are unblocked right after it is imported, so
that any other code of the process may still import them. When requests is already loaded
(an application that embeds LiveBridge, a test run), it is used as it is.
"""

from __future__ import annotations

import importlib
import sys
import warnings

__all__ = ["load_requests"]

_DETECTORS = ("chardet", "charset_normalizer")  # requests tries them in this order


def load_requests() -> None:
    """Import requests, without a character detector, unless it is loaded already. Called
    before the SDK's OTLP/HTTP modules are imported: they import requests at their top."""
    if "requests" in sys.modules:
        return
    blocked = [name for name in _DETECTORS if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import name` fail
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message="Unable to find acceptable character detection dependency"
            )
            importlib.import_module("requests")
    finally:
        for name in blocked:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]
