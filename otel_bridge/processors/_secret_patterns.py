"""What a secret looks like: the rules the `Scrubber` redacts by, and the test that tells key
material from the names people give things.

Four families, each a rule that generalises rather than a list of commands seen once:

- Tokens with a known shape (`TOKENS`): a vendor's prefix and body (GitHub, GitLab, Slack, AWS,
  Google, Stripe, OpenAI, Anthropic, npm, PyPI, Vault, DigitalOcean, SendGrid... the formats of
  public secret-scanning rule sets), JWTs and PEM private key blocks. One pass of one regular
  expression: every branch starts with a literal, so the engine skips ahead to the characters
  a token can start with; which kind a match is, is found only for the (rare) matches.
- Secrets given away by their context (`CONTEXT`): the value of any option whose name says
  password, pass, passwd, pwd, secret, token, key, auth, credential, passphrase (`--db-password
  X`, `--api-key=X`, `-storepass X`, `-passin pass:X`), the short flags of the tools whose flag
  is a password (`mysql -pX`, `redis-cli -a X`, `ldapsearch -w X`, `zip -P X`, `sshpass -p X`,
  `sqlcmd -P X`, `ssh-keygen -N X`...), the user information of any URL with or without a
  scheme (`user:pass@host`), a name that says secret assigned a value (`NAME=value`,
  `name: value`, a header), `.pgpass` and `.netrc` lines, and what is written into a command that
  reads a secret from its standard input (`echo X | sudo -S`, `docker login --password-stdin`,
  `chpasswd`, `passwd --stdin`, here-strings and here-documents). Each rule runs only when one of
  its keywords is in the text (lower-cased once), as gitleaks does.
- Without either, long random tokens (`Scrubber._entropy`), where `wordlike` keeps paths and
  identifiers out: what people name (`/home/alice/src/acme-widgets_backend2024/services`,
  `InvoiceService2023`) changes between lower case, upper case and digits rarely; random key
  material does at almost every other character. A path that does hold key material (a key as a
  directory name) loses only that part (`key_in_path`), not the directories people named
  around it.

Rules whose match holds more than the secret (a flag, a command, a user name) mark the secret
with a named group: `dq`, `sq` (the inside of quotes) or `bare` (`_value`), or `v`; only that
group is replaced, so that `mysql -u root -p[REDACTED:secret] shop` still says what ran.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "CONTEXT",
    "LABELS",
    "PLACEHOLDER",
    "SECRET_GROUPS",
    "TOKENS",
    "ContextRule",
    "key_in_path",
    "secret_name",
    "token_kind",
    "wordlike",
]


# --- values ----------------------------------------------------------------------------------


def _value(shortest: int, guard: str = "") -> str:
    """A command-line value: quoted (the inside, spaces and all) or bare (up to a space, a quote
    or a shell separator, at least `shortest` characters). A value starting with `$` is a
    variable's name, one starting with `-` the next flag, one starting with `[` a redaction
    already: none is a secret. `guard`, a lookahead, may refuse more (a path after `--key`)."""
    return (
        rf"""(?:"(?P<dq>(?![$\[]){guard}[^"\n]+)"|'(?P<sq>(?!\[){guard}[^'\n]+)'|"""
        rf"""(?P<bare>(?![-$\[]){guard}[^\s"';|&]{{{shortest},}}))"""
    )


_VALUE = _value(6)
_FLAG_VALUE = _value(4)  # after a flag that says password: a short one is still one
_ATTACHED = _value(1)  # where the next word can only be the password (-pSECRET, sshpass -p)
#: The rest of a command line after its command: up to the next command of a pipe or list.
_ARGS = r"[^\n|;&]*?"
#: Files and paths, which `--key`, `--client-key`, `--private-key` usually take: not secrets.
_KEY_FILE = (
    r"(?![/~.{\[])(?![^\s\"']*\.(?:pem|key|pub|crt|cer|der|p12|pfx|jks|json|asc|gpg|txt|"
    r"ya?ml|ppk|kdbx)(?![\w.]))"
)

#: Words that, ending an option's name, say its value is a secret: `--password`,
#: `--db-password`, `-storepass`, `-passin`, `--auth-token`, `--client-secret`,
#: `--credentials`. So `--password-stdin`, `--token-file`, `--key-id` and `--max-tokens` are
#: left alone (their names end otherwise). A `pass` after `by`, `com`, `sur` is no password.
_SECRET_WORDS = (
    r"(?:password|passwd|passphrase|pass(?:in|out)?|pwd|pw|token|secret|credentials?|"
    r"auth(?:key)?|api[-_]?key|apikey)"
)
_FLAG = (
    r"-(?<![\w-]-)-?(?:[a-z0-9]+[-_.])*[a-z0-9]*?(?<!by)(?<!com)(?<!sur)(?<!over)(?<!under)"
    + _SECRET_WORDS
    + r"(?:\s+|=)"
    + _FLAG_VALUE
)
#: `--key X` and the kinds of key that are secret (`--access-key`, `--license-key`...): a value
#: that is a file is not (`--key ./tls.key`, `--private-key ~/.ssh/id_ed25519`).
_KEY_FLAG = (
    r"-(?<![\w-]-)-?(?:[a-z0-9]+[-_])*(?:(?:access|secret|private|account|license|master|"
    r"storage|shared|encryption|signing|app|subscription|consumer|admin|sas|client|ssh)[-_]?)?"
    r"key(?:\s+|=)" + _value(6, _KEY_FILE)
)

# --- commands that read a secret from their standard input -------------------------------------

#: In one command of a pipe or list: a command that reads a password from its standard input.
_STDIN_SINK = (
    r"(?:\bsudo\b[^\n|;&]*?\s-[A-Za-z]*S\b|\bsudo\b[^\n|;&]*?\s--stdin\b|"
    r"--pass(?:word)?-stdin\b|--stdin\b|(?<![/\w.-])ch(?:g)?passwd\b|(?<![/\w.-])passwd\b|"
    r"\bhtpasswd\b[^\n|;&]*?\s-[A-Za-z]*i|--with-token\b|"
    r"\b(?:vault|boundary)\s+login\b[^\n|;&]*?\s-(?=\s|$)|\bkinit\b|"
    r"-pass(?:in|out)?\s+(?:stdin|fd:0)\b|--passphrase-fd[=\s]+0\b|--key-file[=\s]+-(?=\s|$)|"
    r"\bsmbpasswd\b|\bcryptsetup\b|\bsecret-tool\s+store\b|/dev/stdin\b|"
    r"\bmysql_config_editor\b|\bexpect\b)"
)
#: `echo X |`, `printf '%s' X |`, `yes X |` into such a command; not a variable (`echo "$PW"`)
_ECHO_INTO = (
    r"\b(?:echo|printf|yes)\b(?![ \t]+(?:-[A-Za-z]+[ \t]+)*[\"']?\$\{?\w+\}?[\"']?[ \t]*\|)"
    r"[ \t]+(?P<v>[^\n|;&]+?)[ \t]*\|(?!\|)(?=" + _ARGS + _STDIN_SINK + ")"
)
#: such a command fed by a here-string: `sudo -S <<< X cmd`, `chpasswd <<< 'u:X'`
_HERE_STRING = _STDIN_SINK + _ARGS + r"<<<[ \t]*" + _ATTACHED
#: ... or by a here-document: its body, up to the closing word or the end of the text (a cut
#: one). Its lines may have been joined by spaces (a title made of a prompt's first words).
_OPENER_END = r"(?:[^\n]*\n|\s)"  # the rest of the opening line; a space when joined
_HERE_BODY = r"(?P<v>[\s\S]*?)(?:\s+(?P=tag)(?![\w])|\s*\Z)"
_HERE_DOC = (
    _STDIN_SINK + r"[^\n]*?<<-?[ \t]*(?P<q>[\"']?)(?P<tag>\w+)(?P=q)" + _OPENER_END + _HERE_BODY
)
_HERE_DOC_PIPED = (
    r"<<-?[ \t]*(?P<q>[\"']?)(?P<tag>\w+)(?P=q)[ \t]*\|(?="
    + _ARGS
    + _STDIN_SINK
    + r")"
    + _OPENER_END
    + _HERE_BODY
)
#: What follows redis' AUTH: a password, or a user and a password (both go: which one is
#: which cannot be told from one word).
_AUTH_VALUE = (
    r"[ \t]+(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|"
    r"(?P<v>[^\s|;&\"',`()\[\]]+(?:[ \t]+[^\s|;&\"',`()\[\]#-][^\s|;&\"',`()\[\]]*)?))"
)
#: htpasswd -b[n] [FILE] USER PASSWORD: the password is the second word after the flags with
#: -n (no file), the third without
_HTPASSWD_FLAGS = r"(?:\s+-[A-Za-z]+)+"
_WORD = r"\s+[^\s|;&-][^\s|;&]*"

# --- URLs --------------------------------------------------------------------------------------

#: `user:password@host`, with or without a scheme: gRPC quotes its target as
#: `alice:PASSWORD@127.0.0.1:4317`, proxies are set as `user:pass@proxy:3128`. Without a
#: scheme the host must look like one (dotted, an IP, localhost, a bracketed IPv6): so
#: `nginx:1.25@sha256:...` (an image digest) and `mailto:alice@example.com` stay.
_HOST = (
    r"(?:\[[0-9A-Fa-f:.]+\]|localhost|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9-]+)+)(?::\d{1,5})?(?![\w.-])"
)
_USERINFO_BARE = r":(?P<v>[^\s:@/\[\]\"'`<>]{1,256})@(?=" + _HOST + ")"

# --- the rules ---------------------------------------------------------------------------------


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
#: a quoted or echoed string).
_PGPASS_HOST = re.compile(
    r"(?:^|[\s\"'`=(>])(?:\*|[\w.-]*[A-Za-z][\w.-]*|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:]+\])\Z"
)


def _pgpass_line(match: re.Match[str]) -> bool:
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
_SECRET_WORD = re.compile(r"(?i)secret|token|passw|pwd|key|credential|auth(?!or)")


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


def _assigned(match: re.Match[str]) -> bool:
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


def _credential(match: re.Match[str]) -> bool:
    """A bearer, basic or token credential has a digit or a symbol in it (a word after `token`
    in a sentence, an identifier, is none)."""
    credential = match.group("credential")
    return not credential.replace("_", "").replace("-", "").replace(".", "").isalpha()


#: The user before a scheme-less `:password@host`: a run of user-name characters starting the
#: text or after a space, a quote, `=`, `(`, `<`, `>` (not after `/`, `:`, `@`: a URL with a
#: scheme, an image digest, a path), and no scheme of its own (`mailto:a@b.c`).
_USER_BEFORE = re.compile(r"(?:^|[^\w.:/@%+~\\-])([A-Za-z0-9._%+~-]{1,64})\Z")
_NOT_USERS = frozenset({"mailto", "sip", "sips", "tel", "xmpp", "urn", "data"})


def _userinfo(match: re.Match[str]) -> bool:
    start = match.start()
    user = _USER_BEFORE.search(match.string, max(0, start - 80), start)
    return user is not None and user.group(1).lower() not in _NOT_USERS


def _word_start(match: re.Match[str]) -> bool:
    """The match starts a word: no letter, digit, `_` or `-` just before it (what `\\b` before
    the rule's first word would say, at the cost of the engine's skip-ahead)."""
    start = match.start()
    return start == 0 or not (match.string[start - 1].isalnum() or match.string[start - 1] in "_-")


_SQL_SECRET = r"\b(?:identified\s+by|password)\s+(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)')"

CONTEXT: tuple[ContextRule, ...] = (
    # `Authorization: Bearer X`, `Basic X`, `token X`
    ContextRule(
        "bearer_token",
        r"\b(?:bearer|token|basic)[ \t]+(?P<credential>[A-Za-z0-9._~+/\-]{16,}=*)",
        ("bearer", "token", "basic"),
        ignorecase=True,
        check=_credential,
    ),
    # scheme://user:password@ (a user of brackets is a redaction already: left as it is)
    ContextRule(
        "url_password",
        r"\b[a-z][a-z0-9+.\-]*://[^\s:/@\[\]]*:(?P<v>[^\s@/]+)@",
        ("://",),
        ignorecase=True,
    ),
    # scheme://token@: a user name this long is a token (`git clone https://<token>@...`)
    ContextRule(
        "url_password",
        r"\b[a-z][a-z0-9+.\-]*://(?P<v>[^\s:/@\[\]]{16,})@",
        ("://",),
        ignorecase=True,
    ),
    ContextRule("url_password", _USERINFO_BARE, ("@",), check=_userinfo),
    # a secret in a URL's query: ?sig=, &X-Amz-Signature=, ?access_token=
    ContextRule(
        "url_password",
        r"[?&](?:sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential|"
        r"x-goog-signature|x-goog-credential|sv_sig|[\w.-]*(?:token|secret|key|password|auth))"
        r"=(?P<v>[^\s&#\"'`\[]{4,})",
        ("sig", "token", "secret", "key", "password", "auth"),
        ignorecase=True,
    ),
    # what a command reads from its standard input
    ContextRule(
        "secret",
        _ECHO_INTO,
        ("echo", "printf", "yes"),
    ),
    ContextRule("secret", _HERE_STRING, ("<<<",)),
    ContextRule("secret", _HERE_DOC, ("<<",)),
    ContextRule("secret", _HERE_DOC_PIPED, ("<<",)),
    # options whose name says secret, in the `--x X`, `--x=X`, `-x X` forms
    ContextRule(
        "secret",
        _FLAG,
        ("pass", "pwd", "pw", "token", "secret", "credential", "auth", "key"),
        ignorecase=True,
    ),
    ContextRule("secret", _KEY_FLAG, ("key",), ignorecase=True),
    # the tools whose short flag is a password (-p alone prompts for one, so `mysql -p X`
    # is a database named X; -P is mysql's port)
    ContextRule(
        "secret",
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|"
        r"mariadb|mariadb-dump|mariadb-admin|7z|7za|7zr|rar|unrar)\b"
        + _ARGS
        + r"\s-p(?=\S)"
        + _ATTACHED,
        ("mysql", "mariadb", "7z", "rar "),
    ),
    ContextRule(
        "secret",
        r"\b(?:sshpass|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|mongostat|"
        r"mongotop|mongofiles|rdesktop)\b" + _ARGS + r"\s-p\s*" + _ATTACHED,
        ("sshpass", "mongo", "rdesktop"),
    ),
    ContextRule(
        "secret",  # docker login -u USER -p SECRET, and the tools that copy it
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|az|regctl)\b"
        + _ARGS
        + r"\blogin\b"
        + _ARGS
        + r"\s-p\s*"
        + _ATTACHED,
        ("login",),
    ),
    ContextRule("secret", r"\bredis-cli\b" + _ARGS + r"\s-a\s*" + _ATTACHED, ("redis-cli",)),
    ContextRule(  # redis AUTH [user] password: in redis-cli, or AUTH in capitals
        "secret",
        r"\bredis-cli\b" + _ARGS + r"\s(?i:auth)" + _AUTH_VALUE,
        ("redis-cli",),
    ),
    ContextRule("secret", r"AUTH" + _AUTH_VALUE, ("auth",), check=_word_start),
    ContextRule(
        "secret",
        r"\bldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn|exop|url)\b"
        + _ARGS
        + r"\s-[ws]\s*"
        + _ATTACHED,
        ("ldap",),
    ),
    ContextRule(
        "secret",
        r"\b(?:zip|unzip|zipcloak|sqlcmd|bcp|osql|isql|ssh-keygen)\b"
        + _ARGS
        + r"\s-[PN]\s*"
        + _ATTACHED,
        ("zip", "sqlcmd", "bcp", "osql", "isql", "ssh-keygen"),
    ),
    ContextRule("secret", r"\bopenssl\b" + _ARGS + r"\s-[kK]\s+" + _ATTACHED, ("openssl",)),
    ContextRule(
        "secret",
        r"\bhtpasswd\b(?="
        + _HTPASSWD_FLAGS
        + r")(?=(?:\s+-[A-Za-z]+)*\s+-[A-Za-z]*n)"
        + _HTPASSWD_FLAGS
        + _WORD
        + r"\s+"
        + _ATTACHED,
        ("htpasswd",),
    ),
    ContextRule(
        "secret",
        r"\bhtpasswd\b(?!(?:\s+-[A-Za-z]+)*\s+-[A-Za-z]*n)(?=(?:\s+-[A-Za-z]+)*\s+-[A-Za-z]*b)"
        + _HTPASSWD_FLAGS
        + _WORD
        + _WORD
        + r"\s+"
        + _ATTACHED,
        ("htpasswd",),
    ),
    ContextRule(
        "secret",
        r"\b[xw]freerdp\b" + _ARGS + r"\s/p(?:assword)?:" + _ATTACHED,
        ("freerdp",),
        ignorecase=True,
    ),
    ContextRule(
        "secret",
        r"\bnet\s+(?:use\s+\S+|user\s+\S+)\s+(?![/*])" + _ATTACHED,
        ("net use",),
        ignorecase=True,
    ),
    ContextRule("secret", r"\bsqlplus\s+(?:-\w+\s+)*[\w$#]+/(?P<v>[^\s@/\"']+)", ("sqlplus",)),
    ContextRule(
        "secret",
        r"\bvault\s+login\s+(?:-\S+\s+)*(?![\w.-]+=)(?P<v>(?![-$\[])[^\s\"'|;&]{6,})",
        ("vault",),
    ),
    ContextRule(
        "secret",
        r"\bmc\s+(?:alias\s+set|config\s+host\s+add)\s+\S+\s+\S+\s+\S+\s+" + _ATTACHED,
        ("mc ",),
    ),
    ContextRule(
        "secret",  # curl -u user:SECRET (-u user alone prompts)
        r"\b(?:curl|wget)\b"
        + _ARGS
        + r"\s(?:-u|--user|-U|--proxy-user)(?:\s+|=)[\"']?[^\s:\"']*:(?P<v>[^\s\"']+)",
        ("curl", "wget"),
    ),
    ContextRule("secret", r"\blftp\b" + _ARGS + r"\s-u\s+[^\s,]+,(?P<v>[^\s\"'|;&]+)", ("lftp",)),
    ContextRule(
        "secret",
        r"\bsmbclient\b" + _ARGS + r"\s(?:-U|--user)(?:\s+|=)[^\s%]*%(?P<v>\S+)",
        ("smbclient",),
    ),
    # npm: `//registry/:_authToken X` (npm config set takes it after a space too)
    ContextRule(
        "secret",
        r"(?<![\w])_(?:authtoken|auth|password)(?:\s*=\s*|\s+)" + _ATTACHED,
        ("_auth", "_password"),
        ignorecase=True,
    ),
    # .netrc: machine HOST [login USER] password X, on one line or several
    ContextRule(
        "secret",
        r"\b(?:machine\s+\S+|default)(?:\s+(?:login|account|port)\s+\S+)*\s+password\s+"
        + _ATTACHED,
        ("password",),
        ignorecase=True,
    ),
    # .pgpass: host:port:database:user:password
    ContextRule(
        "secret",
        r":(?:\d{1,5}|\*):[^\s:\"']+:[^\s:\"']+:(?P<v>[^\s:\"'`]+)(?![\w:])",
        (":",),
        check=_pgpass_line,
    ),
    # headers that authenticate: the whole of their value
    ContextRule(
        "secret",
        r"(?:(?:proxy-)?authorization|x-[\w-]*(?:token|key|secret|auth|signature|"
        r"password)|private-token|api-key|apikey|cookie|set-cookie)[\"']?[ \t]*:[ \t]*[\"']?"
        r"(?P<v>[^\s\"'`\[][^\n\"'`]*)",
        ("authorization", "x-", "private-token", "api-key", "apikey", "cookie"),
        ignorecase=True,
        check=_word_start,
    ),
    # an Azure AD client secret: 3 characters, a digit, `Q~`, 31 to 34 more
    ContextRule(
        "azure_secret",
        r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![\w~.-])",
        ("q~",),
    ),
    # SQL: IDENTIFIED BY 'x', PASSWORD 'x'
    ContextRule("secret", _SQL_SECRET, ("identified", "password"), ignorecase=True),
    # `password X` (a sentence): only a value with a digit, a symbol or a capital after its
    # first letter, so that "the password field" and "Password Manager" stay
    ContextRule(
        "secret",
        r"(?<![\w-])(?:password|passwd|passphrase)\s+"
        r"(?P<v>(?=[^\s\"']*[0-9!#%*+/=?@^_~\\]|[^\s\"']+(?-i:[A-Z]))(?![-$\[])[^\s\"']{6,})",
        ("passw", "passphrase"),
        ignorecase=True,
    ),
    ContextRule(
        "secret",
        r"\baws_(?:secret_access_key|session_token)\s+(?P<v>(?![-$\[])[^\s\"']{6,})",
        ("aws_",),
        ignorecase=True,
    ),
    # a name that says secret, token, password (or PASS as a word: DB_PASS), pwd, key,
    # credential or auth (not author), then = or :
    ContextRule(
        "secret",
        r"(?P<name>(?P<word>secret|token|passw(?:or)?d|passphrase|(?<![a-z])pass(?![a-z])|pwd|"
        r"key|credential|auth(?!or))[A-Za-z0-9_.\-]*)[\"']?"
        r"\s*(?:=|:)\s*[\"']?(?P<v>(?![\[=])[^\s\"',;&`}]{6,})",
        ("secret", "token", "pass", "pwd", "key", "credential", "auth"),
        ignorecase=True,
        check=_assigned,
    ),
)

#: Known token formats: (kind, regular expression), each starting with a literal, so that the
#: alternation of them all is searched fast. From the public rule sets of gitleaks and
#: detect-secrets (the formats, not their code).
_TOKEN_FORMATS: tuple[tuple[str, str], ...] = (
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{30,255}"),
    ("github_token", r"github_pat_[A-Za-z0-9_]{20,255}"),
    ("aws_access_key", r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"),
    ("google_api_key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("google_api_key", r"GOCSPX-[A-Za-z0-9_\-]{24,}"),
    ("google_api_key", r"ya29\.[A-Za-z0-9_\-]{20,}"),
    ("slack_token", r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    ("slack_token", r"xapp-\d-[A-Za-z0-9-]{10,}"),
    ("slack_token", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}"),
    ("stripe_key", r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    ("anthropic_key", r"sk-ant-(?:api|admin|sid|oat)\d\d-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("vault_token", r"s\.[A-Za-z0-9]{24}"),  # legacy; checked: digits and both cases
    ("service_token", r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("service_token", r"gl(?:dt|rt|ft|soat|ffct|cbt|agent|oas|imt)-[A-Za-z0-9_\-]{20,}"),
    ("service_token", r"glptt-[0-9a-f]{40}"),
    ("service_token", r"GR1348941[A-Za-z0-9_\-]{20}"),
    ("service_token", r"glc_[A-Za-z0-9+/]{32,}={0,3}"),
    ("service_token", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("service_token", r"npm_[A-Za-z0-9]{36}"),
    ("service_token", r"pypi-[A-Za-z0-9_\-]{50,}"),
    ("service_token", r"do[por]_v1_[a-f0-9]{64}"),
    ("service_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("service_token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("service_token", r"lin_api_[A-Za-z0-9]{40}"),
    ("service_token", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("service_token", r"pul-[a-f0-9]{40}"),
    ("service_token", r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    ("service_token", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("service_token", r"dckr_pat_[A-Za-z0-9_\-]{27,}"),
    ("service_token", r"ATATT3[A-Za-z0-9_\-=]{100,}"),
    ("service_token", r"NRAK-[A-Z0-9]{27}"),
    ("service_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.\-]{32,64}"),
    ("service_token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("service_token", r"rubygems_[a-f0-9]{48}"),
    ("service_token", r"rdme_[a-z0-9]{70}"),
    ("service_token", r"figd_[A-Za-z0-9_\-]{40,}"),
    ("service_token", r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9_\-]{20,}"),
    ("service_token", r"fo1_[A-Za-z0-9_\-]{43}"),
    ("service_token", r"sh(?:pat|pca|ppa|pss)_[a-fA-F0-9]{32}"),
    ("service_token", r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,60}"),
    ("service_token", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ("service_token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("service_token", r"hf_[A-Za-z]{34}"),
    ("service_token", r"api_org_[A-Za-z]{34}"),
    ("service_token", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("service_token", r"EZ[AT]K[A-Za-z0-9]{54}"),
    ("service_token", r"pnu_[A-Za-z0-9]{36}"),
    ("service_token", r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    ("service_token", r"LTAI[A-Za-z0-9]{20}"),
    ("service_token", r"CLOJARS_[A-Za-z0-9]{60}"),
    ("service_token", r"FLWSECK(?:_TEST)?-[A-Za-z0-9]{12,}"),
    ("service_token", r"sha256~[A-Za-z0-9_\-]{43}"),
    ("service_token", r"SK[0-9a-f]{32}"),  # Twilio
    ("service_token", r"key-[0-9a-f]{32}"),  # Mailgun
    ("service_token", r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}"),
)
#: Kinds whose match needs a word boundary before it (their prefix is short or a word's end).
_BOUNDED = re.compile(r"(?:s\.|SK|key-|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|sk|rk)")
#: The one pass over every text for all the known formats (non-capturing: a capturing group
#: per kind would cost the engine its skip-ahead, 40 times the time).
TOKENS = re.compile("|".join(f"(?:{pattern})" for _, pattern in _TOKEN_FORMATS))
_KINDS = [(kind, re.compile(pattern)) for kind, pattern in _TOKEN_FORMATS]
_TOKEN_END = re.compile(r"[A-Za-z0-9]")


def token_kind(match: re.Match[str]) -> str | None:
    """The kind of a `TOKENS` match, or None when it is none after all: glued to the word
    before or after it where its format says a word ends (`KMS.` in `AWS.KMS.`...), or a legacy
    Vault token without digits and both cases (`s.getInstanceConfiguration`)."""
    text = match.group(0)
    kind = next(kind for kind, pattern in _KINDS if pattern.match(text))
    if _BOUNDED.match(text):
        string, start, end = match.string, match.start(), match.end()
        if start and (string[start - 1].isalnum() or string[start - 1] in "_.-"):
            return None
        if end < len(string) and _TOKEN_END.match(string[end]) and kind != "private_key":
            return None
    if kind == "vault_token" and text.startswith("s."):
        body = text[2:]
        if not (
            any(c.isdigit() for c in body)
            and any(c.isupper() for c in body)
            and any(c.islower() for c in body)
        ):
            return None
    return kind


#: Values that stand for a secret in examples and templates, not secrets: `password`,
#: `changeme`, `xxxx`, `****`, `<token>`, `${TOKEN}`, `{{ secret }}`, `%PASSWORD%`.
PLACEHOLDER = re.compile(
    r"(?i)(?:pass(?:word|wd)?|pwd|secret|token|key|api[-_]?key|changeme|changeit|example|"
    r"placeholder|redacted|dummy|x+|\*+|\.+|<[^<>]*>|\$\{?\w+\}?|\{\{[^{}]*\}\}|%\w+%)"
)
#: What a match of each kind is replaced by: [REDACTED:<label>].
LABELS = {"assignment": "secret", "command_line": "secret"}
#: The named groups that hold the secret in a match that holds more.
SECRET_GROUPS = ("v", "dq", "sq", "bare")

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
