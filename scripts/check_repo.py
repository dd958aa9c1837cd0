"""Fail when the repository tracks what it must not: big files, or files .gitignore excludes.

Why: a vendored `node_modules/` (with a 197 MB binary whose license forbids redistribution)
once slipped in with an ordinary commit and made every clone 123 MB. Git's own ignore rules do
not stop `git add -f` or a file tracked before its pattern was added; this check does.

    python scripts/check_repo.py [--max-bytes N]

Exit status 0 when the tree is clean, 1 with one line per offending file otherwise, 2 when this
is not a git checkout.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

MAX_BYTES = 5 * 1024 * 1024


def _git(root: Path, *args: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def problems(root: Path, max_bytes: int = MAX_BYTES) -> list[str]:
    """One message per tracked file that is over `max_bytes` or matches an ignore rule."""
    found = []
    for path in _git(root, "ls-files", "-z", "--cached", "--ignored", "--exclude-standard"):
        found.append(f"{path}: tracked, but .gitignore excludes it (git rm --cached {path})")
    for path in _git(root, "ls-files", "-z"):
        try:
            size = (root / path).lstat().st_size
        except FileNotFoundError:
            continue  # deleted in the work tree, not yet committed
        if size > max_bytes:
            found.append(
                f"{path}: {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB "
                "limit for tracked files (install it at test time instead)"
            )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-bytes", type=int, default=MAX_BYTES)
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).parent.parent)
    args = parser.parse_args()
    try:
        found = problems(args.root, args.max_bytes)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"check_repo: {args.root} is not a git checkout: {exc}", file=sys.stderr)
        return 2
    for message in found:
        print(f"check_repo: {message}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
