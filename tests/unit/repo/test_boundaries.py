"""Boundaries the code keeps, checked on its source: the assembler's modules import one another
without a circle (type-only imports included: they tie modules together as much as run-time
ones), and other packages reach the assembler through its package face only."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests import paths

PACKAGE = paths.PACKAGE


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[str]:
    """Every module `path` imports, anywhere in it (under `if TYPE_CHECKING:` and in
    functions too), as absolute names; `from . import x` names the module `x` when it is one."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Modules under `root` -> the modules under `root` they import (a package's import of
    its own submodules' parent, implied by Python, is not an edge)."""
    modules = {module_name(path): path for path in root.rglob("*.py")}
    return {
        name: {target for target in imports_of(path) if target in modules and target != name}
        for name, path in modules.items()
    }


def cycles(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [{"a", "b", "c"}]


def test_the_assemblers_modules_import_one_another_without_a_circle() -> None:
    found = cycles(import_graph(PACKAGE / "assembler"))
    assert found == [], f"import circles: {[sorted(c) for c in found]}"


def private_imports(package: str, face: str) -> set[tuple[str, str]]:
    """(importer, module) for each module of `otel_bridge` outside `package` that imports a
    module of `package` other than `face` (the package's face)."""
    modules = {module_name(path) for path in PACKAGE.rglob("*.py")}
    inside = {name for name in modules if name == package or name.startswith(f"{package}.")}
    return {
        (module_name(path), target)
        for path in PACKAGE.rglob("*.py")
        if module_name(path) not in inside and module_name(path) != face
        for target in imports_of(path)
        if target in inside and target != face
    }


def test_other_packages_reach_the_assembler_through_its_face_only() -> None:
    """`from otel_bridge.assembler import X`, never `from otel_bridge.assembler._x import X`:
    what the assembler's modules are called stays its own business."""
    assert private_imports("otel_bridge.assembler", "otel_bridge.assembler") == set()


def test_the_metric_catalogue_is_reached_through_metrics_only() -> None:
    found = private_imports("otel_bridge.metrics._catalogue", "otel_bridge.metrics._recorder")
    assert found == set()


def test_a_private_import_is_found() -> None:
    found = private_imports("otel_bridge.assembler._root_name", "otel_bridge.assembler")
    assert ("otel_bridge.assembler._config", "otel_bridge.assembler._root_name") in found
