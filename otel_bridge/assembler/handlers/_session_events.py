"""Session-level events: segments (start, resume, shutdown), mode and model, and compaction and
truncation as span events on the interaction."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from ... import semconv as sc
from ..._records import AttributeValue, SpanEventRecord
from ...decode._events import Event
from .._accounting import on_shutdown_accounting
from .._attribution import context_attributes
from .._context import on_compaction_complete as count_compaction
from .._context import on_compaction_start as compaction_started
from .._context import on_truncation as count_truncation
from .._context import on_usage_info as usage_now
from .._fields import read_int, read_num, read_str, read_version, snake_case
from .._in_flight import raise_signal
from .._state import SESSION_ID, disagrees

if TYPE_CHECKING:
    from .._parts import Parts

logger = logging.getLogger(__name__)

#: String fields of compaction/truncation events safe to copy onto span events (short labels).
LABEL_FIELDS = frozenset({"trigger", "performedBy", "outcome", "model"})
#: The names of the fields copied: camelCase words, as the CLI's schema has them.
FIELD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]{0,63}", re.ASCII)
#: Fields copied at most from one such event (the CLI writes about ten).
MAX_CONTEXT_FIELDS = 32


def on_segment_start(parts: Parts, event: Event) -> None:
    """session.start: a new segment; the session's id, CLI version, model."""
    parts.lifecycle.start_segment()
    _segment_facts(parts, event)


def _segment_facts(parts: Parts, event: Event) -> None:
    """What a session.start or session.resume says of the session: id, CLI version, model;
    the mode is back to interactive."""
    facts = parts.facts
    session_id = read_str(event.data, "sessionId")
    if session_id and not facts.named:
        facts.named = True
        if disagrees(facts.directory, session_id):
            mismatched(parts, session_id)
        else:
            facts.session_id = session_id
    version = read_version(event.data, "copilotVersion")
    if version is not None:
        facts.copilot_version = version
    model = read_str(event.data, "selectedModel")
    if model:
        facts.model = model
    facts.mode = sc.MODE_INTERACTIVE
    facts.agent_name = None  # a new process: the default agent unless `--agent` selects again
    _attribute(parts, context_attributes(event.data.get("context")) or {}, new_process=True)


def mismatched(parts: Parts, claimed: str) -> None:
    """A log claims another session's id (a forged or copied log): its spans keep the id of
    its directory, so that their trace and span ids, derived from the session id, can never be
    another session's. Said once per session, counted."""
    parts.stats.mismatched += 1
    parts.meter.add(sc.METRIC_SESSION_MISMATCHES)
    logger.warning(
        "%s: its session.start names session %s, not the one its directory is named after; "
        "its spans keep the directory's (%s), apart from that session's",
        parts.stream,
        claimed if SESSION_ID.fullmatch(claimed) else "<not a session id>",
        parts.facts.session_id,
    )


def on_context_changed(parts: Parts, event: Event) -> None:
    """session.context_changed: the working directory (and so perhaps the repository and
    branch) changed; the CLI's preliminary notice (`pendingGitContext`) is skipped for the
    settled one that follows it."""
    attributes = context_attributes(event.data)
    if attributes is not None:
        _attribute(parts, attributes, new_process=False)


def _attribute(parts: Parts, attributes: dict[str, AttributeValue], *, new_process: bool) -> None:
    """From now on the session's spans carry `attributes` and the client's name: read again
    (through the source's reader, `AssemblerConfig.client_name_of`) when a new process starts a
    segment, kept otherwise (docs/attribution.md)."""
    client = parts.facts.attribution.get(sc.COPILOT_CLIENT_NAME)
    reader = parts.config.client_name_of
    if new_process and reader is not None:
        client = reader(parts.stream) or client
    if isinstance(client, str) and client:
        attributes[sc.COPILOT_CLIENT_NAME] = client
    parts.facts.attribution = attributes


def on_resume(parts: Parts, event: Event) -> None:
    """session.resume: a new segment of the same session (after a shutdown, or a crash)."""
    parts.lifecycle.start_segment(resume=True)
    _segment_facts(parts, event)


def on_shutdown(parts: Parts, event: Event) -> None:
    """session.shutdown (disk only): the segment is over; so is an interaction still open
    (unless background sub-agents still run: see `Lifecycle.shutdown`). Its accounting
    snapshot first, so that it can go on the task it ends (`_accounting`)."""
    on_shutdown_accounting(parts.facts, parts.meter, parts.interaction, event)
    parts.lifecycle.shutdown(event.timestamp_ns)


def on_mode_changed(parts: Parts, event: Event) -> None:
    mode = read_str(event.data, "newMode")
    if mode:
        parts.facts.mode = mode


def on_model_change(parts: Parts, event: Event) -> None:
    model = read_str(event.data, "newModel")
    if event.agent_id is None and model:
        parts.facts.model = model


def on_compaction_start(parts: Parts, event: Event) -> None:
    """The window the compaction works for, on its task's context (`_context`); then a span
    event like the others."""
    interaction = parts.interaction
    if interaction is not None:
        compaction_started(interaction.context, event.data)
    on_context_event(parts, event)


def on_compaction_complete(parts: Parts, event: Event) -> None:
    """Counted (success or failure) and added to its task's compactions (`_context`; from
    `TroubleOptions.compactions` of them, a trouble signal), then a span event like the
    others."""
    failed = event.data.get("success") is False
    parts.meter.add(
        sc.METRIC_COMPACTIONS,
        {sc.COPILOT_COMPACTION_OUTCOME: sc.COMPACTION_FAILURE if failed else sc.COMPACTION_SUCCESS},
    )
    interaction = parts.interaction
    if interaction is not None:
        count = count_compaction(interaction.context, event.data)
        threshold = parts.config.trouble.compactions
        if threshold and count >= threshold:
            raise_signal(
                parts, interaction, sc.TROUBLE_COMPACTIONS, count, threshold, event.timestamp_ns
            )
    on_context_event(parts, event)


def on_truncation(parts: Parts, event: Event) -> None:
    """Counted, and added to its task's truncations (`_context`), then a span event like the
    others."""
    parts.meter.add(sc.METRIC_CONTEXT_TRUNCATIONS, {sc.COPILOT_MODE: parts.facts.mode})
    interaction = parts.interaction
    if interaction is not None:
        count_truncation(interaction.context, event.data)
    on_context_event(parts, event)


def on_usage_info(parts: Parts, event: Event) -> None:
    """Live session.usage_info: where the open task's context stands now (the running-now
    gauges only; no span changes)."""
    interaction = parts.interaction
    if interaction is not None:
        usage_now(interaction.context, event.data)


def on_context_event(parts: Parts, event: Event) -> None:
    """Compaction and truncation: points in time on the interaction, named after the event
    (`copilot.compaction_start`...), with its numbers, flags and short labels."""
    interaction = parts.interaction
    if interaction is None:
        parts.unplaced(event)
        return
    attributes: dict[str, AttributeValue] = {}
    for name, value in event.data.items():
        if len(attributes) >= MAX_CONTEXT_FIELDS:
            parts.meter.limit(sc.LIMIT_EVENT_FIELDS)
            break
        if not (isinstance(name, str) and FIELD_NAME.fullmatch(name)):
            continue  # a name no CLI writes: it would become an attribute key as it is
        if isinstance(value, bool):
            attributes[sc.COPILOT_NAMESPACE + snake_case(name)] = value
        elif isinstance(value, int | float):
            number = (
                read_num(event.data, name)
                if isinstance(value, float)
                else read_int(event.data, name)
            )
            if number is not None:
                attributes[sc.COPILOT_NAMESPACE + snake_case(name)] = number
        elif name in LABEL_FIELDS and isinstance(value, str):
            attributes[sc.COPILOT_NAMESPACE + snake_case(name)] = value
    parts.spans.factory.add_event(
        interaction.root,
        SpanEventRecord(
            sc.COPILOT_NAMESPACE + event.type.removeprefix("session."),
            event.timestamp_ns,
            attributes,
        ),
    )
