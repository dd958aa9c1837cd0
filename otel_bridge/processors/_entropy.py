"""Long random strings: the entropy check, the scrubber's last resort for key material with no
known format and no context. A run of 32 or more token characters above `ENTROPY_THRESHOLD`
bits per character, with digits or mixed case, that is neither a name (`_names.py`) nor data
(longer than any key, a file in base64, a line of wrapped base64)."""

from __future__ import annotations

import math
import re
from collections import Counter

from ._names import key_in_path, wordlike

__all__ = ["CANDIDATE", "ENTROPY_THRESHOLD", "random_run", "shannon_entropy"]

#: Long tokens this random look like keys even without a known prefix (bits per character).
ENTROPY_THRESHOLD = 4.0
#: `=` only at the end (base64's padding): `name=value` is two tokens, not one.
CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-]{32,}=*")
#: A token of fewer distinct characters is below the threshold whatever it is (2^4 = 16).
_FEWEST_SYMBOLS = 16
#: Keys without a known shape are 20 to 100 characters (an AWS secret key 40, a 512-bit key
#: in base64 88); a longer random run is data: a file in base64 (an image in code, an archive
#: in a tool's output). Unless a path of names holds it as a directory (`key_in_path`).
_LONGEST_KEY = 200
#: How files start in base64: PNG, JPEG, GIF, PDF, ZIP (and jar, docx...), gzip, WOFF, XML,
#: SVG, RIFF (WAV, WebP), ELF, a Windows executable, Ogg. A run that starts so is a file.
_FILE_MAGIC = (
    "iVBORw0KGgo",
    "/9j/",
    "R0lGOD",
    "JVBERi0",
    "UEsDB",
    "H4sI",
    "d09GR",
    "PD94bWwg",
    "PHN2Zy",
    "UklGR",
    "f0VMR",
    "TVqQ",
    "T2dnUw",
)
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/=]+")


def shannon_entropy(text: str) -> float:
    """Bits per character of `text`."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


def random_run(match: re.Match[str]) -> str:
    """A `CANDIDATE` run redacted when it is key material: above the entropy threshold, with
    digits or mixed case, not a name (`wordlike`), not data (`_blob`); only the directory that
    is the key when it is one directory of a path of names (`key_in_path`)."""
    token = match.group(0)
    # Fewer than 16 distinct characters cannot make 4 bits per character (log2(15) <
    # 4): most hex ids, found in C before the count that `shannon_entropy` makes.
    if len(set(token)) < _FEWEST_SYMBOLS:
        return token
    if "REDACTED" in token or shannon_entropy(token) < ENTROPY_THRESHOLD:
        return token
    digits = any(c.isdigit() for c in token)
    mixed = any(c.isupper() for c in token) and any(c.islower() for c in token)
    if not (digits or mixed) or not any(c.isalpha() for c in token):
        return token
    if wordlike(token):  # a path or an identifier: /home/alice/src/acme-widgets_backend2024
        return token
    where = key_in_path(token)  # a key as a directory: only that part goes
    if where is None:
        if _blob(match):
            return token
        return "[REDACTED:high_entropy]"
    start, end = where
    return f"{token[:start]}[REDACTED:high_entropy]{token[end:]}"


def _blob(match: re.Match[str]) -> bool:
    """Is this random run data rather than a key: longer than any key (`_LONGEST_KEY`),
    starting as a file does in base64 (`_FILE_MAGIC`), or one line of base64 wrapped at a
    fixed width (`base64` wraps at 76, PEM at 64) with a line of the same length beside it."""
    token = match.group(0)
    if len(token) > _LONGEST_KEY or token.startswith(_FILE_MAGIC):
        return True
    text, start, end = match.string, match.start(), match.end()
    if not ((start == 0 or text[start - 1] == "\n") and (end == len(text) or text[end] == "\n")):
        return False
    before = text.rfind("\n", 0, max(0, start - 1)) + 1
    after = text.find("\n", end + 1)
    neighbours = (
        text[before : start - 1] if start else "",
        text[end + 1 : after if after >= 0 else len(text)] if end < len(text) else "",
    )
    return any(
        len(line) == len(token) and _BASE64_LINE.fullmatch(line) is not None for line in neighbours
    )
