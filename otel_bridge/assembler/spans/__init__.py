"""Spans: one factory, and one builder per kind of span, each owning its name, its attribute
block and how it ends.

    invoke_agent copilot        AgentSpans.root .. finish_root     (the interaction)
     +- turn                    TurnSpans.open .. finish (copilot.turn.index: n)
     |   +- chat <model>        ChatSpans.from_usage / from_messages / failed_call
     |   +- execute_tool <t>    ToolSpans.open .. complete / finish
     |       +- invoke_agent <agent>   AgentSpans.subagent / started .. finish_subagent

Builders decide what a span carries; when a span starts or ends is decided by the handlers and
the lifecycle, which call them. Every span is finished and emitted through the `SpanFactory`.
"""

from __future__ import annotations

from collections.abc import Callable

from ... import semconv as sc
from .._content import ContentPolicy
from .._state import SessionFacts
from ._agent import UNNAMED_AGENT, AgentSpans
from ._chat import ChatSpans
from ._factory import SpanFactory
from ._tool import ToolSpans
from ._turn import TurnSpans

__all__ = [
    "UNNAMED_AGENT",
    "AgentSpans",
    "ChatSpans",
    "SpanBuilders",
    "SpanFactory",
    "ToolSpans",
    "TurnSpans",
]


class SpanBuilders:
    """The builders of one session, sharing its factory."""

    __slots__ = ("agent", "chat", "factory", "tool", "turn")

    def __init__(
        self,
        factory: SpanFactory,
        content: ContentPolicy,
        facts: SessionFacts,
        parent: tuple[int, int] | None,
        session_name: Callable[[], str | None] | None = None,
        *,
        semconv: str = sc.SEMCONV_RELEASED,
        root_name: str | None = None,
    ) -> None:
        self.factory = factory
        self.agent = AgentSpans(
            factory, content, facts, parent, session_name, semconv=semconv, root_name=root_name
        )
        self.chat = ChatSpans(factory, content, facts, semconv=semconv)
        self.turn = TurnSpans(factory, content, self.chat)
        self.tool = ToolSpans(factory, content)
