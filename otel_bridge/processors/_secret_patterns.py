"""Secrets given away by their context: the rules the `Scrubber` runs after the known token
formats (`_token_formats.py`), in order, the more specific first, each on what the ones before
it left, and each only when one of its keywords is in the text (lower-cased once), as gitleaks
does. They generalise rather than list commands seen once:

- the value of any option whose name says password, pass, passwd, pwd, secret, token, key,
  auth, credential, passphrase (`--db-password X`, `--api-key=X`, `-storepass X`,
  `-passin pass:X`), and the short flags of the tools whose flag is a password (`mysql -pX`,
  `redis-cli -a X`, `ldapsearch -w X`, `zip -P X`, `sshpass -p X`, `sqlcmd -P X`...);
- what is written into a command that reads a secret from its standard input (`echo X | sudo
  -S`, `docker login --password-stdin`, `chpasswd`, `passwd --stdin`, here-strings and
  here-documents);
- the user information of any URL, with or without a scheme (`user:pass@host`);
- a name that says secret assigned a value (`NAME=value`, `name: value`, a header), `.npmrc`,
  `.netrc` and `.pgpass` lines, SQL's `IDENTIFIED BY`.

Rules whose match holds more than the secret (a flag, a command, a user name) mark the secret
with a named group: `dq`, `sq` (the inside of quotes) or `bare` (`_value`), or `v`; only that
group is replaced, so that `mysql -u root -p[REDACTED:secret] shop` still says what ran.
"""

from __future__ import annotations

from ._rule_checks import (
    ContextRule,
    assigned,
    credential,
    pgpass_line,
    userinfo,
    word_start,
)

__all__ = ["CONTEXT"]


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

_SQL_SECRET = r"\b(?:identified\s+by|password)\s+(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)')"

CONTEXT: tuple[ContextRule, ...] = (
    # `Authorization: Bearer X`, `Basic X`, `token X`
    ContextRule(
        "bearer_token",
        r"\b(?:bearer|token|basic)[ \t]+(?P<credential>[A-Za-z0-9._~+/\-]{16,}=*)",
        ("bearer", "token", "basic"),
        ignorecase=True,
        check=credential,
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
    ContextRule("url_password", _USERINFO_BARE, ("@",), check=userinfo),
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
    ContextRule("secret", r"AUTH" + _AUTH_VALUE, ("auth",), check=word_start),
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
        check=pgpass_line,
    ),
    # headers that authenticate: the whole of their value
    ContextRule(
        "secret",
        r"(?:(?:proxy-)?authorization|x-[\w-]*(?:token|key|secret|auth|signature|"
        r"password)|private-token|api-key|apikey|cookie|set-cookie)[\"']?[ \t]*:[ \t]*[\"']?"
        r"(?P<v>[^\s\"'`\[][^\n\"'`]*)",
        ("authorization", "x-", "private-token", "api-key", "apikey", "cookie"),
        ignorecase=True,
        check=word_start,
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
        check=assigned,
    ),
)
