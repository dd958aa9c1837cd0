"""scripts/check_repo.py: the guard that keeps big and ignored files out of the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import paths

SCRIPT = paths.REPO / "scripts" / "check_repo.py"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


def _check(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, str(root)], capture_output=True, text=True, check=False
    )


def test_a_clean_repository_passes(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    (tmp_path / "small.txt").write_text("x" * 1000)
    _git(tmp_path, "add", ".")
    result = _check(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_a_tracked_ignored_file_and_a_big_file_fail(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "cli.js").write_text("// vendored")
    (tmp_path / "big.bin").write_bytes(b"\0" * 2048)
    _git(tmp_path, "add", "-f", ".")
    result = _check(tmp_path, "--max-bytes", "1024")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert any("node_modules/cli.js" in line and ".gitignore" in line for line in lines)
    assert any(line.startswith("check_repo: big.bin:") and "limit" in line for line in lines)
    assert len(lines) == 2


def test_outside_a_checkout_it_says_so(tmp_path: Path) -> None:
    result = _check(tmp_path)
    assert result.returncode == 2
    assert "not a git checkout" in result.stderr
