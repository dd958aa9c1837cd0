#!/usr/bin/env python3
"""A scripted fake OpenAI-compatible chat-completions server (stdlib only).

Made to drive the GitHub Copilot CLI offline (COPILOT_PROVIDER_BASE_URL=<url>),
but it speaks plain OpenAI `POST /v1/chat/completions` (streaming SSE or not).

Script
------
A script is a JSON object (or just a list, taken as its "responses")::

    {
      "responses": [ <response>, ... ],   # picked per request, see below
      "default":   <response>             # optional; when nothing matches
    }

For every request the server takes the FIRST response that is not yet used
up and whose ``when`` matches the request; it is then used up (unless it has
``"repeat": true``, or ``"times": N`` which allows N uses). Responses without
``when`` match any request, so a plain list is consumed strictly in order.
Because sub-agents call the model concurrently, use ``when`` to route by
request content instead of relying on order.

A response is an object with any of:

``text``         assistant text (streamed in a few chunks).
``tool_calls``   list of ``{"name", "arguments" (object or JSON string),
                 "id"?}``; several = parallel tool calls (index 0..n-1).
``status``       HTTP error status (e.g. 500) instead of an answer;
                 ``body`` is the error JSON (an OpenAI-style one by default).
``delay``        seconds to sleep before answering.
``usage``        ``{"prompt_tokens", "completion_tokens", "cached_tokens"}``
                 overriding the default usage numbers.
``finish_reason`` overrides "stop" / "tool_calls".
``name``         a label, written to the request log.
``when``         conditions, all of which must hold (strings are substrings,
                 case-sensitive):
    ``last_contains``       text of the last message (user/tool/...)
    ``last_role``           role of the last message ("user", "tool", ...)
    ``system_contains``     text of the system message(s)
    ``first_user_contains`` text of the first user message
    ``any_contains``        text of any message
    ``none_contains``       text of no message
    ``has_tool``            a tool of that name is offered in ``tools``
    ``lacks_tool``          no tool of that name is offered
    ``assistant_count``     exact number of assistant messages so far
                            (0 = first call of a conversation)
    ``stream``              true / false
Any of the string conditions may also be a list (all must hold).

Each request is appended as one JSON line to the log file (if given):
``{"n", "time", "path", "response": <index or null>, "name", "body"}``.

CLI::

    python fake_llm.py --script script.json [--port 0] [--port-file F]
                       [--log requests.jsonl]

prints the base URL (``http://127.0.0.1:PORT/v1``) and serves until killed.

Python::

    with FakeLLM(script, log_path="req.jsonl") as llm:
        env["COPILOT_PROVIDER_BASE_URL"] = llm.url
        ...
    llm.requests  # the logged request records
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeLLM", "load_script"]

DEFAULT_USAGE = {"prompt_tokens": 1234, "completion_tokens": 56, "cached_tokens": 100}
FALLBACK = {"text": "fake-llm: no scripted response matched this request.", "name": "fallback"}


def load_script(script: Any) -> dict:
    """Normalise a script given as dict, list, JSON text or file path."""
    if isinstance(script, (str, Path)):
        p = Path(script)
        script = json.loads(p.read_text()) if p.exists() else json.loads(str(script))
    if isinstance(script, list):
        script = {"responses": script}
    if not isinstance(script, dict):
        raise TypeError("script must be a dict, a list, JSON text or a path")
    script = dict(script)
    script["responses"] = [dict(r) for r in script.get("responses", [])]
    return script


def _text_of(content: Any) -> str:
    """Message content (string or list of parts) as plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                out.append(str(part.get("text", "")))
            else:
                out.append(str(part))
        return "\n".join(out)
    return json.dumps(content)


def _as_list(v: Any) -> list:
    return v if isinstance(v, list) else [v]


def matches(when: dict | None, body: dict) -> bool:
    """True when every condition of `when` holds for the request body."""
    if not when:
        return True
    msgs = body.get("messages") or []
    texts = [_text_of(m.get("content")) for m in msgs]
    system = "\n".join(t for m, t in zip(msgs, texts) if m.get("role") in ("system", "developer"))
    users = [t for m, t in zip(msgs, texts) if m.get("role") == "user"]
    last = msgs[-1] if msgs else {}
    last_text = texts[-1] if texts else ""
    tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    for key, want in when.items():
        if key == "last_contains":
            ok = all(w in last_text for w in _as_list(want))
        elif key == "last_role":
            ok = last.get("role") == want
        elif key == "system_contains":
            ok = all(w in system for w in _as_list(want))
        elif key == "first_user_contains":
            ok = bool(users) and all(w in users[0] for w in _as_list(want))
        elif key == "any_contains":
            ok = all(any(w in t for t in texts) for w in _as_list(want))
        elif key == "none_contains":
            ok = not any(w in t for w in _as_list(want) for t in texts)
        elif key == "has_tool":
            ok = all(w in tools for w in _as_list(want))
        elif key == "lacks_tool":
            ok = not any(w in tools for w in _as_list(want))
        elif key == "assistant_count":
            ok = sum(1 for m in msgs if m.get("role") == "assistant") == want
        elif key == "stream":
            ok = bool(body.get("stream")) == bool(want)
        else:
            raise ValueError(f"unknown 'when' condition: {key!r}")
        if not ok:
            return False
    return True


class FakeLLM:
    """Scripted fake OpenAI-compatible server. start()/stop()/url; a context manager."""

    def __init__(self, script: Any = None, host: str = "127.0.0.1", port: int = 0,
                 log_path: str | Path | None = None, model: str = "gpt-4.1"):
        self.script = load_script(script if script is not None else [])
        self.host, self.port = host, port
        self.log_path = Path(log_path) if log_path else None
        self.model = model
        self.requests: list[dict] = []
        self._uses = [0] * len(self.script["responses"])
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL for OpenAI clients, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> "FakeLLM":
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer((self.host, self.port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeLLM":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def unused(self) -> list[int]:
        """Indexes of scripted responses never used (for test assertions)."""
        return [i for i, n in enumerate(self._uses) if n == 0]

    # -- selection and logging ----------------------------------------------
    def _pick(self, body: dict) -> tuple[int | None, dict]:
        with self._lock:
            for i, r in enumerate(self.script["responses"]):
                limit = float("inf") if r.get("repeat") else r.get("times", 1)
                if self._uses[i] < limit and matches(r.get("when"), body):
                    self._uses[i] += 1
                    return i, r
        return None, self.script.get("default") or FALLBACK

    def _log(self, record: dict) -> None:
        with self._lock:
            record["n"] = len(self.requests)
            self.requests.append(record)
            if self.log_path:
                with self.log_path.open("a") as f:
                    f.write(json.dumps(record) + "\n")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLM  # set on the subclass made by FakeLLM.start()
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    # -- plumbing ------------------------------------------------------------
    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.fake._log({"time": time.time(), "method": "GET", "path": self.path})
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": self.fake.model, "object": "model", "owned_by": "fake"}]})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode(errors="replace")}
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.fake._log({"time": time.time(), "method": "POST", "path": self.path,
                            "body": body})
            self._send_json(404, {"error": {"message": "not found"}})
            return
        idx, resp = self.fake._pick(body)
        self.fake._log({"time": time.time(), "method": "POST", "path": self.path,
                        "response": idx, "name": resp.get("name"), "body": body})
        if resp.get("delay"):
            time.sleep(float(resp["delay"]))
        try:
            if resp.get("status"):
                status = int(resp["status"])
                self._send_json(status, resp.get("body") or {"error": {
                    "message": f"fake-llm scripted error {status}",
                    "type": "server_error", "code": None}})
            elif body.get("stream"):
                self._stream(resp, body)
            else:
                self._complete(resp, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # client went away (e.g. an abort)

    # -- answers ---------------------------------------------------------------
    def _parts(self, resp: dict) -> tuple[str, list[dict], str, dict]:
        text = resp.get("text") or ""
        calls = []
        for i, c in enumerate(resp.get("tool_calls") or []):
            args = c.get("arguments", {})
            calls.append({
                "index": i,
                "id": c.get("id") or "call_" + uuid.uuid4().hex[:10],
                "type": "function",
                "function": {"name": c["name"],
                             "arguments": args if isinstance(args, str) else json.dumps(args)},
            })
        finish = resp.get("finish_reason") or ("tool_calls" if calls else "stop")
        u = {**DEFAULT_USAGE, **(resp.get("usage") or {})}
        usage = {
            "prompt_tokens": u["prompt_tokens"],
            "completion_tokens": u["completion_tokens"],
            "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": u["cached_tokens"]},
        }
        return text, calls, finish, usage

    def _complete(self, resp: dict, body: dict) -> None:
        text, calls, finish, usage = self._parts(resp)
        msg: dict = {"role": "assistant", "content": text or None}
        if calls:
            msg["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        self._send_json(200, {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model") or self.fake.model,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": usage,
        })

    def _stream(self, resp: dict, body: dict) -> None:
        text, calls, finish, usage = self._parts(resp)
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        model = body.get("model") or self.fake.model
        created = int(time.time())

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(delta: dict | None, finish_reason=None, usage_obj=None) -> None:
            obj = {"id": cid, "object": "chat.completion.chunk", "created": created,
                   "model": model,
                   "choices": [] if delta is None else
                   [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            if usage_obj is not None:
                obj["usage"] = usage_obj
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        if text:
            step = max(1, len(text) // 3)
            for i in range(0, len(text), step):
                chunk({"content": text[i:i + step]})
        if calls:
            chunk({"tool_calls": calls})
        chunk({}, finish_reason=finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            chunk(None, usage_obj=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--script", required=True, help="script JSON file")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 = a free port")
    ap.add_argument("--port-file", help="write the chosen port here once listening")
    ap.add_argument("--log", help="append every request as a JSON line here")
    args = ap.parse_args(argv)

    fake = FakeLLM(args.script, host=args.host, port=args.port, log_path=args.log).start()
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(fake.port))
        tmp.replace(args.port_file)  # atomic: readers never see a half-written file
    print(fake.url, flush=True)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
