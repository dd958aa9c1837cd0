#!/usr/bin/env python3
"""Compact listing of a Copilot events.jsonl: python list_events.py FILE [--live]."""
import json
import sys

KEYS = ["turnId", "interactionId", "toolCallId", "toolName", "parentToolCallId", "success",
        "agentName", "reason", "errorType", "statusCode", "shutdownType", "source",
        "isAutopilotContinuation", "parentId", "exitCode", "model", "cancelled", "outcome"]


def short(v):
    s = str(v)
    if len(s) >= 36 and s.count("-") >= 4:  # uuid
        return s[:8]
    return s


def describe(e):
    d = e.get("data") or {}
    parts = []
    for k in KEYS:
        if k == "parentToolCallId":
            v = d.get(k, (d.get("usage") or {}).get(k))
        elif k == "exitCode":
            v = (d.get("shellExecution") or {}).get("exitCode")
        elif k == "parentId":
            v = d.get(k)  # data.parentId (subagent.started)
        else:
            v = d.get(k)
        if v is not None:
            parts.append(f"{k}={short(v)}")
    if e["type"] == "assistant.message":
        parts.append("toolRequests=[" + ",".join(f"{t['name']}:{t['toolCallId']}" for t in d.get("toolRequests") or []) + "]")
    if e["type"] == "session.usage_record":
        u = d.get("usage", {})
        parts.append(f"initiator={u.get('initiator')} interactionType={u.get('interactionType')}")
    if e["type"] == "tool.execution_complete" and d.get("error"):
        parts.append("error=" + json.dumps(d["error"])[:80])
    if e["type"] == "session.error":
        parts.append("message=" + str(d.get("message"))[:80])
    return " ".join(parts)


def main():
    path = sys.argv[1]
    for i, line in enumerate(open(path), 1):
        try:
            e = json.loads(line)
        except ValueError:
            print(f"{i:3} !! unparsable line: {line[:80]!r}")
            continue
        ts = e.get("timestamp", "")[11:23]
        ag = e.get("agentId")
        ag = short(ag) if ag else "-"
        eph = " (eph)" if e.get("ephemeral") else ""
        print(f"{i:3} {ts} {e['type']:<28}{eph} ag={ag:<10} {describe(e)}")


if __name__ == "__main__":
    main()
