"""`turn` spans: an agent's turns, numbered from 1 within the interaction (`copilot.turn.index`,
not in the name: semconv.SPAN_TURN)."""

from __future__ import annotations

from ... import semconv as sc
from ...decode._events import Event
from .._content import ContentPolicy, as_messages
from .._fields import compact, read_str
from .._state import Agent, Error, Interaction, OpenSpan, Turn
from ._chat import ChatSpans
from ._factory import ID_TURN, SpanFactory

__all__ = ["TurnSpans"]


class TurnSpans:
    """`turn` spans: an agent's turn, numbered from 1 within the interaction."""

    __slots__ = ("_chats", "_content", "_factory")

    def __init__(self, factory: SpanFactory, content: ContentPolicy, chats: ChatSpans) -> None:
        self._factory = factory
        self._content = content
        self._chats = chats

    def open(self, interaction: Interaction, agent: Agent, event: Event) -> Turn:
        """The agent's next turn, opened by assistant.turn_start."""
        agent.turns += 1
        turn_id = read_str(event.data, "turnId") or str(agent.turns - 1)
        span = OpenSpan(
            interaction.trace_id,
            self._factory.span_id(ID_TURN, event.key, event.key),
            agent.span.span_id,
            sc.SPAN_TURN,
            event.timestamp_ns,
            attributes=compact(
                {
                    # One kind for every turn: a step that groups an LLM call and the tools it
                    # asked for is a CHAIN in OpenInference ("a link between different LLM
                    # application steps", spec/semantic_conventions.md). Without it Phoenix
                    # guesses from the GenAI names: LLM when the turn names a model, else
                    # UNKNOWN (phoenix/trace/gen_ai/conversion.py, `_infer_span_kind`).
                    sc.OPENINFERENCE_SPAN_KIND: sc.OPENINFERENCE_CHAIN,
                    sc.COPILOT_TURN_ID: turn_id,
                    sc.COPILOT_TURN_INDEX: agent.turns,
                    sc.COPILOT_INTERACTION_ID: read_str(event.data, "interactionId"),
                    sc.GEN_AI_REQUEST_MODEL: read_str(event.data, "model"),
                }
            ),
            root_span_id=interaction.root.span_id,
        )
        agent.turn = Turn(span, turn_id)
        return agent.turn

    def finish(
        self, agent: Agent, end_ns: int, *, error: Error | None = None, incomplete: bool = False
    ) -> None:
        """End the agent's open turn, if any, with its chats (old logs) and its answer. With
        content capture on the answer is also the turn's `output.value`, and its agent's
        (the root, or a sub-agent's span): the last answer of an agent is its output, the
        task's final answer on the root (docs/viewers.md)."""
        turn = agent.turn
        if turn is None:
            return
        agent.turn = None
        self._chats.release(agent, turn)
        if turn.llm_calls == 0:
            self._chats.from_messages(turn, agent)
        if turn.answer:
            self._content.put(
                turn.span.attributes,
                sc.COPILOT_RESPONSE,
                turn.answer,
                sc.GEN_AI_OUTPUT_MESSAGES,
                as_messages("assistant"),
                length=max(turn.answer_length, len(turn.answer)),
            )
            for span in (turn.span, agent.span):
                self._content.show(
                    span.attributes, sc.OUTPUT_VALUE, sc.OUTPUT_MIME_TYPE, turn.answer
                )
        self._factory.finish(turn.span, end_ns, error, incomplete)
