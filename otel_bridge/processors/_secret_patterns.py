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
character.

Patterns whose match holds more than the secret (a flag, a command, a user name) mark the
secret with a named group: `dq`, `sq` (the inside of quotes) or `bare` (`_VALUE`), or `v`; only
that group is replaced, so that `mysql -u root -p[REDACTED:secret] shop` still says what ran.
"""

from __future__ import annotations

import itertools
import re

__all__ = ["LABELS", "PATTERNS", "SECRET_GROUPS", "TRIGGER", "wordlike"]

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
