"""Expected span trees drawn once, in tests/golden/outlines/<name>.txt, for the shapes several
tests expect of different inputs (a capture, a CLI version, the live SDK, the end-to-end run):
one file to read, and to change when the span model changes.

Each line is a span as `spantree.outline` (and the end-to-end `Tree.outline`) writes it: its
name (a turn with its `#index`), indented two spaces per level under its parent. Written by
hand from the span model (docs/architecture.md), never from the bridge's output. No import of
the package: the end-to-end tests read the bridge's output only as OTLP.
"""

from __future__ import annotations

from tests import paths


def outline(name: str) -> list[str]:
    """The expected outline `name` (tests/golden/outlines/<name>.txt), line by line."""
    return (paths.GOLDEN / "outlines" / f"{name}.txt").read_text().splitlines()
