"""Shared fixtures (a clean environment for every test, the OTLP receiver) and the tiers.

Tiers by directory: tests/unit/<package>/ (in this process, no server), tests/integration/
(subprocesses, servers, podman, Prometheus, Jaeger), tests/e2e/ (the real Copilot CLI); each test
gets the marker of its tier, and those of the test extras its module needs (EXTRAS), so that
`-m` selects a part: `-m unit`, or scripts/test_oldest.sh's `-m "not e2e and not sdk and not
phoenix and not grafana and not import_linter"`. A module whose markers that expression can only
reject is not even imported (pytest_ignore_collect), since its extra may be missing there.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_bridge.metrics import _recorder as _metrics
from tests import paths
from tests.otlp_receiver import otlp_receiver  # noqa: F401  (a fixture, used by name)

FIXTURES = paths.FIXTURES

#: The markers of tiers, by the directory under tests/ (a test module left at the top would be
#: an integration test).
TIERS = {"unit": "unit", "integration": "integration", "e2e": "e2e"}
TOP_LEVEL_TIER = "integration"

#: The markers of test extras (pyproject.toml's `test` extra beyond the package's own
#: dependencies), by module. A test that needs one in a module that does not carries the marker
#: itself (`@pytest.mark.sdk`).
EXTRAS = {
    "tests/unit/sources/test_live.py": ("sdk",),
    "tests/e2e/test_sdk_live.py": ("sdk",),
    "tests/e2e/test_sdk_steering.py": ("sdk",),
    "tests/integration/test_phoenix.py": ("phoenix",),
    "tests/unit/deploy/test_dashboards.py": ("grafana",),
    "tests/unit/deploy/test_deploy_dashboards.py": ("grafana",),
    "tests/integration/test_prometheus_e2e.py": ("grafana",),
    "tests/integration/deploy/test_deploy_compose.py": ("grafana",),
    "tests/unit/repo/test_import_contracts.py": ("import_linter",),
    "tests/integration/deploy/test_deploy_helm_validate.py": ("kubernetes_validate",),
}
_missing = [name for name in EXTRAS if not (paths.REPO / name).is_file()]
assert not _missing, f"conftest.EXTRAS names files that are not there: {_missing}"


def _markers_of(path: Path) -> set[str]:
    """The markers a file or directory under tests/ gives all its tests."""
    parts = path.resolve().relative_to(paths.REPO / "tests").parts
    if not parts:
        return set()
    if len(parts) == 1 and parts[0].endswith(".py"):
        marks = {TOP_LEVEL_TIER}
    else:
        marks = {TIERS[parts[0]]} if parts[0] in TIERS else set()
    marks.update(EXTRAS.get(path.resolve().relative_to(paths.REPO).as_posix(), ()))
    return marks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in sorted(_markers_of(item.path)):
            item.add_marker(name)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out a directory or module none of whose tests `-m` could select, whatever markers
    its tests add to the directory's and module's own (every combination is tried): so
    `-m "not grafana"` runs where the Grafana SDK is not installed. None: pytest decides."""
    expression = config.getoption("markexpr")
    if not expression or collection_path.name == "conftest.py":
        return None
    if not (collection_path.is_dir() or collection_path.name.startswith("test_")):
        return None
    try:
        base = _markers_of(collection_path)
    except ValueError:  # outside tests/
        return None
    if not base:
        return None
    # pytest's own parser of `-m` (a private module, _pytest.mark.expression, pytest 9: the
    # matcher is called with each identifier the expression names)
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(expression)
    others = sorted(set(_registered(config)) - base)
    for size in range(len(others) + 1):
        for more in itertools.combinations(others, size):
            if compiled.evaluate(base.union(more).__contains__):
                return None
    return True


def _registered(config: pytest.Config) -> list[str]:
    """The marker names of [tool.pytest.ini_options] markers."""
    return [line.split(":", 1)[0].strip() for line in config.getini("markers")]


# Recording a metric the catalogue does not define raises in tests (production drops it,
# counts it and logs it once): a name missing from the catalogue is a bug to see, not a loss.
_metrics.STRICT = True


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Strip OTEL_*, COPILOT_* and TRACEPARENT (a traced CI job's: every trace would hang
    under it) so that the developer's shell never changes a result."""
    for name in list(os.environ):
        if name.startswith(("OTEL_", "COPILOT_")) or name == "TRACEPARENT":
            monkeypatch.delenv(name)
    yield


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
