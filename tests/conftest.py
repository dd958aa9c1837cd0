"""Shared fixtures: a clean environment for every test, the OTLP receiver, span-tree helpers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_bridge import _metrics
from tests.otlp_receiver import otlp_receiver  # noqa: F401  (a fixture, used by name)

FIXTURES = Path(__file__).parent / "fixtures"

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
