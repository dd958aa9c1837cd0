"""The package's boundaries, as import-linter contracts (pyproject.toml, [tool.importlinter]):
the core does no I/O, sources know nothing of spans, the command line and the application
layer use other packages through their faces, the layers import only downwards, and no
modules import each other in a circle.

Each is checked on the package as it is, and, so that a contract is known to bite, on a copy
with one import planted that breaks it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import paths

REPO = paths.REPO
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the repository's contracts, on the package under `root`."""
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_contract_holds() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 5 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("assembler/_state.py", "from ..export import SpanSink", "The core"),
        ("sources/_replay.py", "from ..assembler import Assembler", "Sources know nothing"),
        ("cli/_run.py", "from ..export._sink import SpanSink", "through their faces"),
        ("feed/_ledger.py", "from ..app import Daemon", "Layers"),
        ("decode/_wide.py", "from . import _lines", "No import circle"),
    ],
)
def test_a_planted_import_breaks_its_contract(
    tmp_path: Path, module: str, planted: str, contract: str
) -> None:
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(REPO / "pyproject.toml", copy)
    shutil.copytree(
        REPO / "otel_bridge", copy / "otel_bridge", ignore=shutil.ignore_patterns("__pycache__")
    )
    path = copy / "otel_bridge" / module
    text = path.read_text()
    head, rest = text.split("\nfrom ", 1)  # after the module's docstring and first imports
    path.write_text(f"{head}\n{planted}  # noqa\nfrom {rest}")
    result = lint_imports(copy)
    assert result.returncode != 0, result.stdout
    # the contract named is broken (an upward import may break the layers too)
    assert contract in result.stdout.split("Broken contracts")[1], result.stdout
