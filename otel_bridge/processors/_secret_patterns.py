"""What a secret looks like: the patterns the `Scrubber` redacts, and the test that tells key
material from the names people give things.

Three families. Tokens with a known shape (a prefix, a length: GitHub, AWS, Slack, GitLab...).
Secrets given away by their context: a credential in a URL, a value assigned to a name that
says password, token, key..., and the many ways a command line takes one (`--password X`,
`mysql -pX`, `curl -u user:X`, `sshpass -p X`, `docker login -p X`, `redis-cli -a X`,
`IDENTIFIED BY 'X'`, a token as a URL's user). And, without either, long random tokens
(`Scrubber._entropy`), where `wordlike` keeps paths and identifiers out: what people name
(`/home/alice/src/acme-widgets_backend2024/services`, `InvoiceService2023`) changes between
lower case, upper case and digits rarely; random key material does at almost every other
character. A path that does hold key material (a key as a directory name) loses only that
part (`key_in_path`), not the directories people named around it.

Patterns whose match holds more than the secret (a flag, a command, a user name) mark the
secret with a named group: `dq`, `sq` (the inside of quotes) or `bare` (`_VALUE`), or `v`; only
that group is replaced, so that `mysql -u root -p[REDACTED:secret] shop` still says what ran.
"""

from __future__ import annotations

import itertools
import re

__all__ = ["LABELS", "PATTERNS", "SECRET_GROUPS", "TRIGGER", "key_in_path", "wordlike"]

#: A command-line value: quoted (the inside, spaces and all) or bare (up to a space, a quote
#: or a shell separator; at least 6 characters after a flag, as after `NAME=`). A value
#: starting with `$` (bare or in double quotes) is a variable's name, and one starting with
#: `-` the next flag: neither is a secret.


def _value(shortest: int) -> str:
    return (
        r"""(?:"(?P<dq>(?!\$)[^"\n]+)"|'(?P<sq>[^'\n]+)'|"""
        rf"""(?P<bare>(?![-$])[^\s"';|&]{{{shortest},}}))"""
    )


_VALUE = _value(6)
_ATTACHED = _value(1)  # where the next word can only be the password (-pSECRET, sshpass -p)
#: The rest of a command line after its command: up to the next command of a pipe or list.
_ARGS = r"[^\n|;&]*?"
#: Flags whose value is a secret: the flag's name ends with one of these words
#: (`--password`, `--db-password`, `--api-key`, `--client-secret`, `--auth-token`, `-pass`),
#: so `--password-stdin`, `--token-file PATH` and `--key-id ID` are left alone.
_SECRET_FLAG = (
    r"(?i)(?<![\w-])--?(?:[a-z0-9]+[-_])*"
    r"(?:password|passwd|passphrase|pass|passin|passout|pwd|token|secret|"
    r"api[-_]?key|access[-_]?key|secret[-_]?key|auth)(?:\s+|=)" + _VALUE
)

# Each pattern: (kind, regex). Order matters: the more specific first.
PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("github_token", r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{20,255})"),
    ("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("openai_key", r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}"),
    # GitLab personal, npm, PyPI and HashiCorp Vault tokens
    (
        "service_token",
        r"\b(?:glpat-[A-Za-z0-9_\-]{20,}|npm_[A-Za-z0-9]{36}\b|pypi-[A-Za-z0-9_\-]{50,}|"
        r"hvs\.[A-Za-z0-9_\-]{24,})",
    ),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
    ("bearer_token", r"(?i)\b(?:bearer|token|basic)\s+[A-Za-z0-9._~+/\-]{16,}=*"),
    # scheme://user:password@ (a user of brackets is a redaction already: left as it is)
    ("url_password", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@\[\]]*:(?P<v>[^\s@/]+)@"),
    # scheme://token@: a user name this long is a token (`git clone https://<token>@...`)
    ("url_password", r"(?i)\b[a-z][a-z0-9+.\-]*://(?P<v>[^\s:/@\[\]]{16,})@"),
    # the command lines that take a password as an argument
    ("command_line", _SECRET_FLAG),
    (
        "command_line",  # mysql -pSECRET (-p alone prompts; -P is the port)
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|"
        r"mariadb|mariadb-dump|mariadb-admin)\b" + _ARGS + r"\s-p(?=\S)" + _ATTACHED,
    ),
    ("command_line", r"\bsshpass\b" + _ARGS + r"\s-p\s*" + _ATTACHED),
    (
        "command_line",  # docker login -u USER -p SECRET, and the tools that copy it
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|az)\b"
        + _ARGS
        + r"\blogin\b"
        + _ARGS
        + r"\s-p\s*"
        + _ATTACHED,
    ),
    ("command_line", r"\bredis-cli\b" + _ARGS + r"\s-a\s*" + _ATTACHED),
    (
        "command_line",  # curl -u user:SECRET (-u user alone prompts)
        r"\b(?:curl|wget)\b"
        + _ARGS
        + r"\s(?:-u|--user|-U|--proxy-user)(?:\s+|=)[\"']?[^\s:\"']*:(?P<v>[^\s\"']+)",
    ),
    ("command_line", r"\bsmbclient\b" + _ARGS + r"\s(?:-U|--user)(?:\s+|=)[^\s%]*%(?P<v>\S+)"),
    # SQL: IDENTIFIED BY 'x', PASSWORD 'x'
    (
        "command_line",
        r"(?i)\b(?:identified\s+by|password)\s+(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)')",
    ),
    # `password X` (a .netrc line, a sentence): only a value with a digit, a symbol or a
    # capital after its first letter, so that "the password field" and "Password Manager" stay
    (
        "command_line",
        r"(?i)(?<![\w-])(?:password|passwd|passphrase)\s+"
        r"(?P<v>(?=[^\s\"']*[0-9!#%*+/=?@^_~\\]|[^\s\"']+(?-i:[A-Z]))(?![-$\[])[^\s\"']{6,})",
    ),
    (
        "command_line",
        r"(?i)\baws_(?:secret_access_key|session_token)\s+(?P<v>(?![-$])[^\s\"']{6,})",
    ),
    (
        "assignment",
        # a name that says secret, token, password (or PASS as a word: DB_PASS), pwd, key,
        # credential or auth, then = or :
        r"(?i)[\"']?[A-Za-z0-9_.\-]*(?:secret|token|passw(?:or)?d|passphrase|(?<![a-z])pass(?![a-z])|"
        r"pwd|"
        r"key|credential|auth)[A-Za-z0-9_.\-]*[\"']?"
        r"\s*(?:=|:)\s*[\"']?(?P<v>[^\s\"',;&]{6,})",
    ),
)
#: What a match of each kind is replaced by: [REDACTED:<label>].
LABELS = {"assignment": "secret", "command_line": "secret"}
#: The named groups that hold the secret in a match that holds more.
SECRET_GROUPS = ("v", "dq", "sq", "bare")

#: Something every built-in pattern needs: when a text has none of these, it has no secret the
#: patterns would find, and their scan is skipped (most attribute values: ids, names). Only a
#: high-entropy token can still be there (a run of 32 token characters).
TRIGGER = re.compile(
    r"(?i)gh[pousr]_|github_pat_|\bA[A-Z0-9]{19}\b|AIza|xox|sk[_\-]|rk_|BEGIN|eyJ|bearer|"
    r"basic|token|://|secret|pass|pwd|key|private|credential|auth|glpat-|npm_|pypi-|hvs\.|"
    r"mysql|mariadb|login|redis-cli|curl|wget|smbclient|identified"
)

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
