"""The pieces of an OTLP JSON span, as the SDK's file exporter writes them
(opentelemetry-exporter-otlp-json-file): ids in hex, the flags of a local or remote context,
and attribute values as KeyValues, with the same escaping and numbers as `json.dumps`. Both
encoders of `_otlp_json` (of SDK spans and of span records) use them.

Log lines keep the logger they have always had, otel_bridge.export._otlp_json.
"""

from __future__ import annotations

import base64
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.trace import SpanContext
from opentelemetry.util.types import Attributes

__all__ = [
    "LOCAL_FLAGS",
    "REMOTE_FLAGS",
    "encode_attributes",
    "flags_of",
    "quote",
    "span_id_hex",
    "trace_id_hex",
]

logger = logging.getLogger("otel_bridge.export._otlp_json")

_HAS_IS_REMOTE = 0x100  # SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
_IS_REMOTE = 0x200  # SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
LOCAL_FLAGS = str(_HAS_IS_REMOTE)
REMOTE_FLAGS = str(_HAS_IS_REMOTE | _IS_REMOTE)
_KEYS_REMEMBERED = 4096  # attribute keys whose encoded prefix is kept

#: The string escaper `json.dumps` uses (ensure_ascii, in C when available).
quote: Callable[[Any], str] = json.encoder.encode_basestring_ascii


def flags_of(context: SpanContext | None) -> str:
    """The flags of a span's or a link's context: whether it is remote, always said."""
    if context and context.is_remote:
        return REMOTE_FLAGS
    return LOCAL_FLAGS


def trace_id_hex(trace_id: int) -> str:
    return trace_id.to_bytes(length=16, byteorder="big", signed=False).hex()


def span_id_hex(span_id: int) -> str:
    return span_id.to_bytes(length=8, byteorder="big", signed=False).hex()


#: attribute key -> '{"key":"<key>","value":' (or '{"value":' for an empty key)
_key_prefixes: dict[str, str] = {}


def encode_attributes(attributes: Attributes) -> str:
    """The JSON array of KeyValues, "" for none."""
    if not attributes:
        return ""
    out = []
    prefixes = _key_prefixes
    for key, value in attributes.items():
        prefix = prefixes.get(key)
        if prefix is None:
            if len(prefixes) >= _KEYS_REMEMBERED:
                prefixes.clear()
            prefix = prefixes[key] = '{"key":' + quote(key) + ',"value":' if key else '{"value":'
        # the common cases inline: a string, an int, a bool
        kind = type(value)
        if kind is str:
            out.append(prefix + '{"stringValue":' + quote(value) + "}}")
        elif kind is int:
            out.append(prefix + '{"intValue":"' + int.__repr__(value) + '"}}')
        elif kind is bool:
            out.append(prefix + ('{"boolValue":true}}' if value else '{"boolValue":false}}'))
        elif kind is float:
            out.append(prefix + '{"doubleValue":' + _double(value) + "}}")
        else:
            try:
                encoded = _any(value)
            except Exception as error:  # as the SDK: the attribute is left out, logged
                logger.exception("Failed to encode key %s: %s", key, error)
                continue
            out.append(prefix + encoded + "}")
    return "[" + ",".join(out) + "]" if out else ""


def _any(value: Any) -> str:
    """The JSON of an AnyValue, as the SDK's encoder makes it of any attribute value."""
    if value is None:
        return "{}"
    if isinstance(value, bool):
        return '{"boolValue":true}' if value else '{"boolValue":false}'
    if isinstance(value, str):
        return '{"stringValue":' + quote(value) + "}"
    if isinstance(value, int):
        return '{"intValue":' + quote(str(value)) + "}"
    if isinstance(value, float):
        return '{"doubleValue":' + _double(value) + "}"
    if isinstance(value, bytes):
        encoded = base64.b64encode(value).decode("utf-8") if value else ""
        return '{"bytesValue":' + quote(encoded) + "}"
    if isinstance(value, Sequence):
        values = [_any(item) for item in value]
        if not values:
            return '{"arrayValue":{}}'
        return '{"arrayValue":{"values":[' + ",".join(values) + "]}}"
    if isinstance(value, Mapping):
        pairs = []
        for k, v in value.items():
            name = str(k)
            pairs.append(
                ('{"key":' + quote(name) + ',"value":' if name else '{"value":') + _any(v) + "}"
            )
        if not pairs:
            return '{"kvlistValue":{}}'
        return '{"kvlistValue":{"values":[' + ",".join(pairs) + "]}}"
    raise TypeError(f"Invalid type {type(value)} of value {value}")


def _double(value: Any) -> str:
    """As the SDK (and json.dumps of its value): the JSON mapping's names for what JSON numbers
    cannot be, else `repr`."""
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return float.__repr__(value)
