"""deploy/kubernetes/gen_prometheusrule.py reads its arguments: `--help` printed nothing and
wrote the file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests import paths

SCRIPT = Path("deploy") / "kubernetes" / "gen_prometheusrule.py"
ALERTS = Path("deploy") / "prometheus" / "alerts.yml"
OUTPUT = SCRIPT.parent / "prometheusrule.yaml"


def _copy(tmp_path: Path) -> Path:
    """The script and alerts.yml in a tree of their own: what it writes lands there."""
    for part in (SCRIPT, ALERTS):
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(paths.REPO / part, tmp_path / part)
    return tmp_path


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_help_prints_help_and_writes_nothing(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    result = _run(root, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: gen_prometheusrule.py") and "--check" in result.stdout
    assert not (root / OUTPUT).exists()


def test_an_unknown_argument_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    assert _run(root, "--bogus").returncode == 2
    assert not (root / OUTPUT).exists()


def test_it_writes_the_file_and_check_then_passes(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    assert _run(root, "--check").returncode == 1  # nothing written yet
    assert _run(root).returncode == 0
    assert (root / OUTPUT).read_text() == (paths.REPO / OUTPUT).read_text()
    assert _run(root, "--check").returncode == 0
