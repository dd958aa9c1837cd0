"""Whether each session-state root can be listed: said in the log once per change, and asked
by /readyz.

Why: a root the bridge's user cannot read (a hostPath owned by another uid, a home directory
of mode 0700) lists as empty, so `run` followed nothing, said nothing and answered ready. A
root that does not exist yet is normal (the CLI makes `session-state` at its first session):
watched for, and ready meanwhile; a root that cannot be read is not, and /readyz says so with
the path and what to do, until it can be read (looked at again at every rescan).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MISSING", "RootHealth", "root_problem"]

logger = logging.getLogger("otel_bridge.sources._tail")

#: What is said of a root that does not exist (yet): not a fault, the bridge waits for it.
MISSING = "does not exist yet; watching for it to appear"


def root_problem(root: Path) -> str | None:
    """Why `root` cannot be listed, or None when it can (opening it is enough: nothing is read)."""
    try:
        with os.scandir(root):
            return None
    except FileNotFoundError:
        return MISSING
    except NotADirectoryError:
        return "is not a directory: pass a session-state directory (or the COPILOT_HOME above it)"
    except PermissionError as exc:
        return (
            f"cannot be read ({exc.strerror}): give the user that runs the bridge read and "
            "execute permission on it"
        )
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"


class RootHealth:
    """The problem of each root, as last looked at (`check`)."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self._roots = list(roots)
        self.problems: dict[Path, str] = {}

    def check(self) -> None:
        """Look at every root again; say what changed (a new problem, or one gone)."""
        for root in self._roots:
            why = root_problem(root)
            if why == self.problems.get(root):
                continue
            if why is None:
                del self.problems[root]
                logger.info("%s can be read now", root)
            else:
                self.problems[root] = why
                logger.warning("%s %s", root, why)

    @property
    def unreadable(self) -> list[tuple[Path, str]]:
        """Roots that exist but cannot be listed, with why: the bridge cannot do its work."""
        return [(root, why) for root, why in self.problems.items() if why != MISSING]
