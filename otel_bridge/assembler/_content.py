"""Content policy: what text from the log a span may carry (docs/privacy.md).

Prompts, answers, tool arguments and results always get their size; with a hash salt, also a
salted SHA-256 (so equal texts can be matched without being sent); the text itself only with
content capture on. Error messages from the log are content too: kept only with capture on.
Cutting to `--content-max-chars` happens on export, after secrets are redacted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from .. import semconv as sc
from .._records import AttributeValue
from .._words import task_title

__all__ = ["ContentPolicy", "as_json", "as_messages", "task_title"]


class ContentPolicy:
    """Puts text from the log on spans, as far as the configuration allows.

    Args:
        capture: content capture on (`--capture-content`).
        hash_salt: salt of the SHA-256 of each text; None: no hashes.
    """

    __slots__ = ("capture", "hash_salt")

    def __init__(self, capture: bool, hash_salt: str | None) -> None:
        self.capture = capture
        self.hash_salt = hash_salt

    def put(
        self,
        attributes: dict[str, AttributeValue],
        prefix: str,
        text: str,
        content_key: str,
        encode: Callable[[str], str] | None = None,
        length: int | None = None,
    ) -> None:
        """`<prefix>.length` always (`length`, when `text` is the kept part of a longer one);
        `<prefix>.sha256` with a salt; `content_key` (the text, through `encode` if given) only
        with content capture on."""
        attributes[prefix + sc.LENGTH_SUFFIX] = len(text) if length is None else length
        if self.hash_salt is not None:
            digest = hashlib.sha256(
                f"{self.hash_salt}\x00{text}".encode("utf-8", "replace")
            ).hexdigest()
            attributes[prefix + sc.SHA256_SUFFIX] = digest
        if self.capture:
            attributes[content_key] = encode(text) if encode is not None else text

    def show(
        self, attributes: dict[str, AttributeValue], value_key: str, mime_key: str, text: str
    ) -> None:
        """A text where OpenInference viewers (Arize Phoenix) look for a span's input or output:
        `value_key` (`input.value`, `output.value`) with `mime_key` text/plain; only with content
        capture on. The same text as the GenAI attribute beside it, not encoded as messages:
        Phoenix shows `input.value` / `output.value` of a trace's root span as the trace's
        input and output columns (docs/viewers.md)."""
        if self.capture and text:
            attributes[value_key] = text
            attributes[mime_key] = sc.MIME_TEXT

    def opt_in(self, text: str | None) -> str | None:
        """An error message from the log (it can quote the request): only with capture on."""
        return text if self.capture else None


def as_messages(role: str) -> Callable[[str], str]:
    """An encoder to GenAI semantic-convention message JSON:
    [{role, parts: [{type: text, content}]}]."""

    def encode(text: str) -> str:
        return json.dumps(
            [{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False
        )

    return encode


def as_json(value: Any) -> str:
    """Tool arguments as text: a string as it is, anything else as sorted JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)
