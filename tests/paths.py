"""Where things are, for tests at any depth of tests/ (unit/<package>/, integration/, e2e/):
the repository root, the recorded captures and the package's sources."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
GOLDEN = REPO / "tests" / "golden"
PACKAGE = REPO / "otel_bridge"
