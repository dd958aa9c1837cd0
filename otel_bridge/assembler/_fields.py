"""Typed readers for event fields, and small helpers for attribute maps.

Logs are untrusted: a field may be missing, null, or of another type than the schema says. Every
handler reads `event.data` through these, which give the value only when it has the expected
type (and, for text, is not empty), else None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._records import AttributeValue

__all__ = ["compact", "read_int", "read_num", "read_obj", "read_str", "snake_case"]


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


def read_int(mapping: Any, key: str) -> int | None:
    """`mapping[key]` as an int if it is a number (not a bool); floats are truncated."""
    value = _get(mapping, key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def read_num(mapping: Any, key: str) -> float | None:
    """`mapping[key]` as a float if it is a number (not a bool)."""
    value = _get(mapping, key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


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
