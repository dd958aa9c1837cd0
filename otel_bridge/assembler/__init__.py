"""The assembler: Copilot events in, finished OpenTelemetry span records and metrics out.

Pure: no I/O, no clock, no threads, no SDK. Time comes from the events, ids from `_ids`, so
feeding the same events twice yields the same records. `Assembler` routes the events of many
streams (one per log or live session) to one `SessionAssembler` each.

    _router.py      Assembler: streams -> sessions
    _session.py     SessionAssembler: one session's parts; feed() dispatches by event type
    _parts.py       Parts: the session's parts a handler gets (never the session itself)
    handlers/       what each event type means: the HANDLERS table, handlers by concern
    _lifecycle.py   open, reopen, close an interaction; loop end; dangling tools
    _snapshot.py    what a checkpoint saves of a session: snapshot, restore
    spans/          SpanFactory (deterministic ids, the GenAI block, finish and emit) and one
                    builder per span kind: _agent.py, _turn.py, _chat.py, _tool.py
    _state.py       the open state: Interaction, Agent, Turn, OpenSpan, SessionFacts, SeenSet
    _content.py     content policy: sizes, salted hashes, opt-in text
    _fields.py      typed readers of event fields
    _meter.py       metric observations of a session
    _accounting.py  cost and code changes; _totals.py the figures of an accounting snapshot
    _spanmetrics.py metrics that follow from finished spans, computed from the SpanRecords
    _config.py      AssemblerConfig, AssemblerStats, TroubleOptions
    _in_flight.py   what runs now: the open tasks' figures, the signals of a task in trouble

Other packages import from here only, never from a module below
(tests/unit/repo/test_boundaries.py).

A new event type: a handler in `handlers/` and a row in `handlers.HANDLERS`
(docs/architecture.md, "Where a new event type goes").
"""

from __future__ import annotations

from ._config import AssemblerConfig, AssemblerStats, TroubleOptions
from ._in_flight import TASK_METRICS, Glance, InFlight, label_dict
from ._root_name import check_root_name
from ._router import Assembler
from ._session import SessionAssembler

__all__ = [
    "TASK_METRICS",
    "Assembler",
    "AssemblerConfig",
    "AssemblerStats",
    "Glance",
    "InFlight",
    "SessionAssembler",
    "TroubleOptions",
    "check_root_name",
    "label_dict",
]
