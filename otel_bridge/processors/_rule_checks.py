"""What a context rule is (`ContextRule`), and the checks that have the last say on a match
where a regular expression says it badly: a `.pgpass` line's host, a URL's user, a word's
start, an assignment whose value reads as code or whose name is about a secret rather than one,
a credential that is a word; and how a match is redacted (`redact`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "PLACEHOLDER",
    "SECRET_GROUPS",
    "ContextRule",
    "assigned",
    "credential",
    "pgpass_line",
    "redact",
    "secret_name",
    "userinfo",
    "word_start",
]


@dataclass(frozen=True, slots=True)
class ContextRule:
    """A secret found by what is around it.

    Attributes:
        kind: the label of its redaction.
        pattern: the regular expression (named groups `v`, `dq`, `sq`, `bare` hold the secret;
            without them the whole match is).
        keywords: lower-case strings one of which must be in the text for the rule to run (the
            cheap test that spares most texts most rules).
        ignorecase: match case-insensitively.
        check: a last say on a match (its text around it), for what a regular expression says
            badly; None: every match is a secret.
    """

    kind: str
    pattern: str
    keywords: tuple[str, ...]
    ignorecase: bool = False
    check: Callable[[re.Match[str]], bool] | None = None

    def compile(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.IGNORECASE if self.ignorecase else 0)


#: The host field before a `.pgpass` line's port: a name, `*`, or an IP, starting the line (or
#: a quoted, echoed or bracketed string).
_PGPASS_HOST = re.compile(
    r"(?:^|[\s\"'`=(>\[{,;|])(?:\*|[\w.-]*[A-Za-z][\w.-]*|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:]+\])\Z"
)


def pgpass_line(match: re.Match[str]) -> bool:
    """A `:port:database:user:password` match is a `.pgpass` line when a host comes before it."""
    start = match.start()
    return _PGPASS_HOST.search(match.string, max(0, start - 256), start) is not None


#: `key: value`, `key = 'x'`: a value of words (any case, no digit) under a name that says
#: only "key" or "auth" (a SQL column, a YAML map's key, a sort key, a role) is a name, not key
#: material.
_WORDS_ONLY = re.compile(
    r"(?:[a-z]{2,}|[A-Z][a-z]+|[A-Z]{2,}(?![a-z]))(?:[_.\-]?(?:[a-z]{2,}|[A-Z][a-z]+|[A-Z]{2,}(?![a-z])))*"
)
#: What follows the last secret word in a name that is about a secret, not one: `token_type`,
#: `key_id`, `SECRET_KEY_FILE`, `password_url`, `CREDENTIAL_PROVIDER` (and `tokens`, `keys`:
#: counts and lists of names, `_about_a_secret`).
_ABOUT = re.compile(
    r"(?i).*?[_.\-]?(?:types?|ids?|names?|counts?|len|length|size|files?|paths?|dir|"
    r"provider|usage|limit|max|min|kind|index|prefix|suffix|field|column|header|env|var|"
    r"spec|format|hint|url|uri|endpoint|source|ref|version|role|mode|policy|rotation|"
    r"expiry|expires|ttl|store|vault|manager|helper|command|cmd)"
)
#: A secret's word in a name (not `author`).
_SECRET_WORD = re.compile(r"(?i)secret|token|passw|passphrase|pwd|key|credential|auth(?!or)")


def _about_a_secret(name: str) -> bool:
    """Does what follows the last secret word of `name` make it a name about a secret rather
    than one (`_ABOUT`)? `tokens` and `keys` are counts and lists; `PWD` is the shell's working
    directory."""
    words = list(_SECRET_WORD.finditer(name))
    if not words:
        return False
    last = words[-1]
    if name.lower() in ("pwd", "oldpwd"):
        return True
    rest = name[last.end() :]
    if last.group(0).lower() in ("token", "key") and rest[:1] in ("s", "S"):
        rest = rest[1:]
        if not rest:
            return True
    return _ABOUT.fullmatch(rest) is not None


def secret_name(name: str) -> bool:
    """Does `name` (a key of JSON content) say its value is a secret, whatever it looks like:
    `password`, `api_key`, `clientSecret`, `auth_token`; not `author`, and not a name about a
    secret (`max_tokens`, `token_type`, `secret_key_id`, `secret_name`)."""
    return _SECRET_WORD.search(name) is not None and not _about_a_secret(name)


_STRONG = ("secret", "token", "pass", "pwd", "credential")


#: A value that reads as code rather than as a secret: a call or a subscript (`int(value)`,
#: `tuple[str, ...]`), a dotted name (`config.password`, `._credentials`), a literal that
#: opens a collection.
_CODE = re.compile(
    r"[(\[{<]|.*\w[(\[]|\.*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+[,;)\]]*\Z|\.[A-Za-z_]\w*\Z"
)


def assigned(match: re.Match[str]) -> bool:
    """`name = value` is a secret unless the value reads as code, the name is about a secret
    rather than one (`_ABOUT`: what follows its secret word), or the name says only "key" or
    "auth" (`_WORDS_ONLY`) and the value is words."""
    text, start = match.string, match.start("name")
    while start and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1  # the rule's match starts at the secret word: the whole name
    name = text[start : match.end("name")]
    value = match.group("v").rstrip(")]")  # `(KEY=x)`, `key: object)`: closing around it
    if _CODE.match(value):
        return False
    if _about_a_secret(name):
        return False
    strong = any(strong in name.lower() for strong in _STRONG)
    return strong or _WORDS_ONLY.fullmatch(value) is None


def credential(match: re.Match[str]) -> bool:
    """A bearer, basic or token credential has a digit or a symbol in it (a word after `token`
    in a sentence, an identifier, is none)."""
    credential = match.group("credential")
    return not credential.replace("_", "").replace("-", "").replace(".", "").isalpha()


#: The user before a scheme-less `:password@host`: a run of user-name characters starting the
#: text or after a space, a quote, `=`, `(`, `<`, `>` (not after `/`, `:`, `@`: a URL with a
#: scheme, an image digest, a path), and no scheme of its own (`mailto:a@b.c`).
_USER_BEFORE = re.compile(r"(?:^|[^\w.:/@%+~\\-])([A-Za-z0-9._%+~-]{1,64})\Z")
_NOT_USERS = frozenset({"mailto", "sip", "sips", "tel", "xmpp", "urn", "data"})


def userinfo(match: re.Match[str]) -> bool:
    start = match.start()
    user = _USER_BEFORE.search(match.string, max(0, start - 80), start)
    return user is not None and user.group(1).lower() not in _NOT_USERS


def word_start(match: re.Match[str]) -> bool:
    """The match starts a word: no letter, digit, `_` or `-` just before it (what `\\b` before
    the rule's first word would say, at the cost of the engine's skip-ahead)."""
    start = match.start()
    return start == 0 or not (match.string[start - 1].isalnum() or match.string[start - 1] in "_-")


#: Values that stand for a secret in examples and templates, not secrets: `password`,
#: `changeme`, `xxxx`, `****`, `<token>`, `${TOKEN}`, `{{ secret }}`, `%PASSWORD%`.
PLACEHOLDER = re.compile(
    r"(?i)(?:pass(?:word|wd)?|pwd|secret|token|key|api[-_]?key|changeme|changeit|example|"
    r"placeholder|redacted|dummy|x+|\*+|\.+|<[^<>]*>|\$\{?\w+\}?|\{\{[^{}]*\}\}|%\w+%)"
)
#: The named groups that hold the secret in a match that holds more.
SECRET_GROUPS = ("v", "dq", "sq", "bare")


def redact(match: re.Match[str], rule: ContextRule) -> str:
    """The match redacted: all of it, or only its secret group when it holds more (a flag, a
    command, a name: `SECRET_GROUPS`), so the text still says what it was; the match as it is
    when the rule's check refuses it, or when the secret is a placeholder (`user:password@host`
    in an example)."""
    if rule.check is not None and not rule.check(match):
        return match.group(0)
    redacted = f"[REDACTED:{rule.kind}]"
    groups = match.re.groupindex
    if groups:
        for name in SECRET_GROUPS:
            if name in groups and match.group(name) is not None:
                if PLACEHOLDER.fullmatch(match.group(name)):
                    return match.group(0)
                start, end = match.span(name)
                whole, offset = match.group(0), match.start()
                return whole[: start - offset] + redacted + whole[end - offset :]
    return redacted
