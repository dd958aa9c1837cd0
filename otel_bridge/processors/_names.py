"""Names or key material: the test that tells the names people give things (paths,
identifiers) from random key material, for the entropy check (`_entropy.py`). What people name
(`/home/alice/src/acme-widgets_backend2024/services`, `InvoiceService2023`) changes between
lower case, upper case and digits rarely; random key material does at almost every other
character. A path that does hold key material (a key as a directory name) loses only that
part (`key_in_path`), not the directories people named around it."""

from __future__ import annotations

import itertools
import re

__all__ = ["key_in_path", "wordlike"]

_RUN = re.compile(r"[A-Za-z0-9]+")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
#: Below this share of changes (lower to upper case, letter to digit and back) between
#: adjacent characters, a run is words; random alphanumerics change at about 45% of them.
_WORDLIKE_CHANGES = 0.2
_LONG_RUN = 16


def wordlike(token: str) -> bool:
    """Does `token` read as names (a path, an identifier) rather than key material?

    Its alphanumeric runs, hex ones aside (ids and digests: not secrets by their look), change
    between lower case, upper case and digits at fewer than 20% of their adjacent pairs, and
    so does every long run on its own (a random segment inside a path of words still counts
    as random). Upper to lower case is no change: CamelCase costs one per word."""
    pairs = changes = 0
    for run in _RUN.findall(token):
        if _HEX.fullmatch(run):
            continue
        count = _changes(run)
        if len(run) >= _LONG_RUN and count >= _WORDLIKE_CHANGES * (len(run) - 1):
            return False
        pairs += len(run) - 1
        changes += count
    return changes < _WORDLIKE_CHANGES * pairs if pairs else True


def _changes(run: str) -> int:
    count = 0
    for a, b in itertools.pairwise(run):
        if (a.islower() and b.isupper()) or (a.isdigit() != b.isdigit()):
            count += 1
    return count


#: What separates the words of a name people gave (`acme-widgets_backend2024`), among the
#: characters of a token the entropy check looks at (a `.`, `~` or space ends such a token):
#: never in a base64 key that holds `/` (url-safe base64, which has them, has no `/`).
_NAME_SEPARATORS = frozenset("-_")
#: A run of 8 or more letters and digits in a name: lower-case or capitalised words, digits at
#: the end (`backend2024`, `InvoiceService2023`).
_WORDS = re.compile(r"(?:[a-z]+|[A-Z][a-z]+)+[0-9]*")


def _words(run: str) -> bool:
    """A run of letters and digits of a name: short, hex (an id), or words with few capitals
    (a random run rarely matches: a capital every 2 or 3 characters, digits anywhere)."""
    if len(run) < 8 or _HEX.fullmatch(run):
        return True
    return _WORDS.fullmatch(run) is not None and 4 * sum(c.isupper() for c in run) <= len(run)


def _named(part: str) -> bool:
    """A path component that is surely a name: a word (`src`, `Users`, `go`) or words joined
    by separators (`acme-widgets_backend2024`, `api-gateway_v3`) whose runs of letters and
    digits are words (`_words`). A piece of a key cut by a `/` is seldom one word, and a piece
    glued to a word (`upload-ALRhvcqGUNUjdCWFuxu`) seldom words; a name of letters and digits
    with no separator (`InvoiceService2023`) is not surely one."""
    if _NAME_SEPARATORS.isdisjoint(part):  # one word, or a capitalised one (`go`, `Users`)
        return len(part) >= 2 and part.isalpha() and part[1:].islower()
    if len(part) < 3 or not wordlike(part):
        return False
    return any(c.isalpha() for c in part) and all(map(_words, _RUN.findall(part)))


def _random(part: str) -> bool:
    """A path component that reads as key material: not words, or with base64's `+` or `=`."""
    return len(part) >= 3 and (not wordlike(part) or "+" in part or "=" in part)


def key_in_path(token: str) -> tuple[int, int] | None:
    """Where the key material is in `token` (a run of characters the entropy check found
    random) when it is one directory of a path of names: a key as a directory name
    (`/home/alice/src/<key>/services`). None when it is not: fewer than two components, or a
    component other than that one, not surely a name (a base64 key holds `/`, so it is no
    directory name, and its pieces may look like anything); then all of `token` is key
    material."""
    parts = token.split("/")
    others = [i for i, part in enumerate(parts) if part and not _named(part)]
    if len(others) != 1 or len(parts) - parts.count("") < 3 or not _random(parts[others[0]]):
        return None
    index = others[0]
    start = sum(len(part) + 1 for part in parts[:index])
    return start, start + len(parts[index])
