"""The golden dump: every fixture, under the usual configurations, read by replay, by run's
tailer (with and without a restart) and by replay --jobs, gives the spans and metrics whose
digests are in tests/golden/digests.json (scripts/golden_dump.py says what is dumped)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests import paths

REPO = paths.REPO
SCRIPT = REPO / "scripts" / "golden_dump.py"
DIGESTS = REPO / "tests" / "golden" / "digests.json"


def test_every_fixture_gives_the_stored_spans_and_metrics() -> None:
    stored = json.loads(DIGESTS.read_text())
    # Every fixture under every path: a fixture added later is dumped too.
    fixtures = {p.parent.name for p in (REPO / "tests" / "fixtures").glob("*/events.jsonl")}
    assert {key.split("|")[0] for key in stored} == fixtures | {"*"}
    assert {key.split("|")[2] for key in stored} == {"replay", "tail", "restart", "jobs"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
    )
    assert done.returncode == 0, (
        "the spans or metrics of these (fixture|configuration|path) changed:\n"
        f"{done.stdout}{done.stderr[-2000:]}\n"
        "See one with `python scripts/golden_dump.py --show FIXTURE CONFIG PATH` (against the "
        "code before the change, to compare). If the change is meant, regenerate the digests "
        "with `python scripts/golden_dump.py --update` and say why in the commit."
    )
