"""Record tests/fixtures/compaction_manual: a real context compaction by the Copilot CLI.

The interactive CLI (in tmux, as tests/e2e/copilot.py's `Tui` runs it) answers one prompt from
the fake model server, then the person types `/compact`: the CLI writes
`session.compaction_start` and `session.compaction_complete` (trigger `manual`), with the
compaction's own model call in between. The fake model's script is the fixture's script.json.

    npm install --no-save @github/copilot@1.0.102    # once, in the repository root
    python scripts/record_compaction.py /tmp/lab/compaction_manual
    cp /tmp/lab/compaction_manual/home/session-state/*/events.jsonl \
        tests/fixtures/compaction_manual/events.jsonl

(docs/recorded-captures.md, "Context compaction").
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.e2e.copilot import Tui, Workspace, find_copilot  # noqa: E402
from tests.e2e.fake_llm import FakeLLM  # noqa: E402

SCRIPT = REPO / "tests" / "fixtures" / "compaction_manual" / "script.json"
#: How long to wait for the CLI's answer and for its compaction, in seconds.
WAIT = 90.0


def record(root: Path) -> Path:
    """Run the scenario in a fresh workspace under `root`; the session's log."""
    if root.exists():
        shutil.rmtree(root)
    workspace = Workspace.create(root)
    script = json.loads(SCRIPT.read_text())
    with (
        FakeLLM(script, log_path=root / "requests.jsonl") as fake,
        Tui(find_copilot(), workspace, fake).start("CTX-PROMPT: say hello.") as tui,
    ):
        tui.wait_for_screen("Hello! The project", timeout=WAIT)
        time.sleep(2)  # the CLI writes the turn's end after the answer shows
        tui.keys("/compact", "")
        time.sleep(1)
        tui.keys("Enter")
        deadline = time.monotonic() + WAIT
        while "session.compaction_complete" not in workspace.session_log().read_text():
            if time.monotonic() > deadline:
                raise SystemExit("the CLI wrote no session.compaction_complete")
            time.sleep(0.5)
        time.sleep(3)
        tui.keys("/exit", "")
        time.sleep(0.5)
        tui.keys("Enter")
        time.sleep(5)  # its session.shutdown
    return workspace.session_log()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} DIRECTORY")
    print(record(Path(sys.argv[1])))
