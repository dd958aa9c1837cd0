"""The layers picture in docs/architecture.md is drawn from the import contract that enforces
them (scripts/gen_layers.py): it cannot drift from the contract nor from the tree, and a
package no layer names is refused rather than left out of the picture."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import paths

sys.path.insert(0, str(paths.REPO / "scripts"))
import gen_layers


def test_the_picture_in_the_docs_is_the_one_the_contract_draws() -> None:
    done = subprocess.run(
        [sys.executable, str(paths.REPO / "scripts" / "gen_layers.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_layer_of_the_contract_is_drawn_top_first() -> None:
    drawn = gen_layers.picture()
    block = drawn.split("```\n")[1].split("\n```")[0]
    rows = [row for row in block.splitlines() if row.strip() != "\u2193"]
    layers = gen_layers.contract_layers(paths.REPO / "pyproject.toml")
    assert len(rows) == len(layers)
    for row, (_, members) in zip(rows, layers, strict=True):
        assert row.startswith(members[0]) and all(member in row for member in members), row


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    shutil.copy(paths.REPO / "pyproject.toml", root)
    shutil.copy(paths.REPO / "docs" / "architecture.md", root / "docs")
    shutil.copytree(
        paths.REPO / "otel_bridge", root / "otel_bridge", ignore=shutil.ignore_patterns("*.pyc")
    )
    return root


def test_a_package_no_layer_names_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "otel_bridge" / "loose").mkdir()
    (root / "otel_bridge" / "loose" / "__init__.py").write_text("")
    with pytest.raises(SystemExit, match="loose"):
        gen_layers.picture(root)


def test_a_module_added_changes_the_picture(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    before = gen_layers.picture(root)
    (root / "otel_bridge" / "decode" / "_more.py").write_text('"""More."""\n')
    assert gen_layers.picture(root) != before


#: Modules at the package root: the root is for what every layer shares (names, ids,
#: exceptions, the version); the pipeline's steps have homes of their own (decode/,
#: checkpoint/, feed/, export/...), so that the tree shows the pipeline.
MAX_ROOT_MODULES = 10


def test_the_package_root_holds_at_most_ten_modules() -> None:
    root = gen_layers.root_modules()
    assert len(root) <= MAX_ROOT_MODULES, root
