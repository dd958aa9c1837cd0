"""The version comes from the git tag: setuptools-scm makes the tag v9.8.7 the version 9.8.7,
and any other commit a development version (pyproject.toml); otel_bridge/_version.py reads what
the build wrote, without importlib.metadata; the deployment files name the released image,
which the changelog says (tests/releases.py)."""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import paths
from tests.releases import checkout_version, deployed_version

#: A development version: N commits after the last tag (or none), the commit, a date if dirty.
DEV = re.compile(r"\d+(\.\d+)*\.dev\d+\+g[0-9a-f]+(\.d\d{8})?")


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        [
            "git", "-C", str(repo), "-c", "user.name=otel-bridge",
            "-c", "user.email=dev@otel-bridge.invalid", "-c", "commit.gpgsign=false",
            "-c", "tag.gpgsign=false", *args,
        ],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone of the repository whose configuration is the working tree's (pyproject.toml,
    committed there), with no tag at its HEAD."""
    if shutil.which("git") is None or not (paths.REPO / ".git").exists():
        pytest.skip("not a git checkout")
    repo = tmp_path / "repo"
    _git(tmp_path, "clone", "-q", str(paths.REPO), str(repo))
    shutil.copy2(paths.REPO / "pyproject.toml", repo / "pyproject.toml")
    _git(repo, "commit", "-q", "--allow-empty", "-a", "-m", "the working tree's pyproject.toml")
    assert _git(repo, "tag", "--points-at", "HEAD").split() == []
    return repo


def test_the_tag_v9_8_7_is_the_version_9_8_7(clone: Path) -> None:
    before = checkout_version(clone)
    assert DEV.fullmatch(before) and before != "9.8.7", before
    _git(clone, "tag", "v9.8.7")
    assert checkout_version(clone) == "9.8.7"
    _git(clone, "commit", "-q", "--allow-empty", "-m", "one commit after the release")
    commit = _git(clone, "rev-parse", "--short", "HEAD").strip()
    after = checkout_version(clone)
    assert DEV.fullmatch(after) and after.startswith("9.8.8.dev1+g"), after
    assert commit.startswith(after.partition("+g")[2][:7]), (commit, after)


def test_this_checkout_has_a_version_of_its_tags() -> None:
    """Not pyproject's fallback_version (0.0: no git metadata found)."""
    if not (paths.REPO / ".git").exists():
        pytest.skip("not a git checkout")
    version = checkout_version()
    tags = subprocess.run(
        ["git", "-C", str(paths.REPO), "tag", "--list", "v*", "--points-at", "HEAD"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.split()  # fmt: skip
    assert f"v{version}" in tags or DEV.fullmatch(version), (version, tags)


# ---------------------------------------------------------------------- otel_bridge/_version.py
_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
sys.path.extend(sys.argv[2:])
from otel_bridge._version import __version__
print(__version__, "importlib.metadata" in sys.modules)
"""


def _copy_of_the_module(tmp_path: Path, written: str | None) -> Path:
    package = tmp_path / "otel_bridge"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy2(paths.PACKAGE / "_version.py", package / "_version.py")
    if written is not None:
        (package / "_scm_version.py").write_text(f"__version__ = {written!r}\n")
    return tmp_path


def test_the_version_is_the_one_the_build_wrote_without_importlib_metadata(
    tmp_path: Path,
) -> None:
    root = _copy_of_the_module(tmp_path, "9.8.7")
    # -S: no site, whose .pth files may import anything
    done = subprocess.run(
        [sys.executable, "-S", "-c", _PROBE, str(root)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["9.8.7", "False"]


def test_unbuilt_the_version_is_the_installed_distribution_s(tmp_path: Path) -> None:
    root = _copy_of_the_module(tmp_path, None)
    expected = (
        "import importlib.metadata as m\n"
        "try: print(m.version('otel-bridge'))\n"
        "except m.PackageNotFoundError: print('0+unknown')\n"
    )
    installed = subprocess.run(
        [sys.executable, "-c", expected], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()
    # -S with site-packages on the path: the installed distribution's metadata is found, but
    # not an editable install's finder (a .pth file), which would load this checkout's package
    # and its written version instead of the copy
    done = subprocess.run(
        [sys.executable, "-S", "-c", _PROBE, str(root), *site.getsitepackages()],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [installed, "True"]


# ---------------------------------------------------------------------- deployment files
def test_the_deployment_files_name_the_released_image() -> None:
    version = deployed_version()
    chart = yaml.safe_load((paths.REPO / "deploy/helm/otel-bridge/Chart.yaml").read_text())
    assert chart["appVersion"] == version
    kustomization = yaml.safe_load(
        (paths.REPO / "deploy/kubernetes/kustomization.yaml").read_text()
    )
    (image,) = [i for i in kustomization["images"] if i["name"] == "otel-bridge"]
    assert image["newTag"] == version


def test_the_released_version_is_the_newest_heading_or_the_announced_first() -> None:
    head = "# Changelog\n\n## [Unreleased]\n\nThe first release, 0.1.0: more.\n\n### Added\n\n- x\n"
    assert deployed_version(head) == "0.1.0"
    released = head + "\n## [0.2.0] - 2026-01-02\n\n- y\n\n## [0.1.0] - 2026-01-01\n\n- x\n"
    assert deployed_version(released.replace("The first release, 0.1.0", "Next")) == "0.2.0"
    with pytest.raises(AssertionError, match="names no first one"):
        deployed_version("# Changelog\n\n## [Unreleased]\n\nSoon.\n")
