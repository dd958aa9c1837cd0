"""Secret scrubbing for everything the bridge sends: span names, attributes, events, status
messages and metric labels.

Agent logs hold prompts, code, shell commands and, sooner or later, secrets. Content is off by
default (the assembler then puts only sizes and bounded names on spans), but names come from the
logs too (tool, model and agent names, error types), and with content on the text itself goes
out. So every string passes through one `Scrubber` on its way to any sink, whatever the
configuration: a secret becomes `[REDACTED:<kind>]`.

Pure: regular expressions only, no I/O.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from .. import semconv as sc
from .._records import AttributeValue, SpanEventRecord, SpanRecord
from .._words import task_title
from ._attribute_kinds import CONTENT_KIND
from ._entropy import CANDIDATE, random_run, shannon_entropy
from ._rule_checks import redact, secret_name
from ._scrubber_config import ScrubberConfig
from ._secret_patterns import CONTEXT
from ._token_formats import TOKENS, token_kind

__all__ = ["Scrubber", "shannon_entropy"]


#: A file path in text (`--paths`): two or more components after `/` (`~` first for a home
#: directory's), or a Windows path (`C:\Users\alice\src`, `C:/...`, `\\server\share\...`).
#: A component other than the last may hold single spaces (`/Users/alice/Library/Mobile
#: Documents/notes.md`): a space before the next separator is inside the path, not after it.
_SEGMENT = r"[\w.\-@+~]+(?: [\w.\-@+~]+)*"
_PATH = re.compile(
    rf"(?<![\w.:/~\\])~?(?:/{_SEGMENT}(?=/))+/[\w.\-@+~]+"
    rf"|(?<![\w\\])(?:[A-Za-z]:|\\\\[\w.\-]+)(?:[\\/]{_SEGMENT}(?=[\\/]))*[\\/][\w.\-@+~]+"
)

#: attribute values of these types hold no text: sent as they are
_PLAIN = frozenset({int, float, bool})
_CACHE_LIMIT = 8192  # distinct short strings remembered (names and ids repeat on every span)
_CACHEABLE = 256


class Scrubber:
    """Redacts secrets in strings, and in everything a span record carries."""

    def __init__(self, config: ScrubberConfig | None = None) -> None:
        self.config = config or ScrubberConfig()
        self._rules = [
            (rule.keywords, rule.compile(), functools.partial(redact, rule=rule))
            for rule in CONTEXT
        ]
        self._custom = [re.compile(pattern) for pattern in self.config.extra_patterns]
        self._cache: dict[str, str] = {}
        self._paths: dict[str, str] = {}  # a session's directories, on every span

    def text(self, value: str) -> str:
        """`value` with every secret replaced by [REDACTED:<kind>]."""
        if len(value) < 6:
            return value
        if len(value) <= _CACHEABLE:
            cached = self._cache.get(value)
            if cached is None:
                cached = self._scan(value)
                if len(self._cache) >= _CACHE_LIMIT:
                    self._cache.clear()
                self._cache[value] = cached
            return cached
        return self._scan(value)

    def _scan(self, value: str, rewrite_paths: bool = True) -> str:
        value = self._secrets(value)
        if self.config.entropy and CANDIDATE.search(value) is not None:
            value = CANDIDATE.sub(random_run, value)
        if rewrite_paths and self.config.paths != "keep":
            value = _PATH.sub(self._path, value)
        return value

    def _secrets(self, value: str) -> str:
        """`value` with the known token formats, the secrets its context gives away and the
        custom patterns redacted. The formats in one pass; each context rule only when one of
        its keywords is in the text (most are not in most texts), in order, the more specific
        first, each on what the rules before it left."""
        if TOKENS.search(value) is not None:
            value = TOKENS.sub(_token, value)
        low = value.lower()
        for keywords, pattern, replace_match in self._rules:
            for keyword in keywords:
                if keyword in low:
                    value = pattern.sub(replace_match, value)
                    break
        for custom in self._custom:
            value = custom.sub("[REDACTED:custom]", value)
        return value

    def _path(self, match: re.Match[str]) -> str:
        path = match.group(0)
        if self.config.paths == "basename":
            return _basename(path)
        return _path_hash(path)

    def path(self, path: str) -> str:
        """A value that is a path as a whole (a working directory), as `--paths` says: kept,
        its last part, or its hash (the same hash a path in text gets). It is scrubbed as a
        whole first, like any text: a secret used as a directory name (a URL with a password,
        a key with `/` in it) is redacted before the last part is taken (which could otherwise
        cut it in two) or the hash made. A checkpoint keeps a session's working directory
        with its secrets redacted in the same way, so what a restarted `run` exports is what
        an unbroken one does."""
        if self.config.paths == "keep":
            return self.text(path)
        done = self._paths.get(path)
        if done is None:
            scrubbed = self._scan(path, rewrite_paths=False)
            if self.config.paths == "hash":
                done = _path_hash(scrubbed)
            else:
                done = _basename(scrubbed.rstrip("/\\") or scrubbed)
            if len(self._paths) >= _CACHE_LIMIT:
                self._paths.clear()
            self._paths[path] = done
        return done

    def value(self, value: AttributeValue) -> AttributeValue:
        """An attribute value with its strings scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self.text(v) if isinstance(v, str) else v for v in value]
        return value

    def attributes(
        self, attributes: Mapping[str, AttributeValue], *, filtered: bool = True
    ) -> dict[str, AttributeValue]:
        """Attributes filtered by the allow/deny lists (unless not `filtered`), their values
        scrubbed; content ones (JSON messages and arguments: string by string, as decoded)
        also cut to size."""
        return self._attributes(attributes, filtered)[0]

    def _attributes(
        self, attributes: Mapping[str, AttributeValue], filtered: bool = True
    ) -> tuple[dict[str, AttributeValue], bool]:
        """`attributes`, and whether the result holds every key with the very same values
        (nothing left out or changed: `record` then keeps the record as it is)."""
        allow, deny = self.config.allow_attributes, self.config.deny_attributes
        if not filtered:
            allow, deny = None, frozenset()
        cache = self._cache
        out: dict[str, AttributeValue] = {}
        same = True
        scrubbed: AttributeValue
        # Every span passes here: the common cases (a number, a short or already seen string
        # under an ordinary key) are decided inline, without a call.
        for key, value in attributes.items():
            if (deny and key in deny) or (allow is not None and key not in allow):
                same = False
                continue
            if type(value) in _PLAIN:
                out[key] = value
                continue
            if key == sc.COPILOT_TASK_TITLE and isinstance(value, str):
                scrubbed = self._title(value, attributes)
            elif isinstance(value, str) and key not in CONTENT_KIND:
                if len(value) < 6:
                    out[key] = value
                    continue
                cached = cache.get(value)
                scrubbed = cached if cached is not None else self.text(value)
            else:
                scrubbed = self._attribute(key, value)
            out[key] = scrubbed
            if scrubbed is not value and scrubbed != value:  # the cache has its own copy
                same = False
        return out, same

    def _title(self, title: str, attributes: Mapping[str, AttributeValue]) -> str:
        """A task's title (`copilot.task.title`): the first words of its prompt, taken by the
        assembler before any redaction, so a secret whose context lies past the cut (`echo X |`
        without the `sudo -S` after it) or across lines the title joins (a here-document) would
        be cut off from what gives it away. So it is taken again, from the prompt redacted
        whole (`input.value`, on the same span), when it is the prompt's title; any other title
        is scrubbed as text."""
        prompt = attributes.get(sc.INPUT_VALUE)
        if isinstance(prompt, str) and task_title(prompt) == title:
            return self._cut(task_title(self.text(prompt)))
        return self._cut(self.text(title))

    def _attribute(self, key: str, value: AttributeValue) -> AttributeValue:
        """One attribute value scrubbed, as its key asks (content is cut to size)."""
        content = CONTENT_KIND.get(key)
        if content is None or not isinstance(value, str):
            return self.value(value)
        if content == "text":
            return self._cut(self.text(value))
        if content == "path":
            return self.path(value)
        scrubbed = self._json_content(value)
        if content == "json_cut":  # an unknown event's data: any size, cut as a whole
            return self._cut(scrubbed)
        return scrubbed

    def _cut(self, text: str) -> str:
        limit = self.config.content_max_chars
        return text if len(text) <= limit else text[:limit] + "...[truncated]"

    def _json_content(self, text: str) -> str:
        """Scrub JSON by its decoded strings: escapes would hide secrets from the patterns, and
        a value under a secret-sounding key is a secret whatever it looks like."""
        try:
            data = json.loads(text)
        except ValueError:
            return self._cut(self.text(text))

        def walk(node: object, key: str | None = None) -> object:
            if isinstance(node, str):
                if key is not None and len(node) >= 6 and secret_name(key):
                    return "[REDACTED:secret]"
                return self._cut(self.text(node))
            if isinstance(node, list):
                return [walk(item) for item in node]
            if isinstance(node, dict):
                return {self.text(str(k)): walk(v, str(k)) for k, v in node.items()}
            return node

        return json.dumps(walk(data), ensure_ascii=False)

    def record(self, record: SpanRecord, *, filtered: bool = True) -> SpanRecord:
        """A span record with its name, attributes, events and status message scrubbed, and
        the attribute filters applied unless not `filtered` (`SpanSink` then applies them for
        each destination that takes them: the console's lines for people do not); the record
        itself when that changes nothing (most spans: no secret, nothing denied)."""
        attributes, same = self._attributes(record.attributes, filtered)
        name = record.name
        title = record.attributes.get(sc.COPILOT_TASK_TITLE)
        if isinstance(title, str) and title and title in name:
            # a root span named after its task's title (`--root-name '{title}'`): the title
            # as `_title` redacted it
            name = name.replace(title, self._title(title, record.attributes))
        name = self.text(name)
        message = record.status_message
        message = self._cut(self.text(message)) if message else None  # "" is None too
        events = record.events
        if events:
            events, same_events = self._events(events, filtered)
            same = same and same_events
        links = record.links
        if links:
            links = tuple(
                replace(link, attributes=self.attributes(link.attributes, filtered=filtered))
                for link in links
            )
            same = False
        if (
            same
            and name == record.name
            and message == record.status_message
            # a dict and tuples, as those built here would be
            and type(record.attributes) is dict
            and type(record.events) is tuple
            and type(record.links) is tuple
        ):
            return record
        # Built field by field, not with dataclasses.replace (a third of the time it took);
        # tests/integration/test_privacy.py checks that every field of SpanRecord comes through.
        return SpanRecord(
            trace_id=record.trace_id,
            span_id=record.span_id,
            parent_span_id=record.parent_span_id,
            name=name,
            kind=record.kind,
            start_ns=record.start_ns,
            end_ns=record.end_ns,
            attributes=attributes,
            status=record.status,
            status_message=message,
            events=tuple(events),
            links=tuple(links),
            root_span_id=record.root_span_id,
        )

    def _events(
        self, events: tuple[SpanEventRecord, ...], filtered: bool
    ) -> tuple[tuple[SpanEventRecord, ...], bool]:
        """The events scrubbed, and whether that changed nothing (then: `events` itself)."""
        out = []
        same = True
        for event in events:
            name = self.text(event.name)
            attributes, same_attributes = self._attributes(event.attributes, filtered)
            if same_attributes and name == event.name and type(event.attributes) is dict:
                out.append(event)
            else:
                out.append(SpanEventRecord(name, event.timestamp_ns, attributes))
                same = False
        return (events, True) if same else (tuple(out), False)

    def records(self, records: Iterable[SpanRecord], *, filtered: bool = True) -> list[SpanRecord]:
        return [self.record(r, filtered=filtered) for r in records]

    def filtered(self, record: SpanRecord) -> SpanRecord:
        """A record scrubbed already (`record(..., filtered=False)`) with the attribute filters
        applied (on the span, its events and its links): what `record` would have given. The
        record itself when there are no filters."""
        if not self.config.filters:
            return record
        allow, deny = self.config.allow_attributes, self.config.deny_attributes

        def keep(attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
            return {
                key: value
                for key, value in attributes.items()
                if key not in deny and (allow is None or key in allow)
            }

        return replace(
            record,
            attributes=keep(record.attributes),
            events=tuple(
                SpanEventRecord(e.name, e.timestamp_ns, keep(e.attributes)) for e in record.events
            ),
            links=tuple(replace(link, attributes=keep(link.attributes)) for link in record.links),
        )


def _token(match: re.Match[str]) -> str:
    kind = token_kind(match)
    return match.group(0) if kind is None else f"[REDACTED:{kind}]"


def _basename(path: str) -> str:
    """The last part of a path, of a Windows path too (`C:\\Users\\alice\\src`: `src`)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _path_hash(path: str) -> str:
    """What `--paths hash` puts for a path, in text or as a value: the same for both."""
    return "path:" + hashlib.sha256(path.encode()).hexdigest()[:16]
