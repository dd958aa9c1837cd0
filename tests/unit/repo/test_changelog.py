"""CHANGELOG.md, the package version and the release tags agree: a release is the tag
v<version>, the version of otel_bridge/_version.py, and a heading of the changelog."""

from __future__ import annotations

import re
import subprocess

from otel_bridge._version import __version__
from tests import paths

CHANGELOG = paths.REPO / "CHANGELOG.md"
_RELEASE = re.compile(
    r"^## \[(?P<version>\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.]+)?)\] - \d{4}-\d{2}-\d{2}$"
)


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
        assert _RELEASE.match(heading), f"not '## [X.Y.Z] - YYYY-MM-DD': {heading!r}"
    for line in text.splitlines():
        if line.startswith("### "):
            assert line[4:] in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_every_release_tag_has_its_heading() -> None:
    released = {m["version"] for h in _headings() if (m := _RELEASE.match(h))}
    assert [t for t in _tags() if t[1:] not in released] == []


def test_a_tagged_commit_is_the_version_it_says() -> None:
    """At a release tag, the package's version is the tag's: what `otel-bridge --version`,
    the wheel's name and the image's tag say."""
    for tag in _tags("--points-at", "HEAD"):
        assert tag == f"v{__version__}"
        assert any(h.startswith(f"## [{__version__}] - ") for h in _headings())
