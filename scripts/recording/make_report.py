#!/usr/bin/env python3
"""Regenerate captures/REPORT.md: the hand-written facts (REPORT-facts.md) followed by
a compact listing of every capture's events.jsonl."""
import json
import subprocess
from pathlib import Path

LAB = Path("/work/lab")
CAP = LAB / "captures"
ORDER = ["subagent", "subagent_parallel", "subagent_nested", "subagent_deep", "subagent_failed",
         "subagent_background", "abort_subagent", "parallel_tools", "provider_error",
         "autopilot_nudge", "abort", "abort_try1", "abort_try2", "abort_try3", "sdk_abort", "resume"]


def count(p: Path) -> int:
    return sum(1 for _ in p.open()) if p.exists() else 0


out = [(LAB / "REPORT-facts.md").read_text(), "\n## Files and line counts\n",
       "| scenario | events.jsonl | live-events.jsonl | native-otel.jsonl | requests (LLM calls) | copilot exit / wall time |",
       "|---|---|---|---|---|---|"]
for name in ORDER:
    d = CAP / name
    runs = json.loads((d / "runs.json").read_text())
    rc = ", ".join(f"{r.get('rc', '-')} / {r.get('seconds', '-')}s" for r in runs)
    live = " + ".join(str(count(p)) for p in sorted(d.glob("live-events*.jsonl")))
    out.append(f"| {name} | {count(d / 'events.jsonl')} | {live} | {count(d / 'native-otel.jsonl')} "
               f"| {count(d / 'requests.jsonl')} | {rc} |")

out.append("\n## Event listings (events.jsonl, on disk)\n")
out.append("Columns: line, time (UTC), type, `ag=` envelope agentId (first 8 chars; `-` = main "
           "agent / no agentId), then data fields. UUIDs are cut to 8 chars; "
           "`parentToolCallId` is `data.parentToolCallId`, or `data.usage.parentToolCallId` for "
           "`session.usage_record`; `parentId=` is `data.parentId` (subagent.started), not the envelope one; "
           "`exitCode` is `data.shellExecution.exitCode`.\n")
for name in ORDER:
    listing = subprocess.run(["python3", str(LAB / "list_events.py"), str(CAP / name / "events.jsonl")],
                             capture_output=True, text=True, check=True).stdout
    out.append(f"### {name}\n\n```\n{listing}```\n")
(CAP / "REPORT.md").write_text("\n".join(out))
print("wrote", CAP / "REPORT.md")
