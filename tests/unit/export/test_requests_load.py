"""Where the OTLP/HTTP exporters still send through requests (here: a SOCKS proxy, which the
standard library's transport does not speak), requests is loaded without charset_normalizer
(some 2.5 MB of a daemon's memory), and a body that declares no encoding still reads as UTF-8
(otel_bridge/export/_requests.py)."""

from __future__ import annotations

from tests.processes import run_probe

_PROBE = """
import sys
from otel_bridge.export._otlp import otlp_span_exporter
from otel_bridge.export._common import otlp_endpoint
environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
otlp_span_exporter(otlp_endpoint(environ, "traces"), environ)
loaded = sorted(m for m in ("charset_normalizer", "chardet") if m in sys.modules)
import requests
response = requests.models.Response()
response._content = "caf\\u00e9".encode()
print(loaded, requests.compat.chardet, response.text)
import charset_normalizer  # others in the process may still import it
print("importable", charset_normalizer.__name__)
"""


def test_the_otlp_http_exporter_loads_requests_without_a_character_detector() -> None:
    proxy = {"http_proxy": "socks5h://127.0.0.1:9", "no_proxy": "", "NO_PROXY": ""}
    output = run_probe(_PROBE, proxy)  # also: no RequestsDependencyWarning
    first, second = output.splitlines()
    assert first == "[] None caf\u00e9"
    assert second == "importable charset_normalizer"
