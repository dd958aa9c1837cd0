"""`chat <model>` spans (CLIENT): one per LLM call, from a usage record, from the messages of a
turn in logs without usage records, or from a failed call (live)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import semconv as sc
from ..._records import AttributeValue, SpanKind, SpanRecord
from ...decode._events import Event
from .._accounting import call_attributes, drop_implausible, unreadable_tokens
from .._content import ContentPolicy
from .._context import call_context
from .._fields import compact, read_int, read_num, read_str
from .._state import Agent, Interaction, OpenSpan, SessionFacts, Turn
from ._factory import ID_CHAT, SpanFactory

__all__ = ["ChatSpans"]

#: LLM call spans a turn holds for their messages (content capture on), at most.
MAX_HELD_CHATS = 100


class ChatSpans:
    """`chat <model>` spans (CLIENT): one per LLM call."""

    __slots__ = ("_cache_write_keys", "_content", "_factory", "_facts")

    def __init__(
        self,
        factory: SpanFactory,
        content: ContentPolicy,
        facts: SessionFacts,
        *,
        semconv: str = sc.SEMCONV_RELEASED,
    ) -> None:
        self._factory = factory
        self._content = content
        self._facts = facts
        #: gen_ai.usage.cache_write.input_tokens, its previous name, or both (`--semconv`)
        self._cache_write_keys = sc.attribute_keys(
            sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS, semconv
        )

    def from_usage(
        self,
        interaction: Interaction,
        agent: Agent,
        event: Event,
        usage: Mapping[str, Any],
        call_key: str,
    ) -> SpanRecord:
        """A usage record (or live assistant.usage): ends at the event, starts `duration` ms
        earlier but never before its parent. Its cost: `_accounting.call_attributes`."""
        turn = agent.turn
        parent = agent.current_span
        if turn is not None:
            turn.llm_calls += 1
        agent.inference_calls += 1
        model = read_str(usage, "model") or self._facts.model
        duration_ms = duration(usage, "duration")
        end_ns = event.timestamp_ns
        start_ns = started(end_ns, duration_ms, parent.start_ns)
        attributes = self._factory.genai(sc.OP_CHAT)
        attributes.update(usage_attributes(usage, model, duration_ms, turn))
        cache_write = read_int(usage, "cacheWriteTokens")
        if cache_write is not None:
            attributes.update(dict.fromkeys(self._cache_write_keys, cache_write))
        attributes.update(call_attributes(usage))
        implausible = drop_implausible(attributes) + unreadable_tokens(usage)
        implausible += call_context(usage, attributes)
        if implausible:
            self._factory.implausible(implausible)
        ask(agent, attributes)
        span = OpenSpan(
            interaction.trace_id,
            self._factory.span_id(ID_CHAT, call_key, event.key),
            parent.span_id,
            f"{sc.OP_CHAT} {model or sc.UNKNOWN}",
            start_ns,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            root_span_id=interaction.root.span_id,
        )
        record = span.finish(end_ns)
        if self._content.capture and turn is not None:
            # held for its message, whose text is its output (`answered`); a turn whose
            # messages never come holds a bounded number (the oldest goes out without it)
            if len(turn.held) >= MAX_HELD_CHATS:
                self._emit(agent, turn.held.pop(0)[1])
                self._factory.limit(sc.LIMIT_HELD_CHATS)
            turn.held.append((read_str(usage, "apiCallId"), record))
        else:
            self._emit(agent, record)
        return record

    def answered(self, agent: Agent, api_call_id: str | None, text: str) -> None:
        """A call's message came: its held chat span (in `agent`'s turn) gets the text as its
        `output.value` (for OpenInference viewers; content capture on only) and goes out."""
        turn = agent.turn
        if turn is None:
            return
        for index, (call, record) in enumerate(turn.held):
            if call is not None and call == api_call_id:
                del turn.held[index]
                if isinstance(record.attributes, dict):
                    self._content.show(
                        record.attributes, sc.OUTPUT_VALUE, sc.OUTPUT_MIME_TYPE, text
                    )
                self._emit(agent, record)
                return

    def release(self, agent: Agent, turn: Turn) -> None:
        """`agent`'s turn ends: chat spans still held (a call whose message never came) go out
        as they are."""
        held, turn.held = turn.held, []
        for _, record in held:
            self._emit(agent, record)

    def _emit(self, agent: Agent, record: SpanRecord) -> None:
        """Emit an LLM call's span with its agent, whose name and type label its cost."""
        name = agent.span.attributes.get(sc.GEN_AI_AGENT_NAME)
        self._factory.emit(
            record, agent_type=agent.type, agent_name=name if isinstance(name, str) else None
        )

    def from_messages(self, turn: Turn, agent: Agent) -> None:
        """Logs without usage records (CLI < 1.0.102): one chat span per model call, told
        apart by apiCallId, else one per assistant.message; each ends at its message."""
        start = turn.span.start_ns
        seen: set[str] = set()
        for message in turn.messages:
            call = message.api_call_id or message.key
            if call in seen:
                continue
            seen.add(call)
            agent.inference_calls += 1
            model = message.model or self._facts.model
            attributes = self._factory.genai(sc.OP_CHAT)
            attributes.update(
                compact(
                    {
                        sc.GEN_AI_REQUEST_MODEL: model,
                        sc.GEN_AI_RESPONSE_MODEL: message.model,
                        sc.GEN_AI_RESPONSE_ID: message.api_call_id,
                        sc.COPILOT_TURN_ID: turn.turn_id,
                        # no usage record: tokens unknown, not zero (docs/events.md)
                        sc.COPILOT_USAGE_UNKNOWN: True,
                    }
                )
            )
            ask(agent, attributes)
            span = OpenSpan(
                turn.span.trace_id,
                self._factory.span_id(ID_CHAT, call, message.key),
                turn.span.span_id,
                f"{sc.OP_CHAT} {model or sc.UNKNOWN}",
                start,
                kind=SpanKind.CLIENT,
                attributes=attributes,
                root_span_id=turn.span.root_span_id,
            )
            self._factory.emit(span.finish(message.timestamp_ns))
            start = message.timestamp_ns

    def failed_call(self, interaction: Interaction, agent: Agent, event: Event) -> None:
        """Live model.call_failure: an LLM call that failed (to be retried, or the turn fails)."""
        data = event.data
        parent = agent.current_span
        agent.inference_calls += 1
        model = read_str(data, "model") or self._facts.model
        status_code = read_int(data, "statusCode")
        duration_ms = duration(data, "durationMs")
        start_ns = started(event.timestamp_ns, duration_ms, parent.start_ns)
        attributes = self._factory.genai(sc.OP_CHAT)
        attributes.update(
            compact(
                {
                    sc.GEN_AI_REQUEST_MODEL: model,
                    sc.COPILOT_ERROR_STATUS_CODE: status_code,
                    sc.COPILOT_RETRY_ATTEMPT: read_int(data, "retryAttempt"),
                }
            )
        )
        span = OpenSpan(
            interaction.trace_id,
            self._factory.span_id(ID_CHAT, event.key, event.key),
            parent.span_id,
            f"{sc.OP_CHAT} {model or sc.UNKNOWN}",
            start_ns,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            root_span_id=interaction.root.span_id,
        )
        error_type = (
            read_str(data, "errorCode")
            or (str(status_code) if status_code else None)
            or read_str(data, "failureKind")
            or sc.ERROR_MODEL_CALL_FAILED
        )
        message = self._content.opt_in(read_str(data, "errorMessage"))
        self._factory.finish(span, event.timestamp_ns, (error_type, message))


def ask(agent: Agent, attributes: dict[str, AttributeValue]) -> None:
    """An LLM call's `input.value` for OpenInference viewers: the text its agent was asked
    (the user's message, on the root), when its agent span has one (content capture on,
    docs/viewers.md). Its output is the call's message text (`ChatSpans.answered`)."""
    text = agent.span.attributes.get(sc.INPUT_VALUE)
    if isinstance(text, str):
        attributes[sc.INPUT_VALUE] = text
        attributes[sc.INPUT_MIME_TYPE] = sc.MIME_TEXT


def duration(data: Mapping[str, Any], key: str) -> float | None:
    """A call's duration in ms as the event says it: None when it is not a finite number, or
    is negative (no call takes less than nothing; -1e30 would put its start centuries after its
    end)."""
    value = read_num(data, key)
    return value if value is not None and value >= 0 else None


def started(end_ns: int, duration_ms: float | None, parent_start_ns: int) -> int:
    """When a call that ended at `end_ns` after `duration_ms` started: never before its parent
    (a duration longer than the turn is cut to it), never after its end (unless its parent
    starts later: then at its parent's start, and the span ends there too)."""
    if not duration_ms:
        return max(end_ns, parent_start_ns)
    return max(end_ns - int(min(duration_ms * 1_000_000, end_ns)), parent_start_ns)


def usage_attributes(
    usage: Mapping[str, Any], model: str | None, duration_ms: float | None, turn: Turn | None
) -> dict[str, AttributeValue]:
    """What a usage record says of its LLM call, as chat span attributes (its cost apart)."""
    ttft = read_num(usage, "timeToFirstTokenMs")
    finish = read_str(usage, "finishReason")
    return compact(
        {
            sc.GEN_AI_REQUEST_MODEL: model,
            sc.GEN_AI_RESPONSE_MODEL: read_str(usage, "model"),
            sc.GEN_AI_RESPONSE_ID: read_str(usage, "apiCallId"),
            sc.GEN_AI_RESPONSE_FINISH_REASONS: [finish] if finish else None,
            sc.GEN_AI_USAGE_INPUT_TOKENS: read_int(usage, "inputTokens"),
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: read_int(usage, "outputTokens"),
            sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: read_int(usage, "cacheReadTokens"),
            sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: read_int(usage, "reasoningTokens"),
            sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: ttft / 1000.0 if ttft is not None else None,
            sc.COPILOT_INITIATOR: read_str(usage, "initiator"),
            sc.COPILOT_USAGE_DURATION_MS: duration_ms,
            sc.COPILOT_TURN_ID: turn.turn_id if turn is not None else None,
        }
    )
