"""CHANGELOG.md and the release tags agree: a release is the tag v<version>, whose version
setuptools-scm makes the package's (pyproject.toml; tests/unit/repo/test_version.py), and a
heading of the changelog."""

from __future__ import annotations

import subprocess

from tests import paths
from tests.releases import CHANGELOG, RELEASE_HEADING, release_headings


def _headings() -> list[str]:
    return [line for line in CHANGELOG.read_text().splitlines() if line.startswith("## ")]


def _tags(*args: str) -> list[str]:
    result = subprocess.run(
        ["git", "-C", str(paths.REPO), "tag", "--list", "v*", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.split() if result.returncode == 0 else []


def test_the_changelog_keeps_its_format() -> None:
    text = CHANGELOG.read_text()
    assert text.startswith("# Changelog\n") and "keepachangelog.com" in text
    headings = _headings()
    assert headings and headings[0] == "## [Unreleased]", headings[:1]
    for heading in headings[1:]:
        assert RELEASE_HEADING.match(heading), f"not '## [X.Y.Z] - YYYY-MM-DD': {heading!r}"
    for line in text.splitlines():
        if line.startswith("### "):
            assert line[4:] in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_every_release_tag_has_its_heading() -> None:
    released = set(release_headings())
    assert [t for t in _tags() if t[1:] not in released] == []


def test_a_tagged_commit_has_its_heading() -> None:
    """At a release tag, the changelog says that release (the version is the tag's: what
    `otel-bridge --version`, the wheel's name and the image's tag say)."""
    for tag in _tags("--points-at", "HEAD"):
        assert tag[1:] in release_headings(), f"{tag} at HEAD: no heading ## [{tag[1:]}] - <date>"
