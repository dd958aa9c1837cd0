"""What a checkpoint saves of a session (`snapshot`) and takes back (`restore`): the facts a
restart needs to give the same spans, never the open interaction (a checkpoint is taken
between interactions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._attribution import restore_attribution
from ._fields import read_version
from ._lifecycle import MAX_IDS
from ._state import SessionFacts, disagrees
from ._totals import Totals

__all__ = ["restore", "snapshot"]


def snapshot(facts: SessionFacts) -> dict[str, Any]:
    """The session-level state a restart needs to resume after the last finished interaction
    and give the same spans: ids, mode, model, the link to the previous interaction. Only
    meaningful while no interaction is open. JSON-friendly."""
    return {
        "session_id": facts.session_id,
        "named": facts.named,
        "mode": facts.mode,
        "model": facts.model,
        "copilot_version": facts.copilot_version,
        "agent_name": facts.agent_name,
        "previous": [f"{facts.previous[0]:032x}", f"{facts.previous[1]:016x}"]
        if facts.previous is not None
        else None,
        "previous_in_segment": facts.previous_in_segment,
        "previous_ids": list(facts.previous_ids),
        "attribution": dict(facts.attribution),
        "accounting": facts.accounting.to_json() if facts.accounting is not None else None,
        "byok_calls": facts.byok_calls,
        "billed_calls": facts.billed_calls,
    }


def restore(facts: SessionFacts, saved: Mapping[str, Any]) -> None:
    """Take back a `snapshot()` (of a previous run). Unknown or bad fields are ignored."""
    saved_id = saved.get("session_id")
    if isinstance(saved_id, str) and saved_id and not disagrees(facts.directory, saved_id):
        facts.session_id = saved_id
    facts.named = saved.get("named") is True
    if isinstance(saved.get("mode"), str):
        facts.mode = saved["mode"]
    if isinstance(saved.get("model"), str):
        facts.model = saved["model"]
    version = read_version(saved, "copilot_version")  # a checkpoint is input too
    if version is not None:
        facts.copilot_version = version
    agent_name = saved.get("agent_name")
    facts.agent_name = agent_name if isinstance(agent_name, str) and agent_name else None
    previous = saved.get("previous")
    try:
        facts.previous = (int(previous[0], 16), int(previous[1], 16)) if previous else None
    except (TypeError, ValueError, IndexError):
        facts.previous = None
    facts.previous_in_segment = saved.get("previous_in_segment") is True
    ids = saved.get("previous_ids")
    facts.previous_ids = (
        tuple(i for i in ids if isinstance(i, str))[:MAX_IDS] if isinstance(ids, list) else ()
    )
    facts.attribution = restore_attribution(saved.get("attribution"))
    # the last accounting snapshot: a session resumed after a restart counts only what its
    # next shutdown adds (assembler/_accounting.py)
    facts.accounting = Totals.from_json(saved.get("accounting"))
    for name in ("byok_calls", "billed_calls"):
        count = saved.get(name)
        setattr(facts, name, count if isinstance(count, int) and count >= 0 else 0)
