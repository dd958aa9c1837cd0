"""A package whose names load on first use (otel_bridge/_lazy.py) still lists every name it
exports, those it loads with it included, and loads a lazy one only when it is asked for."""

from __future__ import annotations

from tests.processes import run_probe

_PROBE = """
import sys
import otel_bridge.feed as feed
import otel_bridge.sources as sources
before = "otel_bridge.feed._parallel" in sys.modules
names = dir(feed)
print(before, "otel_bridge.feed._parallel" in sys.modules)
print(sorted(set(feed.__all__) - set(names)), sorted(set(sources.__all__) - set(dir(sources))))
print(feed.Workers.__module__, "otel_bridge.feed._parallel" in sys.modules)
"""


def test_a_lazy_package_lists_all_its_names_and_loads_a_lazy_one_when_asked() -> None:
    output = run_probe(_PROBE)  # a fresh process: what is loaded is the point
    loaded, missing, asked = output.splitlines()
    assert loaded == "False False"  # neither importing feed nor dir() loads the workers
    assert missing == "[] []"  # every exported name is listed, eager (StreamFeeder...) or lazy
    assert asked == "otel_bridge.feed._parallel True"
