"""Every environment variable name the bridge reads is a constant of `otel_bridge._env`, and a
value the bridge interprets itself is read there once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_bridge
from otel_bridge import _env
from otel_bridge.sources import LiveBridge

PACKAGE = Path(otel_bridge.__file__).parent
#: A variable name, or the start of a family of them (`OTEL_EXPORTER_OTLP_`): the whole string
#: is such a name. Prose that mentions a variable ("OTEL_SDK_DISABLED=true: ...") is not one.
#: Also the HTTP clients' names the OTLP/HTTP transport reads as requests does.
NAME = re.compile(
    r"^((OTEL|COPILOT|XDG)_[A-Z0-9_]*|TRACEPARENT|NO_PROXY|no_proxy|(REQUESTS|CURL)_CA_BUNDLE)$"
)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """The string constants of a module, f-strings' literal parts included."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_no_module_but_env_writes_a_variable_name() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_env.py" and path.parent == PACKAGE:
            continue
        for line, text in _strings(ast.parse(path.read_text(), str(path))):
            if NAME.match(text):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r}")
    assert found == []


def test_env_declares_each_name_once() -> None:
    names = [value for key, value in vars(_env).items() if key.isupper() and isinstance(value, str)]
    assert len(names) == len(set(names))
    assert all(NAME.match(name) for name in names)


def test_the_content_switch_is_read_in_one_place() -> None:
    """The GenAI content variable is read by `_env.content_capture` only: the command line and
    LiveBridge cannot disagree on what turns content on."""
    readers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_env.py" and path.parent == PACKAGE:
            continue
        for key, line in _keys_read(ast.parse(path.read_text(), str(path))):
            if key.endswith(("CONTENT_ENV", "OTEL_CAPTURE_MESSAGE_CONTENT")):
                readers.append(f"{path.name}:{line}: {key}")
    assert readers == []


def _keys_read(tree: ast.AST) -> list[tuple[str, int]]:
    """The names used as the key of a `.get(...)` call or of a subscript."""
    keys: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            keys += node.args[:1] if node.func.attr == "get" else []
        elif isinstance(node, ast.Subscript):
            keys.append(node.slice)
    return [
        (key.attr if isinstance(key, ast.Attribute) else key.id, key.lineno)
        for key in keys
        if isinstance(key, ast.Attribute | ast.Name)
    ]


def test_content_capture_reads_the_variable_as_the_instrumentations_do() -> None:
    name = _env.OTEL_CAPTURE_MESSAGE_CONTENT
    assert _env.content_capture({name: " True "})
    assert not _env.content_capture({name: "1"})
    assert not _env.content_capture({})


def test_live_bridge_takes_content_capture_from_the_same_reader() -> None:
    exporter = InMemorySpanExporter()
    bridge = LiveBridge([exporter], environ={_env.OTEL_CAPTURE_MESSAGE_CONTENT: " TRUE"})
    try:
        assert bridge.assembler.config.capture_content
    finally:
        bridge.close()
