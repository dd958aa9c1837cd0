"""A scripted, OpenAI-compatible chat-completions server on 127.0.0.1, to drive the real Copilot
CLI offline (`COPILOT_PROVIDER_BASE_URL=<FakeLLM.url>`). Standard library only.

The CLI calls `POST /v1/chat/completions` with `stream: true` and
`stream_options.include_usage`, and expects SSE chunks: text in `choices[0].delta.content`, tool
calls in `choices[0].delta.tool_calls`, a finish reason, then a usage chunk with no choices
(docs/recorded-captures.md). Non-streaming requests get one `chat.completion` object.

Script
------
A JSON object (a plain list is taken as its `responses`); the fixtures' `script.json` files use
this format::

    {"responses": [<rule>, ...], "default": <rule>}

For each request the server takes the first rule that is not used up and whose `when` matches;
a rule is used once unless it has `"repeat": true` or `"times": N`. Rules without `when` match
anything, so a plain list is answered strictly in order. Sub-agents call the model concurrently:
route them by content (`first_user_contains`), not by order.

A rule has any of:

`name`           a label (logged; `wait_for(name)` waits until it was handed out)
`text`           assistant text, streamed in a few chunks
`tool_calls`     `[{"name", "arguments": object | JSON text, "id"?}]`; several = parallel calls
`status`         answer with this HTTP error status instead (`body`: the error JSON)
`delay`          seconds to wait before answering (a slow model)
`hold`           true: the answer waits until the test calls `release(name)` (or the server
                 stops), so that a test can look at what runs while the model "thinks", for as
                 long as it needs, without racing a delay; `wait_held(name)` waits until a
                 request for the rule is being held
`usage`          `{"prompt_tokens", "completion_tokens", "cached_tokens"}`; the default differs
                 per request (see `usage_for`), so that token counts can be traced to one call
`finish_reason`  instead of "stop" / "tool_calls"
`when`           conditions that must all hold; strings are case-sensitive substrings, a list
                 means all of them:
    `last_contains`, `last_role`, `system_contains`, `first_user_contains`, `any_contains`,
    `none_contains`, `has_tool`, `lacks_tool`, `assistant_count` (assistant messages already in
    the request: 0 = the first call of a conversation), `stream`

Every request is kept in `requests` (`Request`: the rule used, the body, the HTTP status and the
response id and usage handed out), and appended to `log_path` as JSON Lines if one is given.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeLLM", "Request", "load_script", "matches", "usage_for"]

HOST = "127.0.0.1"
FALLBACK: dict[str, Any] = {
    "name": "fallback",
    "text": "fake-llm: no scripted response matched this request.",
}
_CONDITIONS = frozenset(
    {
        "last_contains",
        "last_role",
        "system_contains",
        "first_user_contains",
        "any_contains",
        "none_contains",
        "has_tool",
        "lacks_tool",
        "assistant_count",
        "stream",
    }
)


def load_script(script: Any) -> dict[str, Any]:
    """A script given as a dict, a list of rules, JSON text or a path, normalised to a dict."""
    if isinstance(script, Path) or (
        isinstance(script, str) and not script.lstrip().startswith(("{", "["))
    ):
        script = json.loads(Path(script).read_text())
    elif isinstance(script, str):
        script = json.loads(script)
    if script is None:
        script = []
    if isinstance(script, list):
        script = {"responses": script}
    if not isinstance(script, dict):
        raise TypeError("a script is a dict, a list of rules, JSON text or a path")
    script = dict(script)
    script["responses"] = [dict(rule) for rule in script.get("responses", [])]
    for rule in [*script["responses"], script.get("default") or {}]:
        unknown = set(rule.get("when") or {}) - _CONDITIONS
        if unknown:
            raise ValueError(f"unknown 'when' condition(s) {sorted(unknown)} in {rule!r}")
    return script


def usage_for(n: int) -> dict[str, int]:
    """The default usage of the n-th request: different for every call of a run."""
    return {"prompt_tokens": 1200 + 7 * n, "completion_tokens": 40 + n, "cached_tokens": 100}


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return json.dumps(content)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def matches(when: dict[str, Any] | None, body: dict[str, Any]) -> bool:
    """True when every condition of `when` holds for the request body."""
    if not when:
        return True
    messages = body.get("messages") or []
    texts = [_text_of(m.get("content")) for m in messages]
    system = "\n".join(
        t for m, t in zip(messages, texts, strict=True) if m.get("role") in ("system", "developer")
    )
    users = [t for m, t in zip(messages, texts, strict=True) if m.get("role") == "user"]
    last_text = texts[-1] if texts else ""
    last_role = messages[-1].get("role") if messages else None
    tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    checks = {
        "last_contains": lambda w: all(x in last_text for x in _as_list(w)),
        "last_role": lambda w: last_role == w,
        "system_contains": lambda w: all(x in system for x in _as_list(w)),
        "first_user_contains": lambda w: bool(users) and all(x in users[0] for x in _as_list(w)),
        "any_contains": lambda w: all(any(x in t for t in texts) for x in _as_list(w)),
        "none_contains": lambda w: not any(x in t for x in _as_list(w) for t in texts),
        "has_tool": lambda w: all(x in tools for x in _as_list(w)),
        "lacks_tool": lambda w: not any(x in tools for x in _as_list(w)),
        "assistant_count": lambda w: sum(m.get("role") == "assistant" for m in messages) == w,
        "stream": lambda w: bool(body.get("stream")) == bool(w),
    }
    return all(checks[key](want) for key, want in when.items())


@dataclass
class Request:
    """One request the server answered."""

    n: int
    time: float
    method: str
    path: str
    rule: int | None = None  # index in the script's responses; None: default or fallback
    name: str | None = None  # the rule's name
    status: int = 200
    response_id: str | None = None  # chatcmpl-... of a successful answer (= the CLI's apiCallId)
    usage: dict[str, int] | None = None
    tool_call_ids: list[str] = field(default_factory=list)
    body: dict[str, Any] = field(default_factory=dict)


class FakeLLM:
    """The scripted server. `start()` / `stop()`, or use it as a context manager."""

    def __init__(
        self, script: Any = None, *, model: str = "gpt-4.1", log_path: str | Path | None = None
    ) -> None:
        self.script = load_script(script)
        self.model = model
        self.log_path = Path(log_path) if log_path else None
        self.requests: list[Request] = []
        self.port = 0
        self._uses = [0] * len(self.script["responses"])
        self._picked = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._held: set[str] = set()  # rules whose answer waits for release()
        self._released: set[str] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL for OpenAI clients: http://127.0.0.1:PORT/v1."""
        if not self.port:
            raise RuntimeError("the fake LLM is not started")
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> FakeLLM:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer((HOST, 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; replies still waiting out a `delay` give up."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- what happened ----------------------------------------------------------------------

    def unused(self) -> list[str]:
        """Names (or indexes) of the scripted rules never used: a script that did not play out."""
        with self._lock:
            return [
                str(rule.get("name", i))
                for i, (rule, uses) in enumerate(
                    zip(self.script["responses"], self._uses, strict=True)
                )
                if uses == 0
            ]

    def completions(self) -> list[Request]:
        """Chat-completion requests answered successfully, in order."""
        with self._lock:
            return [r for r in self.requests if r.response_id is not None]

    def handed_out(self, names: Iterable[str]) -> bool:
        wanted = set(names)
        with self._lock:
            return any(r.name in wanted for r in self.requests)

    def wait_for(self, name: str, timeout: float = 60.0) -> Request:
        """Wait until the rule `name` has been answered; returns its request."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for request in self.requests:
                    if request.name == name:
                        return request
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the fake LLM never handed out {name!r}")
                self._changed.wait(left)

    def wait_held(self, name: str, timeout: float = 60.0) -> None:
        """Wait until a request for the `hold` rule `name` is being held."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while name not in self._held:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the fake LLM never held {name!r}")
                self._changed.wait(left)

    def release(self, name: str) -> None:
        """Let the held answer of the rule `name` go (now, or as soon as it is asked for)."""
        with self._changed:
            self._released.add(name)
            self._changed.notify_all()

    # --- used by the handler ----------------------------------------------------------------

    def _hold(self, name: str) -> bool:
        """Wait until the rule `name` is released; False when the server is stopping."""
        with self._changed:
            self._held.add(name)
            self._changed.notify_all()
            while name not in self._released:
                if self._stopping.is_set():
                    return False
                self._changed.wait(0.1)
        return True

    def _pick(self, body: dict[str, Any]) -> tuple[int | None, dict[str, Any], int]:
        """The rule for a request, and the request's number among chat completions."""
        with self._lock:
            n = self._picked
            self._picked += 1
            for i, rule in enumerate(self.script["responses"]):
                limit = float("inf") if rule.get("repeat") else rule.get("times", 1)
                if self._uses[i] < limit and matches(rule.get("when"), body):
                    self._uses[i] += 1
                    return i, rule, n
        return None, self.script.get("default") or FALLBACK, n

    def _record(self, request: Request) -> Request:
        with self._changed:
            request.n = len(self.requests)
            self.requests.append(request)
            if self.log_path is not None:
                with self.log_path.open("a") as handle:
                    handle.write(json.dumps(asdict(request)) + "\n")
            self._changed.notify_all()
        return request

    def _sleep(self, seconds: float) -> bool:
        """Wait; False when the server is stopping."""
        return not self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLM  # set on the subclass FakeLLM.start() makes
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        fake = self.fake
        if self.path.rstrip("/").endswith("/models"):
            fake._record(Request(0, time.time(), "GET", self.path))
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [{"id": fake.model, "object": "model", "owned_by": "fake-llm"}],
                },
            )
        else:
            fake._record(Request(0, time.time(), "GET", self.path, status=404))
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        fake = self.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode(errors="replace")}
        if not self.path.rstrip("/").endswith("/chat/completions"):
            fake._record(Request(0, time.time(), "POST", self.path, status=404, body=body))
            self._send_json(404, {"error": {"message": "not found"}})
            return
        index, rule, n = fake._pick(body)
        if rule.get("delay") and not fake._sleep(float(rule["delay"])):
            return  # stopping
        if rule.get("hold") and not fake._hold(str(rule.get("name"))):
            return  # stopping
        request = Request(
            0, time.time(), "POST", self.path, rule=index, name=rule.get("name"), body=body
        )
        try:
            if rule.get("status"):
                request.status = int(rule["status"])
                fake._record(request)
                self._send_json(
                    request.status,
                    rule.get("body")
                    or {
                        "error": {
                            "message": f"fake-llm scripted error {request.status}",
                            "type": "server_error",
                            "code": None,
                        }
                    },
                )
                return
            answer = _Answer.of(rule, usage_for(n), body.get("model") or fake.model)
            request.response_id = answer.id
            request.usage = answer.usage_numbers
            request.tool_call_ids = [c["id"] for c in answer.calls]
            fake._record(request)
            if body.get("stream"):
                self._stream(answer, bool((body.get("stream_options") or {}).get("include_usage")))
            else:
                self._send_json(200, answer.completion())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (an abort)

    def _stream(self, answer: _Answer, include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for chunk in answer.chunks(include_usage):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@dataclass
class _Answer:
    """A successful answer, as one completion or as SSE chunks."""

    id: str
    model: str
    text: str
    calls: list[dict[str, Any]]
    finish: str
    usage_numbers: dict[str, int]
    created: int

    @classmethod
    def of(cls, rule: dict[str, Any], default_usage: dict[str, int], model: str) -> _Answer:
        calls = []
        for call in rule.get("tool_calls") or []:
            arguments = call.get("arguments", {})
            calls.append(
                {
                    "id": call.get("id") or "call_" + uuid.uuid4().hex[:10],
                    "name": call["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                }
            )
        return cls(
            id="chatcmpl-" + uuid.uuid4().hex[:12],
            model=model,
            text=rule.get("text") or "",
            calls=calls,
            finish=rule.get("finish_reason") or ("tool_calls" if calls else "stop"),
            usage_numbers={**default_usage, **(rule.get("usage") or {})},
            created=int(time.time()),
        )

    @property
    def usage(self) -> dict[str, Any]:
        u = self.usage_numbers
        return {
            "prompt_tokens": u["prompt_tokens"],
            "completion_tokens": u["completion_tokens"],
            "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": u["cached_tokens"]},
        }

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in self.calls
            ]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
            "usage": self.usage,
        }

    def chunks(self, include_usage: bool) -> list[dict[str, Any]]:
        def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
            return {
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        out = [chunk({"role": "assistant", "content": ""})]
        if self.text:
            step = max(1, len(self.text) // 3)
            out += [
                chunk({"content": self.text[i : i + step]}) for i in range(0, len(self.text), step)
            ]
        for index, call in enumerate(self.calls):  # as OpenAI does: head, then argument pieces
            half = len(call["arguments"]) // 2
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call["id"],
                                "type": "function",
                                "function": {
                                    "name": call["name"],
                                    "arguments": call["arguments"][:half],
                                },
                            }
                        ]
                    }
                )
            )
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {"index": index, "function": {"arguments": call["arguments"][half:]}}
                        ]
                    }
                )
            )
        out.append(chunk({}, self.finish))
        if include_usage:
            last = chunk(None)
            last["usage"] = self.usage
            out.append(last)
        return out


def main(argv: list[str] | None = None) -> int:
    """Serve a script until SIGINT/SIGTERM: `python -m tests.e2e.fake_llm --script F`."""
    parser = argparse.ArgumentParser(description="a scripted fake OpenAI-compatible server")
    parser.add_argument("--script", required=True, help="script JSON file")
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--log", help="append every request as a JSON line here")
    args = parser.parse_args(argv)
    fake = FakeLLM(Path(args.script), log_path=args.log).start()
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(fake.port))
        tmp.replace(args.port_file)
    print(fake.url, flush=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
