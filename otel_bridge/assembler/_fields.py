"""Typed readers for event fields, and small helpers for attribute maps.

Logs are untrusted: a field may be missing, null, or of another type than the schema says. Every
handler reads `event.data` through these, which give the value only when it has the expected
type (and, for text, is not empty), else None. A number no span can carry counts as missing too:
an integer beyond 64 bits (OTLP's intValue), a float that is not finite (1e999 in JSON is
infinity; NaN): the attribute is left out and the span kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._records import AttributeValue

__all__ = [
    "INVALID_VERSION",
    "compact",
    "read_int",
    "read_num",
    "read_obj",
    "read_str",
    "read_version",
    "snake_case",
]


def _get(mapping: Any, key: str) -> Any:
    """`mapping[key]`, None when absent or when `mapping` is not a mapping. Decoded JSON is
    a dict: that is checked first, as the check against the abstract `Mapping` is slow (it
    was about a tenth of replay's assembler time)."""
    if type(mapping) is dict:
        return mapping.get(key)
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def read_str(mapping: Any, key: str) -> str | None:
    """`mapping[key]` if it is a non-empty string."""
    value = _get(mapping, key)
    return value if isinstance(value, str) and value else None


#: What a version looks like: numbers and dots, maybe a `v` before them and a pre-release or
#: build after (`1.0.102`, `v1.0.103-beta.2`, `1.0.104+sha.5e1f`), at most 64 characters.
_VERSION = re.compile(r"v?[0-9]{1,9}(?:\.[0-9]{1,9}){0,4}(?:[-+][0-9A-Za-z][0-9A-Za-z.+-]{0,40})?")
#: A version field that holds something else (it comes from the log: it could hold anything).
INVALID_VERSION = "<invalid>"


def read_version(mapping: Any, key: str) -> str | None:
    """`mapping[key]` as a version (a span attribute and a metric label: the CLI's
    `copilotVersion`): itself when it has the shape of one, `INVALID_VERSION` when it is text
    of another shape (bounded: the field could hold a prompt or a token), None when absent.
    Checked once, where it is read, so that every use of it has the same bounded value."""
    value = read_str(mapping, key)
    if value is None:
        return None
    return value if len(value) <= 64 and _VERSION.fullmatch(value) else INVALID_VERSION


#: A float whose integer part fits a signed 64-bit integer is in [-2^63, 2^63); an int, in
#: [-2^63, 2^63 - 1] (written out in `read_int`: a global's lookup costs as much).
_FLOAT_INT64_MIN = -(2.0**63)
_FLOAT_INT64_END = 2.0**63


def read_int(mapping: Any, key: str) -> int | None:
    """`mapping[key]` as an int if it is a number (not a bool) within 64 bits; floats are
    truncated (NaN and infinities, which have no integer, are None)."""
    value = _get(mapping, key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        # NaN fails both comparisons; int() of it or of an infinity would raise
        return int(value) if _FLOAT_INT64_MIN <= value < _FLOAT_INT64_END else None
    return value if -9_223_372_036_854_775_808 <= value <= 9_223_372_036_854_775_807 else None


def read_num(mapping: Any, key: str) -> float | None:
    """`mapping[key]` as a float if it is a finite number (not a bool)."""
    value = _get(mapping, key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)  # an int beyond a double's range raises OverflowError
    except OverflowError:
        return None
    return number if number - number == 0.0 else None  # inf - inf and NaN are NaN


def read_obj(mapping: Any, key: str) -> dict[str, Any] | None:
    """`mapping[key]` if it is a JSON object (a nested `usage`, `result`, `error`...)."""
    value = _get(mapping, key)
    return value if isinstance(value, dict) else None


def compact(attributes: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The attributes without those whose value is None (a field the log did not have)."""
    return {k: v for k, v in attributes.items() if v is not None}


def snake_case(name: str) -> str:
    """`preCompactionTokens` -> `pre_compaction_tokens`."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
