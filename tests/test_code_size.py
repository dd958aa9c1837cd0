"""The command line and the application layer stay readable: no function over 60 lines (but
declarative tables), no class over 300, no module over 400."""

from __future__ import annotations

import ast
from pathlib import Path

import otel_bridge

PACKAGE = Path(otel_bridge.__file__).parent
CHECKED = [*sorted((PACKAGE / "cli").glob("*.py")), *sorted((PACKAGE / "app").glob("*.py"))]


def _sizes(kinds: tuple[type, ...]) -> list[tuple[str, int]]:
    found = []
    for path in CHECKED:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, kinds):
                assert node.end_lineno is not None
                found.append((f"{path.name}:{node.name}", node.end_lineno - node.lineno + 1))
    return found


def test_no_function_over_60_lines() -> None:
    long = [(name, n) for name, n in _sizes((ast.FunctionDef, ast.AsyncFunctionDef)) if n > 60]
    assert long == []


def test_no_class_over_300_lines() -> None:
    assert [(name, n) for name, n in _sizes((ast.ClassDef,)) if n > 300] == []


def test_no_module_over_400_lines() -> None:
    long = [(p.name, n) for p in CHECKED if (n := len(p.read_text().splitlines())) > 400]
    assert long == []
