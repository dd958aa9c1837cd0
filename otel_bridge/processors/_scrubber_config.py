"""What the scrubber is told beyond its built-in patterns (`--redact-pattern`, the attribute
allow and deny lists, `--paths`, the entropy check, the content cut), checked when made: a bad
pattern or a contradiction is a configuration error at start, not a surprise in the output."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_CONTENT_MAX_CHARS", "ScrubberConfig"]

#: With content capture on, each content attribute is cut to this many characters.
DEFAULT_CONTENT_MAX_CHARS = 8192


@dataclass(frozen=True, slots=True)
class ScrubberConfig:
    """What to scrub beyond the built-in patterns.

    Attributes:
        extra_patterns: more regular expressions; a match becomes [REDACTED:custom].
        deny_attributes: attribute keys never sent at all.
        allow_attributes: if given, only these attribute keys are sent (and only scrubbed).
        paths: what to do with file paths in content: "keep", "basename", or "hash".
        entropy: also redact long high-entropy tokens (likely keys without a known prefix).
        content_max_chars: content attributes (prompts, answers, tool arguments and results,
            error messages) are cut to this many characters, after redaction: a cut never
            splits a secret so that half of it escapes.
    """

    extra_patterns: Sequence[str] = ()
    deny_attributes: frozenset[str] = frozenset()
    allow_attributes: frozenset[str] | None = None
    paths: str = "keep"
    entropy: bool = True
    content_max_chars: int = DEFAULT_CONTENT_MAX_CHARS

    def __post_init__(self) -> None:
        if self.paths not in ("keep", "basename", "hash"):
            raise ValueError("paths must be keep, basename or hash")
        if self.content_max_chars < 1:
            raise ValueError("content_max_chars must be positive")
        for pattern in self.extra_patterns:
            re.compile(pattern)  # a bad pattern is a configuration error, raised here
        both = self.deny_attributes & (self.allow_attributes or frozenset())
        if both:
            # sent only if allowed, never if denied: nothing of it would go, and with every
            # allowed key denied nothing at all would, without a word
            raise ValueError(
                f"both allowed and denied: {', '.join(sorted(both))} "
                "(--allow-attribute sends only the attributes it names; deny others, or leave "
                "it out of the allowed ones)"
            )

    @property
    def filters(self) -> bool:
        """Whether the allow or deny list leaves attributes out."""
        return bool(self.deny_attributes) or self.allow_attributes is not None
