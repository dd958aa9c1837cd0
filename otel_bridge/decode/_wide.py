"""Lines with more JSON values (or containers) than their size holds as text: refused unread.

Why: a value decoded into Python takes far more memory than its text. A 16 MB line of
`[1,1,1,...]` is 8 million ints in a list, some 290 MB; five such lines (the cap on a line is
16 MiB) pushed a replay from 35 MB to 396 MB, and the allocator kept most of it. A Copilot log
has nothing of that shape: what is large in it is text (a tool's output, a system prompt), one
string however long. So a long line is counted first, in C: its commas and colons (one per
value in an array, one per key) against its length; one with more than a value per
`BYTES_PER_VALUE` bytes is counted again without its strings (a CSV inside a tool's output is
full of commas, all inside one string), and refused when it still has too many. Brackets that
open a container count too: a line nested a million deep is a million lists, and the tolerant
path (`decode/_lines.py`) would copy it twice before its decoder gave up at about 1,000 levels.
"""

from __future__ import annotations

import re

__all__ = ["BYTES_PER_VALUE", "WIDE_CHECK_BYTES", "too_wide"]

#: Lines shorter than this are not checked: at most some 20 times their size when decoded.
WIDE_CHECK_BYTES = 1 << 20
#: A line may hold a value per this many bytes: decoded, some 60 bytes a value (the object and
#: its slot in a list or dict), so at most about twice the line.
BYTES_PER_VALUE = 32

# A JSON string, escapes included (the unrolled form: linear, no backtracking).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def too_wide(line: bytes | bytearray) -> bool:
    """True when `line`, decoded, would hold more than a value per `BYTES_PER_VALUE` bytes."""
    budget = len(line) // BYTES_PER_VALUE
    if _marks(line, 0, len(line)) <= budget:
        return False  # every long line a CLI writes: one long string
    inside = 0  # counted in place: no copy of a line of megabytes
    for string in _STRING.finditer(line):
        inside += _marks(line, *string.span())
    return _marks(line, 0, len(line)) - inside > budget


def _marks(line: bytes | bytearray, start: int, end: int) -> int:
    """Commas and colons (a value in an array, a key), and brackets that open an array or an
    object (a container: the values of a line nested a million deep), in `line[start:end]`."""
    return sum(line.count(mark, start, end) for mark in (b",", b":", b"[", b"{"))
