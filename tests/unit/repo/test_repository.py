"""The repository stands on its own: nothing in it points at files only its authors have.

Docs and docstrings must not cite notes kept outside the repository (a `shared` directory beside
the checkout) or absolute paths of the machines it was written on; what a reader needs is in
docs/ (architecture.md, events.md). Links in README.md and docs/*.md must lead to files that
exist in the checkout.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

from tests import paths

REPO = paths.REPO

#: Tracked paths not scanned: real CLI logs kept as written (their `cwd` fields name the
#: directories they were recorded in), and npm's install directory.
_SKIPPED_PREFIXES = ("tests/fixtures/",)
_SKIPPED_PARTS = ("node_modules",)

#: A path that climbs out of the checkout into a sibling `shared` directory, or an absolute path
#: under the work or root directories of this machine (`/` then `work` or `root`).
_OUTSIDE = re.compile(r"\.\.[/]shared\b|(?<![\w.~$/-])[/](?:work|root)(?:/|\b)")
#: The parent directory, spelled so that this file's own examples are not pointers themselves.
_UP = ".." + "/"

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)"
)
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def _tracked_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True
    ).stdout
    return [name for name in out.decode("utf-8", "surrogateescape").split("\0") if name]


def _scanned(name: str) -> bool:
    return not name.startswith(_SKIPPED_PREFIXES) and not any(
        part in _SKIPPED_PARTS for part in name.split("/")
    )


def _text(path: Path) -> str | None:
    """The file as text, or None when it is binary or gone (deleted in the work tree)."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def _prose(markdown: str) -> str:
    """Markdown without fenced code blocks and code spans, where brackets are not links."""
    return _CODE_SPAN.sub("", _FENCE.sub("", markdown))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = _CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    anchors: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", markdown)):
        slug, n = _slug(heading), 1
        while slug in anchors:
            slug = f"{_slug(heading)}-{n}"
            n += 1
        anchors.add(slug)
    return anchors


def _links(markdown: str) -> list[str]:
    prose = _prose(markdown)
    return _INLINE_LINK.findall(prose) + _REFERENCE.findall(prose)


def test_no_tracked_file_points_outside_the_repository() -> None:
    offenders = []
    for name in _tracked_files():
        if not _scanned(name):
            continue
        text = _text(REPO / name)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            match = _OUTSIDE.search(line)
            if match:
                offenders.append(f"{name}:{number}: {match.group(0)!r} in {line.strip()[:120]}")
    assert not offenders, (
        "files point outside the repository (say it inline, or point to "
        "docs/architecture.md or docs/events.md):\n" + "\n".join(offenders)
    )


def test_relative_links_in_readme_and_docs_lead_to_existing_files() -> None:
    documents = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    assert len(documents) > 1
    broken = []
    for document in documents:
        markdown = document.read_text(encoding="utf-8")
        for link in _links(markdown):
            if not link or _SCHEME.match(link):
                continue  # http:, https:, mailto:...
            target, _, fragment = unquote(link).partition("#")
            where = f"{document.relative_to(REPO)}: {link}"
            path = (document.parent / target).resolve() if target else document
            if not path.is_relative_to(REPO):
                broken.append(f"{where} (outside the repository)")
            elif not path.exists():
                broken.append(f"{where} (no such file)")
            elif (
                fragment
                and path.suffix == ".md"
                and fragment.lower() not in _anchors(path.read_text(encoding="utf-8"))
            ):
                broken.append(f"{where} (no heading with that anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_checks_catch_what_they_are_for() -> None:
    """The patterns themselves: a pointer outside is found, ordinary text is not."""
    assert _OUTSIDE.search(f"see {_UP}shared/DESIGN.md")
    assert _OUTSIDE.search("cd " + "/" + "work/lab && npm install")
    assert _OUTSIDE.search('"cwd": "' + "/" + 'root"')
    for fine in (
        "docs/work/x",
        "https://example.com/root/a",
        "~/work",
        "$HOME/work",
        "as root",
        "/workspace",
        "/rooted",
        "/home/dev/project",
    ):
        assert not _OUTSIDE.search(fine), fine
    text = "[a](docs/x.md#y) `[b](no.md)`\n```\n[c](no.md)\n```\n[d]: e.md\n![i](img.png)"
    assert _links(text) == ["docs/x.md#y", "img.png", "e.md"]
    assert _anchors(
        "# Where a new event type goes\n## `run`: Delivery, ok?\n# Where a new event type goes"
    ) == {"where-a-new-event-type-goes", "run-delivery-ok", "where-a-new-event-type-goes-1"}
