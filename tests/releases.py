"""The versions of the repository: the one setuptools-scm gives a checkout (from its git tags;
pyproject.toml), and the release the deployment files name by default (CHANGELOG.md).

The package's version comes from the git tag, so no file holds it; the Helm chart's appVersion
and the kustomization's image tag name an image that was released, and the changelog says which:
its newest release heading, or, before the first release, the version its Unreleased section
announces ("The first release, 0.1.0").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests import paths

__all__ = [
    "CHANGELOG",
    "RELEASE_HEADING",
    "checkout_version",
    "deployed_version",
    "release_headings",
]

CHANGELOG = paths.REPO / "CHANGELOG.md"
#: A release's heading: `## [X.Y.Z] - YYYY-MM-DD`.
RELEASE_HEADING = re.compile(
    r"^## \[(?P<version>\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.]+)?)\] - \d{4}-\d{2}-\d{2}$"
)
_FIRST_RELEASE = re.compile(r"\bThe first release, (?P<version>\d+\.\d+\.\d+)\b")


def release_headings(text: str | None = None) -> list[str]:
    """The versions of the changelog's release headings, newest first."""
    lines = (CHANGELOG.read_text() if text is None else text).splitlines()
    return [m["version"] for line in lines if (m := RELEASE_HEADING.match(line))]


def deployed_version(text: str | None = None) -> str:
    """The release the deployment files name: the changelog's newest, or before the first one
    the version its Unreleased section announces."""
    text = CHANGELOG.read_text() if text is None else text
    released = release_headings(text)
    if released:
        return released[0]
    unreleased = text.partition("## [Unreleased]")[2].partition("\n## ")[0]
    announced = _FIRST_RELEASE.search(unreleased)
    assert announced, "no release in CHANGELOG.md, and its Unreleased section names no first one"
    return announced["version"]


def checkout_version(root: Path = paths.REPO) -> str:
    """The version setuptools-scm gives the checkout at `root`, with its configuration there
    (pyproject.toml), as a build there would: what `otel-bridge --version` of that build says.
    The environment's pretended versions are left out (they would replace the tag's), and so is
    a git repository it names (GIT_DIR: the one at `root` is meant)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SETUPTOOLS_SCM_", "GIT_"))}
    done = subprocess.run(
        [sys.executable, "-m", "setuptools_scm"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"python -m setuptools_scm in {root}: {done.stderr[-2000:]}"
    return done.stdout.strip()
