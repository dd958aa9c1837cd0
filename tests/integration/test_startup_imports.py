"""A command imports what it uses: `replay` to a traces file (or to nothing) never loads the
daemon, the Prometheus client and its HTTP server, the SDK's metrics or watchdog, which cost
some 50 ms of its start (otel_bridge/_lazy.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import paths
from tests.processes import bridge_env

#: Modules only `run`, doctor or metrics need.
NOT_FOR_REPLAY = (
    "otel_bridge.app._daemon",
    "otel_bridge.sources.tail._manager",
    "otel_bridge.export._http",
    "prometheus_client",
    "opentelemetry.sdk.metrics",
    "watchdog",
)

_PROBE = """
import sys
from otel_bridge.cli import main
status = main(sys.argv[1:])
print(",".join(m for m in {modules!r} if m in sys.modules))
sys.exit(status)
"""


@pytest.mark.parametrize("destination", ["none", "traces-file"])
def test_replay_loads_none_of_what_only_run_and_metrics_need(
    destination: str, tmp_path: Path
) -> None:
    log = paths.FIXTURES / "run1_cli_prompt_basic"
    argv = ["replay", str(log)]
    if destination == "traces-file":
        argv += ["--traces-file", str(tmp_path / "traces.jsonl")]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(modules=NOT_FOR_REPLAY), *argv],
        capture_output=True,
        text=True,
        env=bridge_env({"OTEL_TRACES_EXPORTER": "none", "PYTHONPATH": str(paths.REPO)}),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"replay imported {done.stdout.strip()}"
    if destination == "traces-file":
        assert (tmp_path / "traces.jsonl").stat().st_size > 0
