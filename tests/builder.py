"""Hand-built Copilot event logs for assembler tests, shaped like the real CLI's
(docs/events.md)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from otel_bridge import Event, event_from_json

BASE_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z


def iso(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    import datetime as dt

    stamp = dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{rest // 1_000_000:03d}Z"


class Log:
    """Appends events 10 ms apart with ids e1, e2, ...; `agent` sets the envelope agentId."""

    def __init__(self, session: str = "sess-1", step_ms: int = 10) -> None:
        self.session = session
        self.now = BASE_NS
        self.step = step_ms * 1_000_000
        self.raw: list[dict[str, Any]] = []

    @classmethod
    def asked(cls, session: str = "sess-1") -> Log:
        """A session started and one user message sent (interaction i1): how most hand-built
        logs begin, before their turns."""
        log = cls(session)
        log.start()
        log.user()
        return log

    def add(self, type_: str, agent: str | None = None, **data: Any) -> dict[str, Any]:
        self.now += self.step
        obj: dict[str, Any] = {
            "type": type_,
            "data": data,
            "id": f"e{len(self.raw) + 1}",
            "timestamp": iso(self.now),
            "parentId": self.raw[-1]["id"] if self.raw else None,
        }
        if agent is not None:
            obj["agentId"] = agent
        self.raw.append(obj)
        return obj

    def wait(self, ms: int) -> None:
        self.now += ms * 1_000_000

    # shorthands for the common events
    def start(self, **data: Any) -> None:
        self.add(
            "session.start",
            sessionId=self.session,
            copilotVersion="1.0.102",
            selectedModel="gpt-4.1",
            **data,
        )

    def user(self, content: str = "do it", interaction: str = "i1", **data: Any) -> None:
        self.add("user.message", content=content, interactionId=interaction, turnId="0", **data)

    def turn(
        self,
        turn: str,
        interaction: str = "i1",
        agent: str | None = None,
        parent: str | None = None,
    ) -> None:
        extra = {"parentToolCallId": parent} if parent else {}
        self.add("assistant.turn_start", agent, turnId=turn, interactionId=interaction, **extra)

    def usage(
        self,
        usage_id: str,
        agent: str | None = None,
        parent: str | None = None,
        duration: int = 5,
        **fields: Any,
    ) -> None:
        usage = {
            "model": "gpt-4.1",
            "inputTokens": 100,
            "outputTokens": 10,
            "cacheReadTokens": 0,
            "duration": duration,
            "apiCallId": usage_id,
            "initiator": "agent",
            "accounting": {"usageId": usage_id},
            **fields,
        }
        if parent:
            usage["parentToolCallId"] = parent
        self.add("session.usage_record", agent, usage=usage)

    def message(
        self,
        tools: list[tuple[str, str]] = (),
        agent: str | None = None,
        parent: str | None = None,
        turn: str = "0",
        api_call: str | None = None,
    ) -> None:
        extra: dict[str, Any] = {"parentToolCallId": parent} if parent else {}
        if api_call:
            extra["apiCallId"] = api_call
        self.add(
            "assistant.message",
            agent,
            messageId=f"m{len(self.raw)}",
            content="ok",
            model="gpt-4.1",
            turnId=turn,
            toolRequests=[
                {"toolCallId": c, "name": n, "arguments": {}, "type": "function"} for c, n in tools
            ],
            **extra,
        )

    def tool_start(
        self, call: str, name: str, agent: str | None = None, parent: str | None = None
    ) -> None:
        extra = {"parentToolCallId": parent} if parent else {}
        self.add(
            "tool.execution_start", agent, toolCallId=call, toolName=name, arguments={}, **extra
        )

    def tool_done(
        self,
        call: str,
        success: bool = True,
        agent: str | None = None,
        parent: str | None = None,
        **data: Any,
    ) -> None:
        extra = {"parentToolCallId": parent} if parent else {}
        body: dict[str, Any] = {"toolCallId": call, "success": success, **extra, **data}
        if success:
            body.setdefault("result", {"content": "fine"})
        else:
            body.setdefault("error", {"message": "no such file /secret/path", "code": "failure"})
        self.add("tool.execution_complete", agent, **body)

    def turn_end(self, turn: str, agent: str | None = None, parent: str | None = None) -> None:
        extra = {"parentToolCallId": parent} if parent else {}
        self.add("assistant.turn_end", agent, turnId=turn, **extra)

    def simple_turn(
        self, turn: str, usage_id: str, tools: list[tuple[str, str]] = (), interaction: str = "i1"
    ) -> None:
        """A main-agent turn: one LLM call, then its tools run and complete in order."""
        self.turn(turn, interaction)
        self.usage(usage_id)
        self.message(tools, turn=turn)
        for call, name in tools:
            self.tool_start(call, name)
            self.tool_done(call)
        self.turn_end(turn)

    def events(self) -> list[Event]:
        return [event_from_json(obj) for obj in self.raw]

    def jsonl(self) -> bytes:
        return b"".join(json.dumps(obj).encode() + b"\n" for obj in self.raw)


class GrowingLog:
    """A session log of now in a session-state directory, written as its events are added
    (for `run` to follow while it grows)."""

    def __init__(self, state: Path) -> None:
        session = str(uuid.uuid4())
        (state / session).mkdir(parents=True)
        self.path = state / session / "events.jsonl"
        self.log = Log(session)
        self.log.now = time.time_ns() - 5 * 10**9  # of now: run reads it from its start
        self.written = 0

    def write(self) -> None:
        """Append the events added since the last write."""
        with self.path.open("ab") as handle:
            for obj in self.log.raw[self.written :]:
                handle.write(json.dumps(obj).encode() + b"\n")
        self.written = len(self.log.raw)
