"""Sources turn bytes into events and know nothing of spans (docs/architecture.md): no module
under otel_bridge/sources imports the assembler, span records, processors, exporters, the
pipeline or the feeder. What events become is the feeder's (otel_bridge/feed), for every
source alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import paths

SOURCES = paths.PACKAGE / "sources"
#: What a source may not import (as otel_bridge.X, or relatively).
DOWNSTREAM = ("assembler", "_records", "processors", "export", "feed", "_pipeline", "_live")


def _imported(path: Path) -> set[str]:
    """The otel_bridge modules `path` imports, as dotted names below otel_bridge."""
    package = path.relative_to(SOURCES.parent.parent).with_suffix("").parts[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
                names.update(f"{module}.{alias.name}" for alias in node.names)
                names.add(module)
            elif node.module:
                names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n.removeprefix("otel_bridge.") for n in names if n.startswith("otel_bridge.")}


@pytest.mark.parametrize(
    "path", sorted(SOURCES.rglob("*.py")), ids=lambda p: str(p.relative_to(SOURCES))
)
def test_sources_know_nothing_of_spans(path: Path) -> None:
    wrong = {n for n in _imported(path) if n.split(".")[0] in DOWNSTREAM}
    if path == SOURCES / "__init__.py":
        # `otel_bridge.sources.LiveBridge`, where apps import it from: a lazy re-export of
        # the live bridge, which builds a whole pipeline (otel_bridge/app/_live.py).
        wrong -= {"_live", "_live.LiveBridge", "_live.parent_from_traceparent"}
    wrong = sorted(wrong)
    assert not wrong, f"{path.name} imports {wrong}"
