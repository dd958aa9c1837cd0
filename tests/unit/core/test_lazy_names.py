"""A package whose names load on first use (otel_bridge/_lazy.py) still lists every name it
exports, those it loads with it included, and loads a lazy one only when it is asked for."""

from __future__ import annotations

import subprocess
import sys

from tests import paths
from tests.processes import bridge_env

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
    done = subprocess.run(  # a fresh process: what is loaded is the point
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        env=bridge_env({"PYTHONPATH": str(paths.REPO)}),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded, missing, asked = done.stdout.splitlines()
    assert loaded == "False False"  # neither importing feed nor dir() loads the workers
    assert missing == "[] []"  # every exported name is listed, eager (StreamFeeder...) or lazy
    assert asked == "otel_bridge.feed._parallel True"
