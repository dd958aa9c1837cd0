"""A planted-secret corpus for the privacy leak test (tests/integration/test_privacy_leaks.py,
issue 6).

The real Copilot CLI logs of tests/fixtures, with fake secrets of every common kind planted into
every field of every event that can carry text, into the names that end up in span names and
metric labels (tool, model and agent names, error types, event types...), and into ids; plus
unique sentences ("planted-prompt-0001 ...", "planted-note-0002 ...") wherever prompts, answers
and other content go. Events the fixtures lack (hooks, compaction, truncation, an unknown type,
a failed model call, sub-agent errors) are inserted where the CLI would write them, a few
deliberately malformed lines go into one log, and some texts are made long enough that the
bridge's content cut (--content-max-chars, 8192) falls inside a secret. Everything is drawn
from one seeded generator: the same corpus, byte for byte, on every run.

Finding a secret in output: each secret has random cores (its key material). Any WINDOW
consecutive characters of an alphanumeric run of a core count as a leak: such runs are random,
so no innocent output holds one, and a secret cut in half (or partly redacted) still shows.
Windows shared by two secrets (a JWT's constant header, say) are not used.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import random
import re
import string
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "CONTENT_CUT",
    "CUSTOM_PATTERN",
    "KINDS",
    "TOKEN_KINDS",
    "WINDOW",
    "Corpus",
    "Leak",
    "PlantedText",
    "Secret",
    "build_corpus",
]

FIXTURES = Path(__file__).parent / "fixtures"
SEED = 6_2026  # issue 6
#: Characters of a secret's core that count as a leak when found together in output.
WINDOW = 12
#: otel-bridge's default --content-max-chars: content longer than this is cut.
CONTENT_CUT = 8192
#: A company-internal token format only a --scrub-pattern can know (hex: too low in entropy
#: for the built-in detector, and 29 characters: too short for it anyway).
CUSTOM_PATTERN = r"acme-tok-[0-9a-f]{20}"

_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_RUN = re.compile(rf"[A-Za-z0-9]{{{WINDOW},}}")
_SENTINEL = re.compile(r"planted-(?:prompt|note)-\d{4}")
_SESSION_BASES = (  # every recorded capture, each planted once
    "run1_cli_prompt_basic",
    "run3_cli_autopilot",
    "sdk1_two_user_messages",
    "abort",
    "abort_subagent",
    "abort_try1",
    "autopilot_nudge",
    "parallel_tools",
    "provider_error",
    "resume",
    "sdk_abort",
    "subagent",
    "subagent_background",
    "subagent_deep",
    "subagent_failed",
    "subagent_nested",
    "subagent_parallel",
    "crash_resume",
    "permission_denied",
    "mcp_tools",
)
#: For each kind of name-shaped secret, one more log made of these captures one after the
#: other (a session resumed many times): between them they have every event whose names the
#: bridge exports (sub-agents and their failure, a tool failure, session errors, aborts, a
#: permission, mode changes, task completion), and every such name gets a secret of that kind.
_NAME_BASES = (
    "subagent_failed",
    "provider_error",
    "abort_subagent",
    "sdk_abort",
    "run3_cli_autopilot",
    "parallel_tools",
    "crash_resume",
    "permission_denied",
    "mcp_tools",
)


# --- secrets ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Secret:
    """One planted secret.

    Attributes:
        id: its number in the corpus.
        kind: what it is (github_token, url_password, env_assignment, ...).
        text: what was planted, the context that makes it a secret included ("export
            DB_PASSWORD=...", "Authorization: Bearer ...").
        cores: its random parts, none of which may leave the bridge (cores[0] is the main one).
        field: where it was planted ("tool.execution_start.arguments", ...).
        session: the session directory it is in.
    """

    id: int
    kind: str
    text: str
    cores: tuple[str, ...]
    field: str
    session: str

    @property
    def marker(self) -> str:
        """A unique substring to search for: the secret's main random core."""
        return self.cores[0]


@dataclass(frozen=True)
class PlantedText:
    """A unique non-secret sentence planted where content goes.

    Attributes:
        marker: "planted-prompt-0001" (prompts and answers) or "planted-note-0002" (the rest).
        field: where it was planted.
        session: the session directory it is in.
        exported_with_content: True when the bridge puts this field on spans with content
            capture on (a top-level prompt, an answer in a turn), so it must show up then.
    """

    marker: str
    field: str
    session: str
    exported_with_content: bool


def _rand(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _with(rng: random.Random, n: int, extra: str, run: int) -> str:
    """n random characters whose first `run` are alphanumeric, the rest drawn also from
    `extra` (so a '+', '/', '-' or '_' may sit inside, as in real keys)."""
    return _rand(rng, run) + _rand(rng, n - run, _ALNUM + extra)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _password(rng: random.Random) -> str:
    """A password or key a person or a tool would paste: 16 to 20 random characters (shorter
    than the 32 a high-entropy detector looks at, so only its context gives it away)."""
    return _rand(rng, rng.randint(16, 20))


def _key40(rng: random.Random) -> str:
    """A 40-character base64 key ('+' and '/' at random places after the first 16)."""
    return _with(rng, 40, "+/", 16)


_Gen = Callable[[random.Random, int], tuple[str, tuple[str, ...]]]


def _github_token(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    core = _rand(rng, 36)
    return ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")[n % 5] + core, (core,)


def _github_pat(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    a, b = _rand(rng, 22), _rand(rng, 59)
    return f"github_pat_{a}_{b}", (a, b)


def _aws_access_key_id(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    core = _rand(rng, 16, _UPPER)
    return ("AKIA", "AKIA", "ASIA")[n % 3] + core, (core,)


def _aws_secret_access_key(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    key = _key40(rng)
    form = (
        "aws_secret_access_key = {k}",
        "AWS_SECRET_ACCESS_KEY={k}",
        "aws_secret_access_key: {k}",
        'export AWS_SECRET_ACCESS_KEY="{k}"',
    )[n % 4]
    return form.replace("{k}", key), (key,)


def _google_api_key(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    body = list(_rand(rng, 35))
    if n % 3 == 1:
        body[20] = "-"
    elif n % 3 == 2:
        body[20] = "_"
    if n % 4 == 3:
        body[34] = "-"  # a key ending in '-': no word boundary after it
    core = "".join(body)
    return "AIza" + core, (core,)


def _slack_token(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    core = _rand(rng, 24)
    digits = string.digits
    return (
        f"{('xoxb', 'xoxp')[n % 2]}-{_rand(rng, 12, digits)}-{_rand(rng, 13, digits)}-{core}"
    ), (core,)


def _stripe_key(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    core = _rand(rng, (24, 99, 24)[n % 3])
    return ("sk_live_", "rk_live_", "sk_test_")[n % 3] + core, (core,)


def _openai_key(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    if n % 3 == 0:
        core = _with(rng, 48, "-_", 24)
        return "sk-proj-" + core, (core,)
    if n % 3 == 1:
        core = _rand(rng, 48)
        return "sk-" + core, (core,)
    core = _with(rng, 80, "-_", 24)
    return "sk-ant-api03-" + core, (core,)


def _private_key(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    label = (
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
    )[n % 5]
    lines = [_with(rng, 64, "+/", 24) for _ in range(rng.randint(3, 5))]
    lines.append(_rand(rng, rng.randint(20, 40)) + "==")
    body = "\n".join(lines)
    return (
        f"-----BEGIN {label}-----\n{body}\n-----END {label}-----",
        tuple(line.rstrip("=") for line in lines),
    )


_JWT_HEADER = _b64url(b'{"alg":"HS256","typ":"JWT"}')


def _jwt(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    payload = _b64url(
        json.dumps({"sub": _rand(rng, 16), "scope": "repo", "iat": 1_767_225_600 + n}).encode()
    )
    signature = _with(rng, 43, "-_", 24)
    return f"{_JWT_HEADER}.{payload}.{signature}", (signature, payload)


def _bearer_token(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    if n % 4 == 3:
        password = _password(rng)
        encoded = base64.b64encode(f"deploy:{password}".encode()).decode()
        return f"Authorization: Basic {encoded}", (encoded.rstrip("="),)
    token = (_rand(rng, 40), "ya29." + _rand(rng, 60), _rand(rng, 24) + "." + _rand(rng, 20))[n % 3]
    header = ("Authorization: Bearer", "authorization: bearer", "Authorization: Bearer")[n % 3]
    cores = tuple(part for part in token.split(".") if len(part) >= WINDOW + 2)
    return f"{header} {token}", cores


def _url_password(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    password = _password(rng)
    form = (
        "https://deploy:{p}@git.example.com/acme/app.git",
        "postgres://app:{p}@db.internal:5432/orders",
        "mysql://root:{p}@127.0.0.1:3306/shop",
        "redis://:{p}@cache.internal:6379/0",  # no user: how Redis URLs are written
        "amqp://worker:{p}@mq.internal:5672/jobs",
        "https://oauth2:{p}@gitlab.example.com/group/repo.git",
    )[n % 6]
    return form.replace("{p}", password), (password,)


_ENV_NAMES = (
    "DB_PASSWORD",
    "POSTGRES_PASSWORD",
    "MYSQL_ROOT_PASSWORD",
    "API_KEY",
    "SECRET_KEY",
    "GITHUB_TOKEN",
    "NPM_TOKEN",
    "SLACK_BOT_TOKEN",
    "STRIPE_SECRET_KEY",
    "JWT_SECRET",
    "SESSION_SECRET",
    "AUTH_TOKEN",
    "OPENAI_API_KEY",
    "REDIS_PASSWORD",
    "ENCRYPTION_KEY",
    "SIGNING_KEY",
    "MASTER_KEY",
    "LICENSE_KEY",
)
_JSON_NAMES = (
    "client_secret",
    "access_token",
    "refresh_token",
    "api_key",
    "apiKey",
    "password",
    "privateKey",
    "secret",
    "token",
    "webhookSecret",
    "encryption_key",
    "signingKey",
)
_YAML_NAMES = (
    "API_KEY",
    "password",
    "secret_key",
    "token",
    "db_password",
    "access_key",
    "signing_key",
    "license_key",
    "auth_token",
    "client_secret",
)


def _value(rng: random.Random, n: int) -> str:
    return _password(rng) if n % 2 == 0 else _key40(rng)


def _env_assignment(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    name, value = _ENV_NAMES[n % len(_ENV_NAMES)], _value(rng, n // len(_ENV_NAMES))
    form = ("export {n}={v}", "{n}={v}", 'export {n}="{v}"', "{n}='{v}'")[n % 4]
    return form.replace("{n}", name).replace("{v}", value), (value,)


def _json_assignment(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    name, value = _JSON_NAMES[n % len(_JSON_NAMES)], _value(rng, n // len(_JSON_NAMES))
    return f'"{name}": "{value}"', (value,)


def _yaml_assignment(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    name, value = _YAML_NAMES[n % len(_YAML_NAMES)], _value(rng, n // len(_YAML_NAMES))
    return f"{name}: {value}", (value,)


#: How command lines take credentials: flags, attached values, a user's password, a token as a
#: URL's user, variables, SQL, a .netrc line. {p}: a password (16 to 20 characters, too short
#: for the entropy check: only its context gives it away), {k}: a 40-character key, {t}: a
#: GitLab token's random part.
_COMMAND_LINES = (
    "git clone https://glpat-{t}@gitlab.com/acme/app.git",
    "git clone https://{p}@github.com/acme/app.git",
    "docker login -u deploy -p {p} registry.example.com",
    "mysql -h db.internal -u root -p{p} shop",
    "curl -sS -u deploy:{p} https://api.example.com/v1/items",
    "sshpass -p '{p}' ssh deploy@build.internal",
    "DEPLOY_PASS={p} ./scripts/release.sh",
    "./manage.py createsuperuser --username admin --password {p}",
    "helm repo add acme https://charts.example.com --username deploy --password {p}",
    "printf 'machine api.example.com login deploy password {p}\\n' >> ~/.netrc",
    "PGPASSWORD={p} psql -h db.internal -U app orders",
    "MYSQL_PWD={p} mysqldump shop > shop.sql",
    "redis-cli -h cache.internal -a {p} ping",
    "aws configure set aws_secret_access_key {k}",
    "kubectl create secret generic db --from-literal=password={p}",
    "psql -c \"ALTER USER app WITH PASSWORD '{p}'\"",
    "openssl enc -aes-256-cbc -pass pass:{p} -in backup.tar",
    "wget --user=deploy --password={p} https://files.example.com/a.tgz",
    "npm config set //registry.npmjs.org/:_authToken={p}",
    "curl -H 'X-Api-Key: {p}' https://api.example.com/v1/items",
    "smbclient //files/share -U alice%{p}",
    "./bin/sync --api-key {p} --verbose",
    "mysqladmin -u root --password {p} reload",
    "curl --user deploy:{p} -X POST https://ci.example.com/job/build",
)


def _command_line(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    form = _COMMAND_LINES[n % len(_COMMAND_LINES)]
    if "{t}" in form:
        core = _rand(rng, 20)
        return form.replace("{t}", core), (core,)
    if "{k}" in form:
        key = _key40(rng)
        return form.replace("{k}", key), (key,)
    password = _password(rng)
    return form.replace("{p}", password), (password,)


def _high_entropy(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    key = _key40(rng)
    return key, (key,)


def _custom(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    core = _rand(rng, 20, "0123456789abcdef")
    return "acme-tok-" + core, (core,)


# --- shapes from public secret-scanning rule sets, and the shell's ways of passing a secret ---

#: Prefixes are assembled here from pieces and bodies drawn at run time, so that this file
#: holds no token a secret scanner (GitHub push protection) would flag.
_HEXL = "0123456789abcdef"
_LOWER = string.ascii_lowercase
_B62 = _ALNUM


def _join(*parts: str) -> str:
    return "".join(parts)


@dataclass(frozen=True)
class Shape:
    """One way a secret is written.

    Attributes:
        name: what it is (`sudo_stdin_echo`, `gitlab_deploy_token`...).
        source: where the shape comes from: `gitleaks:<rule id>`, `detect-secrets:<plugin>`,
            or `shell` (command lines, config files and headers agents type and read).
        template: the text, `{s}` where the secret goes.
        make: draws the secret: (what is written, the part that must never come out).
    """

    name: str
    source: str
    template: str
    make: Callable[[random.Random], tuple[str, str]]

    def draw(self, rng: random.Random) -> tuple[str, str]:
        """A text of this shape with a fresh fake secret, and that secret's random part."""
        written, core = self.make(rng)
        return self.template.replace("{s}", written), core


def _pw(rng: random.Random) -> tuple[str, str]:
    """A password as people make them: 16 to 20 letters and digits (too short for the entropy
    check: only its context gives it away), both cases and a digit."""
    body = rng.choice(string.ascii_uppercase) + _rand(rng, rng.randint(13, 17)) + "7k"
    return body, body


def _lower_pw(rng: random.Random) -> tuple[str, str]:
    """A password of lower-case letters only: nothing in its look says secret."""
    body = _rand(rng, 16, _LOWER)
    return body, body


def _tok(
    prefix: str, n: int, alphabet: str = _B62, suffix: str = ""
) -> Callable[[random.Random], tuple[str, str]]:
    def make(rng: random.Random) -> tuple[str, str]:
        body = _rand(rng, n, alphabet)
        return prefix + body + suffix, body

    return make


def _aws_secret(rng: random.Random) -> tuple[str, str]:
    key = _rand(rng, 40)
    return key, key


def _b64(n: int) -> Callable[[random.Random], tuple[str, str]]:
    def make(rng: random.Random) -> tuple[str, str]:
        body = _rand(rng, n - 2, _ALNUM + "+/")
        body = rng.choice(_ALNUM) + body[1:] + "=="
        return body, body.rstrip("=")

    return make


def _vault_legacy(rng: random.Random) -> tuple[str, str]:
    body = "Ab1" + _rand(rng, 21)
    return "s." + body, body


def _jwt_shape(rng: random.Random) -> tuple[str, str]:
    head = _b64url(b'{"alg":"RS256","typ":"JWT"}')
    payload = _b64url(json.dumps({"sub": _rand(rng, 12)}).encode())
    sig = _rand(rng, 43)
    return f"{head}.{payload}.{sig}", sig


def _pem(label: str) -> Callable[[random.Random], tuple[str, str]]:
    def make(rng: random.Random) -> tuple[str, str]:
        lines = [_rand(rng, 64) for _ in range(3)]
        dashes = "-" * 5
        block = (
            f"{dashes}BEGIN {label}{dashes}\n" + "\n".join(lines) + f"\n{dashes}END {label}{dashes}"
        )
        return block, lines[1]

    return make


def _basic(rng: random.Random) -> tuple[str, str]:
    password = _rand(rng, 16)
    encoded = base64.b64encode(f"deploy:{password}".encode()).decode()
    return encoded, encoded.rstrip("=")


def _slack_bot(rng: random.Random) -> tuple[str, str]:
    body = _rand(rng, 24)
    digits = string.digits
    return _join("xo", "xb-") + f"{_rand(rng, 12, digits)}-{_rand(rng, 13, digits)}-{body}", body


def _telegram_like_azure_ad(rng: random.Random) -> tuple[str, str]:
    body = _rand(rng, 31)
    return _rand(rng, 3) + "8Q~" + body, body


_PK = "PRIVATE KEY"
SHAPES: tuple[Shape, ...] = (
    # known token formats (gitleaks' and detect-secrets' rules)
    Shape("github_pat", "gitleaks:github-pat", "{s}", _tok(_join("gh", "p_"), 36)),
    Shape("github_oauth", "gitleaks:github-oauth", "token={s}", _tok(_join("gh", "o_"), 36)),
    Shape("github_app", "gitleaks:github-app-token", "GH_TOKEN={s}", _tok(_join("gh", "s_"), 36)),
    Shape("github_user_app", "gitleaks:github-app-token", "{s}", _tok(_join("gh", "u_"), 36)),
    Shape("github_refresh", "gitleaks:github-refresh-token", "{s}", _tok(_join("gh", "r_"), 36)),
    Shape(
        "github_fine_grained",
        "gitleaks:github-fine-grained-pat",
        "{s}",
        _tok(_join("github", "_pat_"), 82),
    ),
    Shape("gitlab_pat", "gitleaks:gitlab-pat", "{s}", _tok(_join("gl", "pat-"), 20)),
    Shape("gitlab_deploy", "gitleaks:gitlab-deploy-token", "{s}", _tok(_join("gl", "dt-"), 20)),
    Shape(
        "gitlab_runner",
        "gitleaks:gitlab-runner-authentication-token",
        "{s}",
        _tok(_join("gl", "rt-"), 20),
    ),
    Shape("gitlab_trigger", "gitleaks:gitlab-ptt", "{s}", _tok(_join("gl", "ptt-"), 40, _HEXL)),
    Shape("gitlab_rrt", "gitleaks:gitlab-rrt", "{s}", _tok(_join("GR13", "48941"), 20)),
    Shape("slack_bot", "gitleaks:slack-bot-token", "{s}", _slack_bot),
    Shape(
        "slack_user",
        "detect-secrets:slack",
        "{s}",
        _tok(_join("xo", "xp-") + "1234567890-1234567890-1234567890-", 32),
    ),
    Shape(
        "slack_app",
        "gitleaks:slack-app-token",
        "{s}",
        _tok(_join("xa", "pp-1-A") + "0B1C2D3E-", 30),
    ),
    Shape(
        "slack_webhook",
        "gitleaks:slack-webhook-url",
        "curl -X POST https://{s}",
        _tok(_join("hooks.sl", "ack.com/services/") + "T0000/B0000/", 44),
    ),
    Shape(
        "aws_access_key_id", "gitleaks:aws-access-token", "{s}", _tok(_join("AK", "IA"), 16, _UPPER)
    ),
    Shape(
        "aws_sts_key_id", "gitleaks:aws-access-token", "{s}", _tok(_join("AS", "IA"), 16, _UPPER)
    ),
    Shape("aws_secret_key_env", "detect-secrets:aws", "AWS_SECRET_ACCESS_KEY={s}", _aws_secret),
    Shape("aws_secret_key_ini", "detect-secrets:aws", "aws_secret_access_key = {s}", _aws_secret),
    Shape(
        "vault_service",
        "gitleaks:vault-service-token",
        "VAULT_TOKEN={s}",
        _tok(_join("hv", "s."), 95),
    ),
    Shape("vault_batch", "gitleaks:vault-batch-token", "{s}", _tok(_join("hv", "b."), 140)),
    Shape("vault_legacy", "gitleaks:vault-service-token", "vault token lookup {s}", _vault_legacy),
    Shape("npm_token", "gitleaks:npm-access-token", "{s}", _tok(_join("np", "m_"), 36)),
    Shape(
        "pypi_token",
        "gitleaks:pypi-upload-token",
        "{s}",
        _tok(_join("py", "pi-AgEIcHlwaS5vcmc"), 60),
    ),
    Shape("jwt", "gitleaks:jwt", "{s}", _jwt_shape),
    Shape("pem_rsa", "gitleaks:private-key", "{s}", _pem("RSA " + _PK)),
    Shape("pem_openssh", "detect-secrets:private_key", "{s}", _pem("OPENSSH " + _PK)),
    Shape("pem_ec", "gitleaks:private-key", "{s}", _pem("EC " + _PK)),
    Shape("pem_pgp", "gitleaks:private-key", "{s}", _pem("PGP " + _PK + " BLOCK")),
    Shape("stripe_live", "gitleaks:stripe-access-token", "{s}", _tok(_join("sk", "_live_"), 24)),
    Shape(
        "stripe_restricted", "gitleaks:stripe-access-token", "{s}", _tok(_join("rk", "_live_"), 24)
    ),
    Shape("google_api", "gitleaks:gcp-api-key", "key={s}", _tok(_join("AI", "za"), 35)),
    Shape("google_oauth_secret", "gitleaks", "{s}", _tok(_join("GOC", "SPX-"), 28)),
    Shape("google_oauth_access", "gitleaks", "{s}", _tok(_join("ya", "29."), 60)),
    Shape("openai_project", "gitleaks:openai-api-key", "{s}", _tok(_join("sk", "-proj-"), 64)),
    Shape(
        "openai_legacy",
        "detect-secrets:openai",
        "{s}",
        _tok(_join("sk", "-"), 20, suffix="T3BlbkFJ" + "a1B2c3D4e5F6g7H8i9J0"),
    ),
    Shape(
        "anthropic",
        "gitleaks:anthropic-api-key",
        "ANTHROPIC_API_KEY={s}",
        _tok(_join("sk", "-ant-api03-"), 93),
    ),
    Shape(
        "anthropic_admin",
        "gitleaks:anthropic-admin-api-key",
        "{s}",
        _tok(_join("sk", "-ant-admin01-"), 93),
    ),
    Shape(
        "azure_storage",
        "detect-secrets:azure_storage_key",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};"
        "EndpointSuffix=core.windows.net",
        _b64(88),
    ),
    Shape(
        "azure_sas",
        "shell",
        "https://acme.blob.core.windows.net/c/f?sv=2022-11-02&sig={s}",
        _tok("", 43),
    ),
    Shape(
        "azure_ad_secret",
        "gitleaks:azure-ad-client-secret",
        "client_secret {s}",
        _telegram_like_azure_ad,
    ),
    Shape(
        "sendgrid",
        "gitleaks:sendgrid-api-token",
        "{s}",
        _tok(_join("SG", ".") + "a1B2c3D4e5F6g7H8i9J0kL.", 43),
    ),
    Shape("twilio", "gitleaks:twilio-api-key", "{s}", _tok(_join("S", "K"), 32, _HEXL)),
    Shape("mailgun", "detect-secrets:mailgun", "{s}", _tok(_join("ke", "y-"), 32, _HEXL)),
    Shape("shopify", "gitleaks:shopify-access-token", "{s}", _tok(_join("sh", "pat_"), 32, _HEXL)),
    Shape("square", "gitleaks:square-access-token", "{s}", _tok(_join("sq", "0atp-"), 22)),
    Shape(
        "digitalocean", "gitleaks:digitalocean-pat", "{s}", _tok(_join("do", "p_v1_"), 64, _HEXL)
    ),
    Shape("doppler", "gitleaks:doppler-api-token", "{s}", _tok(_join("dp", ".pt."), 43)),
    Shape(
        "dynatrace",
        "gitleaks:dynatrace-api-token",
        "{s}",
        _tok(_join("dt0", "c01.") + "ABCDEFGHIJKLMNOPQRSTUVWX.", 64),
    ),
    Shape("linear", "gitleaks:linear-api-key", "{s}", _tok(_join("lin", "_api_"), 40)),
    Shape(
        "postman",
        "gitleaks:postman-api-token",
        "{s}",
        _tok(_join("PM", "AK-") + "0123456789abcdef01234567-", 34, _HEXL),
    ),
    Shape("pulumi", "gitleaks:pulumi-api-token", "{s}", _tok(_join("pu", "l-"), 40, _HEXL)),
    Shape(
        "sentry_user", "gitleaks:sentry-user-token", "{s}", _tok(_join("snt", "ryu_"), 64, _HEXL)
    ),
    Shape("grafana_cloud", "gitleaks:grafana-cloud-api-token", "{s}", _tok(_join("gl", "c_"), 40)),
    Shape(
        "age_key",
        "gitleaks:age-secret-key",
        "{s}",
        _tok(_join("AGE-SECRET", "-KEY-1"), 58, string.ascii_uppercase + string.digits),
    ),
    Shape("docker_hub", "shell", "{s}", _tok(_join("dck", "r_pat_"), 27)),
    Shape(
        "huggingface",
        "gitleaks:huggingface-access-token",
        "{s}",
        _tok(_join("h", "f_"), 34, string.ascii_letters),
    ),
    Shape("databricks", "gitleaks:databricks-api-token", "{s}", _tok(_join("da", "pi"), 32, _HEXL)),
    Shape("planetscale", "gitleaks:planetscale-password", "{s}", _tok(_join("psc", "ale_pw_"), 43)),
    Shape("tailscale", "shell", "tailscale up --authkey={s}", _tok(_join("tsk", "ey-auth-"), 40)),
    Shape(
        "new_relic", "gitleaks:new-relic-user-api-key", "{s}", _tok(_join("NR", "AK-"), 27, _UPPER)
    ),
    Shape("atlassian", "gitleaks:atlassian-api-token", "{s}", _tok(_join("ATA", "TT3"), 186)),
    Shape("alibaba", "gitleaks:alibaba-access-key-id", "{s}", _tok(_join("LT", "AI"), 20)),
    Shape(
        "basic_auth_header",
        "detect-secrets:basic_auth",
        "curl -H 'Authorization: Basic {s}' https://ci.example.com",
        _basic,
    ),
    Shape(
        "bearer_header",
        "gitleaks:curl-auth-header",
        'curl -H "Authorization: Bearer {s}" https://api.example.com',
        _pw,
    ),
    # the shell's ways: what agents type and read
    Shape("sudo_stdin_echo", "shell", "echo '{s}' | sudo -S apt-get install -y nginx", _pw),
    Shape("sudo_stdin_bare", "shell", "echo {s} | sudo -S -k systemctl restart app", _lower_pw),
    Shape("sudo_stdin_printf", "shell", "printf '%s\\n' \"{s}\" | sudo --stdin true", _pw),
    Shape("sudo_here_string", "shell", 'sudo -S <<< "{s}" whoami', _pw),
    Shape(
        "docker_password_stdin",
        "shell",
        'echo "{s}" | docker login -u deploy --password-stdin registry.example.com',
        _pw,
    ),
    Shape(
        "docker_here_string",
        "shell",
        "docker login -u deploy --password-stdin ghcr.io <<< '{s}'",
        _pw,
    ),
    Shape("chpasswd_pipe", "shell", "echo 'deploy:{s}' | sudo chpasswd", _pw),
    Shape("chpasswd_here_string", "shell", 'chpasswd <<< "deploy:{s}"', _lower_pw),
    Shape("passwd_stdin", "shell", "echo {s} | passwd --stdin deploy", _pw),
    Shape("passwd_twice", "shell", 'echo -e "{s}\\n{s}" | passwd deploy', _pw),
    Shape("gh_with_token", "shell", "echo {s} | gh auth login --with-token", _pw),
    Shape("heredoc_chpasswd", "shell", "sudo chpasswd <<EOF\ndeploy:{s}\nEOF", _pw),
    Shape("mysql_attached", "shell", "mysql -uroot -p{s} -h db.internal shop", _pw),
    Shape("mysql_long", "shell", "mysql --user=root --password={s} shop", _lower_pw),
    Shape(
        "redis_a", "shell", "redis-cli -h cache.internal -p 6379 -a {s} --no-auth-warning ping", _pw
    ),
    Shape("redis_auth", "shell", "redis-cli -h cache.internal AUTH {s}", _pw),
    Shape("redis_auth_user", "shell", "AUTH default {s}", _lower_pw),
    Shape(
        "ldapsearch_w",
        "shell",
        'ldapsearch -x -H ldap://ldap.internal -D "cn=admin,dc=example,dc=org" -w {s} '
        "-b dc=example,dc=org",
        _pw,
    ),
    Shape("ldapmodify_w_quoted", "shell", "ldapmodify -D cn=admin -w '{s}' -f change.ldif", _pw),
    Shape("zip_P", "shell", "zip -P {s} -r backup.zip data/", _pw),
    Shape("unzip_P", "shell", "unzip -P {s} backup.zip", _lower_pw),
    Shape("7z_p", "shell", "7z a -p{s} -mhe=on archive.7z data/", _pw),
    Shape("sshpass_p", "shell", "sshpass -p {s} ssh deploy@build.internal", _pw),
    Shape("curl_u", "shell", "curl -u admin:{s} https://jenkins.example.com/api/json", _pw),
    Shape("curl_user_quoted", "shell", 'curl --user "admin:{s}" https://x.example.com', _pw),
    Shape(
        "wget_http_password",
        "shell",
        "wget --http-user=deploy --http-password={s} https://files.example.com/a.tgz",
        _pw,
    ),
    Shape(
        "keytool_storepass",
        "shell",
        "keytool -importcert -keystore trust.jks -storepass {s} -noprompt -file ca.crt",
        _lower_pw,
    ),
    Shape("keytool_keypass", "shell", "keytool -genkeypair -alias app -keypass {s}", _pw),
    Shape(
        "openssl_passin", "shell", "openssl rsa -in key.pem -passin pass:{s} -out plain.pem", _pw
    ),
    Shape("openssl_k", "shell", "openssl enc -aes-256-cbc -k {s} -in backup.tar", _pw),
    Shape("gpg_passphrase", "shell", "gpg --batch --yes --passphrase {s} -c notes.txt", _pw),
    Shape("ssh_keygen_N", "shell", "ssh-keygen -t ed25519 -N '{s}' -f ~/.ssh/id_deploy", _pw),
    Shape("sqlcmd_P", "shell", 'sqlcmd -S db.internal -U sa -P {s} -Q "SELECT 1"', _pw),
    Shape("mongosh_p", "shell", "mongosh --host db.internal -u admin -p {s}", _pw),
    Shape("htpasswd_b", "shell", "htpasswd -b -c /etc/nginx/.htpasswd admin {s}", _lower_pw),
    Shape("xfreerdp", "shell", "xfreerdp /v:win.internal /u:admin /p:{s}", _pw),
    Shape("net_use", "shell", "net use \\\\files\\share {s} /user:CORP\\alice", _pw),
    Shape("sqlplus", "shell", "sqlplus scott/{s}@orcl", _pw),
    Shape("lftp_u", "shell", "lftp -u deploy,{s} sftp://files.example.com", _pw),
    Shape("vault_login", "shell", "vault login {s}", _pw),
    Shape("kubectl_token", "shell", "kubectl --token={s} get pods", _pw),
    Shape("flag_storepass_eq", "shell", "app --db-password={s} --verbose", _lower_pw),
    Shape("flag_secret_short", "shell", "app -client-secret {s}", _pw),
    Shape("flag_credentials", "shell", "tool --credentials deploy:{s} sync", _pw),
    Shape("flag_api_key", "shell", "app --api-key {s}", _lower_pw),
    Shape("flag_key", "shell", "license-tool activate --key {s}", _pw),
    Shape(
        "url_scheme",
        "detect-secrets:basic_auth",
        "git clone https://deploy:{s}@git.example.com/acme/app.git",
        _pw,
    ),
    Shape("url_no_scheme_grpc", "shell", "failed to connect to alice:{s}@127.0.0.1:4317", _pw),
    Shape(
        "url_no_scheme_proxy",
        "shell",
        "export https_proxy=proxyuser:{s}@proxy.corp.example.com:3128",
        _lower_pw,
    ),
    Shape("url_token_user", "shell", "git clone https://{s}@github.com/acme/app.git", _pw),
    Shape(
        "pip_index_url",
        "shell",
        "pip install --index-url https://__token__:{s}@pypi.example.com/simple pkg",
        _pw,
    ),
    Shape(
        "url_query_token", "shell", "https://api.example.com/v1/items?access_token={s}&page=2", _pw
    ),
    Shape("pgpass_line", "shell", "db.internal:5432:orders:app:{s}", _lower_pw),
    Shape("pgpass_echo", "shell", 'echo "*:*:*:postgres:{s}" >> ~/.pgpass', _pw),
    Shape("npmrc_auth_token", "shell", "//registry.npmjs.org/:_authToken={s}", _pw),
    Shape("npmrc_quoted", "shell", '//npm.pkg.github.com/:_authToken="{s}"', _pw),
    Shape(
        "npm_config_set_space", "shell", "npm config set //npm.pkg.github.com/:_authToken {s}", _pw
    ),
    Shape("npmrc_auth", "shell", "_auth={s}", _basic),
    Shape("netrc_line", "shell", "machine api.example.com login deploy password {s}", _lower_pw),
    Shape("netrc_lines", "shell", "machine github.com\n  login alice\n  password {s}\n", _lower_pw),
    Shape("yaml_password", "shell", "database:\n  user: app\n  password: {s}\n", _lower_pw),
    Shape("env_password", "detect-secrets:keyword", "export DB_PASSWORD={s}", _pw),
    Shape("env_pass_word", "detect-secrets:keyword", "DEPLOY_PASS={s} ./release.sh", _pw),
    Shape("java_property", "shell", "java -Djavax.net.ssl.keyStorePassword={s} -jar app.jar", _pw),
    Shape("python_kwarg", "detect-secrets:keyword", 'client = Client(api_key="{s}")', _pw),
    Shape("json_secret", "detect-secrets:keyword", '{"client_secret": "{s}"}', _pw),
    Shape("connection_string", "shell", "Server=db;Database=app;User Id=sa;Password={s};", _pw),
    Shape(
        "header_api_key",
        "gitleaks:curl-auth-header",
        'curl -H "X-API-Key: {s}" https://api.example.com',
        _pw,
    ),
    Shape(
        "header_private_token",
        "shell",
        'curl --header "PRIVATE-TOKEN: {s}" https://gitlab.example.com/api/v4/projects',
        _lower_pw,
    ),
    Shape("header_cookie", "shell", "Cookie: sessionid={s}; theme=dark", _pw),
    Shape("helm_set", "shell", "helm install app ./chart --set db.password={s}", _pw),
    Shape("sql_identified_by", "shell", "CREATE USER app IDENTIFIED BY '{s}';", _lower_pw),
    Shape(
        "kubectl_literal",
        "shell",
        "kubectl create secret generic db --from-literal=password={s}",
        _lower_pw,
    ),
)
#: Shapes that are one token (no space, no line break): they fit where names and paths go.
TOKEN_SHAPES = tuple(
    shape for shape in SHAPES if shape.template == "{s}" and not shape.name.startswith("pem")
)


def _known_token(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    text, core = TOKEN_SHAPES[n % len(TOKEN_SHAPES)].draw(rng)
    return text, (core,)


def _shell_secret(rng: random.Random, n: int) -> tuple[str, tuple[str, ...]]:
    others = [shape for shape in SHAPES if shape not in TOKEN_SHAPES]
    text, core = others[n % len(others)].draw(rng)
    return text, (core,)


#: Every kind of secret, and how to make one.
KINDS: dict[str, _Gen] = {
    "github_token": _github_token,
    "github_pat": _github_pat,
    "aws_access_key_id": _aws_access_key_id,
    "aws_secret_access_key": _aws_secret_access_key,
    "google_api_key": _google_api_key,
    "slack_token": _slack_token,
    "stripe_key": _stripe_key,
    "openai_key": _openai_key,
    "private_key": _private_key,
    "jwt": _jwt,
    "bearer_token": _bearer_token,
    "url_password": _url_password,
    "command_line": _command_line,
    "env_assignment": _env_assignment,
    "json_assignment": _json_assignment,
    "yaml_assignment": _yaml_assignment,
    "high_entropy": _high_entropy,
    "custom": _custom,
    "known_token": _known_token,
    "shell_secret": _shell_secret,
}
#: Kinds that are one token (no space, no line break): they fit where names and paths go.
TOKEN_KINDS = (
    "github_token",
    "github_pat",
    "aws_access_key_id",
    "google_api_key",
    "slack_token",
    "stripe_key",
    "openai_key",
    "jwt",
    "url_password",
    "high_entropy",
    "custom",
    "known_token",
)


# --- texts around them ---------------------------------------------------------------------

# Words for planted sentences and filler. None of them is a word the scrubber keys on (token,
# secret, key, password, auth..., bearer, basic), so a secret is never caught by its neighbour.
_WORDS = (
    "the",
    "build",
    "pipeline",
    "fails",
    "on",
    "main",
    "after",
    "merging",
    "refactor",
    "please",
    "check",
    "why",
    "tests",
    "in",
    "module",
    "orders",
    "are",
    "flaky",
    "and",
    "fix",
    "them",
    "with",
    "a",
    "small",
    "change",
    "to",
    "retry",
    "logic",
    "deploy",
    "staging",
    "server",
    "config",
    "reads",
    "from",
    "file",
    "cluster",
    "nightly",
    "job",
    "report",
    "shows",
    "latency",
    "spike",
    "around",
    "noon",
    "cache",
    "misses",
)
# How a secret sits in a line of text.
_AROUND = (
    "{s}",
    "I found {s} in the logs",
    "copy '{s}' over",
    'use "{s}" for now',
    "({s})",
    "-> {s}",
    "line 42: {s}",
    "[{s}]",
    "{s}.",
    "see {s}, then rerun",
)
# How a secret sits in a shell command, by kind; the rest use the generic ones.
_COMMANDS: dict[str, tuple[str, ...]] = {
    "github_token": ("echo {s} | gh auth login --with-token", "GH_ENTERPRISE_HOST=x {s}"),
    "bearer_token": (
        'curl -sS -H "{s}" https://api.example.com/v1/me',
        "curl -sS -H '{s}' https://api.example.com/v1/orders",
    ),
    "url_password": ("git clone {s}", 'psql "{s}" -c "select 1"', "DATABASE_URL={s} ./manage.py"),
    "env_assignment": ("{s} && ./scripts/deploy.sh", "{s} npm run start"),
    "private_key": ("cat > id_deploy <<'EOF'\n{s}\nEOF",),
    "aws_secret_access_key": ("printf '[default]\\n{s}\\n' > ~/.aws/credentials",),
    "command_line": ("{s}", "cd /srv/app && {s}", "{s} && echo done"),
}
_GENERIC_COMMANDS = (
    "printf '%s\\n' '{s}' >> notes.txt",
    'echo "{s}" | tee -a out.log',
    "grep -rn '{s}' src/",
)
_PATHS = (
    "/home/dev/.config/{s}/hosts.yml",
    "/tmp/upload-{s}.json",
    "./secrets/{s}/config",
    "/var/lib/app/{s}",
)


def _place(template: str, secret: str) -> str:
    return template.replace("{s}", secret)


# --- the builder ---------------------------------------------------------------------------


@dataclass
class _Slot:
    """A place in an event that gets planted, filled once all places are known."""

    field: str
    style: str  # prompt, answer, note, command, args, path, name, label64, long, long_args
    set: Callable[[Any], None]
    session: str
    exported: bool = False  # for prompt/answer: shown on spans with content on
    kind: str | None = None  # a fixed kind (name slots of the per-kind logs)
    tool: str = ""  # for args: the tool's name


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.secrets: list[Secret] = []
        self.texts: list[PlantedText] = []
        self.made: Counter[str] = Counter()
        self.slots: list[_Slot] = []

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def secret(self, kind: str, field_: str, session: str) -> Secret:
        text, cores = KINDS[kind](self.rng, self.made[kind])
        self.made[kind] += 1
        secret = Secret(len(self.secrets), kind, text, cores, field_, session)
        self.secrets.append(secret)
        return secret

    def sentence(self, prefix: str, field_: str, session: str, exported: bool) -> str:
        marker = f"planted-{prefix}-{len(self.texts) + 1:04d}"
        self.texts.append(PlantedText(marker, field_, session, exported))
        words = " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(5, 10)))
        return f"{marker} {words}"

    def filler(self, n: int) -> str:
        out = ""
        while len(out) < n:
            out += self.rng.choice(_WORDS) + " "
        return out[:n]

    # -- filling ----------------------------------------------------------------------------

    def fill(self) -> None:
        """Give every slot its secrets: per field, the kinds in turn, so that every field sees
        every kind (a field met once gets all of them at once)."""
        per_field = Counter(slot.field for slot in self.slots if slot.kind is None)
        cycles: dict[str, Iterator[str]] = {}
        for slot in self.slots:
            token_only = slot.style in ("path", "name", "label64")
            pool = TOKEN_KINDS if token_only else tuple(KINDS)
            if slot.kind is not None:
                kinds = [slot.kind]
            else:
                if slot.field not in cycles:
                    order = list(pool)
                    self.rng.shuffle(order)
                    cycles[slot.field] = itertools.cycle(order)
                count = (
                    1
                    if token_only or slot.style.startswith("long")
                    else max(2, math.ceil(len(pool) / per_field[slot.field]))
                )
                kinds = [next(cycles[slot.field]) for _ in range(min(count, len(pool)))]
            slot.set(self._compose(slot, kinds))

    def _compose(self, slot: _Slot, kinds: list[str]) -> Any:
        secrets = [self.secret(kind, slot.field, slot.session) for kind in kinds]
        rng = self.rng
        if slot.style == "name":
            return secrets[0].text
        if slot.style == "path":
            return _place(rng.choice(_PATHS), secrets[0].text)
        if slot.style == "label64":  # a label the bridge cuts to 61 characters + "..."
            secret = secrets[0]
            start = min(secret.text.index(core) for core in secret.cores)
            lead = 61 - start - 20  # so that 20 characters of a core come before the cut
            return (self.filler(lead - 1) + " " if lead > 1 else "") + secret.text
        if slot.style in ("long", "long_args"):
            return self._long(slot, secrets[0])
        if slot.style == "command":
            return self._command(slot, secrets)
        if slot.style == "args":
            return self._args(slot, secrets)
        prefix = "prompt" if slot.style in ("prompt", "answer") else "note"
        lines = [self.sentence(prefix, slot.field, slot.session, slot.exported)]
        for secret in secrets:
            around = "{s}" if "\n" in secret.text else rng.choice(_AROUND)
            lines.append(_place(around, secret.text))
        return "\n".join(lines)

    def _command(self, slot: _Slot, secrets: list[Secret]) -> str:
        parts = [
            _place(self.rng.choice(_COMMANDS.get(s.kind, _GENERIC_COMMANDS)), s.text)
            for s in secrets
        ]
        note = self.sentence("note", slot.field, slot.session, False)
        return " && ".join(parts) + f"  # {note}"

    def _args(self, slot: _Slot, secrets: list[Secret]) -> dict[str, Any]:
        """Tool arguments of the shape the tool takes, the secrets spread over them."""
        half = max(1, len(secrets) // 2)
        head, tail = secrets[:half], secrets[half:]
        text = "\n".join(
            [self.sentence("note", slot.field, slot.session, False), *(s.text for s in tail)]
        )
        tool = slot.tool
        if tool in ("bash", "shell", "powershell"):
            return {"command": self._command(slot, head), "description": text}
        if tool in ("view", "read", "str_replace", "edit", "create", "write"):
            token = next((s for s in head if s.kind in TOKEN_KINDS), None)
            path = _place(self.rng.choice(_PATHS), token.text) if token else "/repo/app/.env"
            rest = [s.text for s in head if s is not token]
            return {"path": path, "file_text": "\n".join([text, *rest])}
        if tool == "task":
            return {
                "name": "helper",
                "prompt": text,
                "agent_type": "general-purpose",
                "description": "\n".join(s.text for s in head) or "delegate",
                "mode": "sync",
            }
        return {"input": text, "options": {"note": "\n".join(s.text for s in head)}}

    def _long(self, slot: _Slot, secret: Secret) -> Any:
        """A text long enough that the content cut falls inside the secret's main core, with
        about 20 characters of it before the cut (what a cut-then-scrub bridge would leak)."""
        prefix = "prompt" if slot.style == "long" and slot.exported else "note"
        head = self.sentence(prefix, slot.field, slot.session, slot.exported)
        core = secret.cores[0]
        first_run = len(re.match(r"[A-Za-z0-9]*", core).group())
        keep = max(WINDOW, min(first_run - 2, 20))
        if slot.style == "long_args":  # cut after JSON encoding: no escapes in the filler

            def render(text: str) -> str:
                return json.dumps({"command": text}, ensure_ascii=False, sort_keys=True)

            def build(n: int) -> str:
                return f"{head} {self.filler(n)} {secret.text} # more output follows"
        else:

            def render(text: str) -> str:
                return text

            def build(n: int) -> str:
                return f"{head}\n{self.filler(n)}\n{secret.text}\nmore output follows"

        n = CONTENT_CUT
        for _ in range(3):
            rendered = render(build(n))
            start = rendered.index(core)
            n += CONTENT_CUT - keep - start
        text = build(n)
        assert render(text).index(core) == CONTENT_CUT - keep, slot.field
        return {"command": text} if slot.style == "long_args" else text


# --- events --------------------------------------------------------------------------------


def _load(base: str) -> list[dict[str, Any]]:
    path = FIXTURES / base / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _is_main(event: dict[str, Any]) -> bool:
    data = event.get("data") or {}
    return "agentId" not in event and not data.get("parentToolCallId")


def _near(
    anchor: dict[str, Any], type_: str, data: dict[str, Any], builder: _Builder, agent: bool = True
) -> dict[str, Any]:
    """A new event written at the time of `anchor`, by the same agent."""
    event: dict[str, Any] = {
        "type": type_,
        "data": data,
        "id": builder.uuid(),
        "timestamp": anchor["timestamp"],
        "parentId": None,
    }
    if agent and "agentId" in anchor:
        event["agentId"] = anchor["agentId"]
        parent_call = (anchor.get("data") or {}).get("parentToolCallId")
        if parent_call:
            data["parentToolCallId"] = parent_call
    return event


def _insert_extras(events: list[dict[str, Any]], builder: _Builder) -> list[dict[str, Any]]:
    """Add the events the captures lack, where the CLI would write them: an unknown event type
    after session.start; hooks, compaction and truncation after the first user message; a
    failed model call and its retry in the first turn; a permission around the first shell
    command; and in the first sub-agent, its own hooks, permission and session.error."""
    out: list[dict[str, Any]] = []
    done: set[str] = set()
    for event in events:
        type_ = event["type"]
        before: list[dict[str, Any]] = []
        after: list[dict[str, Any]] = []
        main = _is_main(event)
        data = event.get("data") or {}
        if type_ == "session.start" and "unknown" not in done:
            done.add("unknown")
            after.append(
                _near(
                    event,
                    "session.plugin_state_saved",
                    {"plugin": "acme-tools", "detail": ""},
                    builder,
                )
            )
        elif (
            type_ == "user.message"
            and main
            and "hooks" not in done
            and not data.get("isAutopilotContinuation")
        ):
            done.add("hooks")
            after += _hooks(event, builder, "userPromptSubmitted")
            after.append(
                _near(
                    event,
                    "session.compaction_start",
                    {
                        "compactionAttemptId": builder.uuid(),
                        "model": "gpt-4.1",
                        "trigger": "threshold",
                        "currentTokens": 61000,
                        "tokenLimit": 64000,
                    },
                    builder,
                )
            )
            after.append(
                _near(
                    event,
                    "session.compaction_complete",
                    {
                        "success": True,
                        "compactionAttemptId": builder.uuid(),
                        "model": "gpt-4.1",
                        "outcome": "applied",
                        "summaryContent": "",
                        "customInstructions": "",
                        "error": "",
                        "checkpointNumber": 1,
                        "checkpointPath": "",
                        "preCompactionTokens": 61000,
                        "postCompactionTokens": 9000,
                    },
                    builder,
                )
            )
            after.append(
                _near(
                    event,
                    "session.truncation",
                    {
                        "tokenLimit": 64000,
                        "preTruncationTokensInMessages": 70000,
                        "preTruncationMessagesLength": 80,
                        "postTruncationTokensInMessages": 60000,
                        "postTruncationMessagesLength": 70,
                        "tokensRemovedDuringTruncation": 10000,
                        "messagesRemovedDuringTruncation": 10,
                        "performedBy": "BasicTruncator",
                    },
                    builder,
                )
            )
        elif type_ == "assistant.turn_start" and main and "failure" not in done:
            done.add("failure")
            after.append(
                _near(
                    event,
                    "model.call_failure",
                    {
                        "model": "gpt-4.1",
                        "statusCode": 429,
                        "errorCode": "rate_limited",
                        "failureKind": "http_error",
                        "errorMessage": "",
                        "durationMs": 3,
                        "retryAttempt": 1,
                    },
                    builder,
                )
            )
            after.append(
                _near(
                    event,
                    "assistant.turn_retry",
                    {"reason": "rate_limited", "model": "gpt-4.1"},
                    builder,
                )
            )
        elif (
            type_ == "tool.execution_start"
            and data.get("toolName") == "bash"
            and "permission" not in done
            and not any(e["type"] == "permission.requested" for e in events)
        ):
            done.add("permission")
            request_id = builder.uuid()
            before.append(
                _near(
                    event,
                    "permission.requested",
                    {
                        "requestId": request_id,
                        "permissionRequest": {
                            "kind": "shell",
                            "toolCallId": data.get("toolCallId"),
                            "fullCommandText": "",
                            "intention": "",
                            "commands": [{"identifier": "", "readOnly": False}],
                        },
                        "promptRequest": {
                            "kind": "commands",
                            "fullCommandText": "",
                            "intention": "",
                            "commandIdentifiers": [""],
                        },
                    },
                    builder,
                )
            )
            before.append(
                _near(
                    event,
                    "permission.completed",
                    {
                        "requestId": request_id,
                        "toolCallId": data.get("toolCallId"),
                        "result": {"kind": "approved"},
                    },
                    builder,
                )
            )
        elif type_ == "assistant.turn_start" and not main and "subagent" not in done:
            done.add("subagent")
            after += _hooks(event, builder, "preToolUse")
            request_id = builder.uuid()
            after.append(
                _near(
                    event,
                    "permission.requested",
                    {
                        "requestId": request_id,
                        "permissionRequest": {"kind": "url", "url": "", "intention": ""},
                    },
                    builder,
                )
            )
            after.append(
                _near(
                    event,
                    "permission.completed",
                    {"requestId": request_id, "result": {"kind": "denied-by-rules"}},
                    builder,
                )
            )
            after.append(
                _near(
                    event,
                    "session.error",
                    {"errorType": "tool_policy", "message": "", "stack": ""},
                    builder,
                )
            )
        out += [*before, event, *after]
    return out


def _hooks(anchor: dict[str, Any], builder: _Builder, hook_type: str) -> list[dict[str, Any]]:
    invocation = builder.uuid()
    return [
        _near(
            anchor,
            "hook.start",
            {
                "hookInvocationId": invocation,
                "hookType": hook_type,
                "input": {"prompt": "", "toolName": "bash", "toolArgs": {"command": ""}},
            },
            builder,
        ),
        _near(
            anchor,
            "hook.end",
            {
                "hookInvocationId": invocation,
                "hookType": hook_type,
                "success": False,
                "output": {"message": ""},
                "error": {"message": "", "stack": ""},
            },
            builder,
        ),
    ]


def _setter(container: Any, key: Any) -> Callable[[Any], None]:
    def set_(value: Any) -> None:
        container[key] = value

    return set_


class _Walker:
    """Registers the slots of one log's events (after `_insert_extras`)."""

    def __init__(self, builder: _Builder, session: str, name_kind: str | None) -> None:
        self.b = builder
        self.session = session
        self.name_kind = name_kind  # set: also plant names, all of this kind
        self.open_turns: set[str] = set()
        self.long_done: set[str] = set()
        self.first_permission = True

    def slot(
        self,
        container: Any,
        key: Any,
        field_: str,
        style: str,
        *,
        exported: bool = False,
        tool: str = "",
    ) -> None:
        self.b.slots.append(
            _Slot(
                field_, style, _setter(container, key), self.session, exported=exported, tool=tool
            )
        )

    def name(self, container: Any, key: Any, field_: str, style: str = "name") -> None:
        if self.name_kind is not None:
            self.b.slots.append(
                _Slot(field_, style, _setter(container, key), self.session, kind=self.name_kind)
            )

    def long_once(self, what: str) -> bool:
        if what in self.long_done:
            return False
        self.long_done.add(what)
        return True

    def walk(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            data = event.setdefault("data", {})
            handler = getattr(self, "on_" + event["type"].replace(".", "_"), None)
            if handler is not None:
                handler(event, data)
            elif event["type"] == "session.plugin_state_saved":  # the unknown type
                self.slot(data, "detail", "<unknown event>.data.detail", "note")
                self.name(event, "type", "<unknown event>.type")

    # one method per event type: which of its fields carry text, which names

    def on_session_start(self, event: dict, data: dict) -> None:
        self.name(data, "selectedModel", "session.start.selectedModel")
        self.name(data, "copilotVersion", "session.start.copilotVersion")
        context = data.setdefault("context", {})
        self.slot(context, "cwd", "session.start.context.cwd", "path")

    def on_user_message(self, event: dict, data: dict) -> None:
        main = _is_main(event) and not data.get("isAutopilotContinuation")
        where = "user.message.content" if _is_main(event) else "user.message.content (sub-agent)"
        if main and self.long_once("prompt"):
            self.slot(data, "content", where + " (long)", "long", exported=True)
        else:
            self.slot(data, "content", where, "prompt", exported=main)
        self.slot(data, "transformedContent", "user.message.transformedContent", "note")
        file_ = {"type": "file", "path": "", "displayName": "notes.md"}
        selection = {
            "type": "selection",
            "filePath": "",
            "displayName": "config.yml:1-9",
            "text": "",
            "selection": {"start": {"line": 0, "character": 0}, "end": {"line": 8, "character": 0}},
        }
        data["attachments"] = [file_, selection]
        self.slot(file_, "path", "user.message.attachments.path", "path")
        self.slot(selection, "filePath", "user.message.attachments.filePath", "path")
        self.slot(selection, "text", "user.message.attachments.text", "note")

    def on_system_message(self, event: dict, data: dict) -> None:
        self.slot(data, "content", "system.message.content", "note")

    def on_system_notification(self, event: dict, data: dict) -> None:
        self.slot(data, "content", "system.notification.content", "note")

    def on_assistant_turn_start(self, event: dict, data: dict) -> None:
        self.open_turns.add(event.get("agentId", ""))
        self.name(data, "model", "assistant.turn_start.model")

    def on_assistant_turn_end(self, event: dict, data: dict) -> None:
        self.open_turns.discard(event.get("agentId", ""))

    def on_assistant_message(self, event: dict, data: dict) -> None:
        in_turn = event.get("agentId", "") in self.open_turns
        self.slot(data, "content", "assistant.message.content", "answer", exported=in_turn)
        self.slot(data, "reasoningText", "assistant.message.reasoningText", "note")
        self.name(data, "model", "assistant.message.model")
        for request in data.get("toolRequests") or []:
            self.slot(
                request,
                "arguments",
                "assistant.message.toolRequests.arguments",
                "args",
                tool=request.get("name", ""),
            )
            self.slot(
                request,
                "intentionSummary",
                "assistant.message.toolRequests.intentionSummary",
                "note",
            )
            self.name(request, "name", "assistant.message.toolRequests.name")

    def on_session_usage_record(self, event: dict, data: dict) -> None:
        usage = data.setdefault("usage", {})
        self.name(usage, "model", "session.usage_record.usage.model")
        self.name(usage, "initiator", "session.usage_record.usage.initiator")
        self.name(usage, "finishReason", "session.usage_record.usage.finishReason")

    def on_tool_execution_start(self, event: dict, data: dict) -> None:
        tool = data.get("toolName", "")
        if tool == "bash" and self.long_once("args"):
            self.slot(data, "arguments", "tool.execution_start.arguments (long)", "long_args")
        else:
            self.slot(data, "arguments", "tool.execution_start.arguments", "args", tool=tool)
        if tool == "bash":
            shell = data.setdefault(
                "shellToolInfo", {"possiblePaths": [], "hasWriteFileRedirection": False}
            )
            self.slot(
                shell,
                "displayCommand",
                "tool.execution_start.shellToolInfo.displayCommand",
                "command",
            )
        self.name(data, "toolName", "tool.execution_start.toolName")
        self.name(data, "mcpServerName", "tool.execution_start.mcpServerName")
        for key in ("mcpToolName", "mcpTransport"):
            if key in data:
                self.name(data, key, f"tool.execution_start.{key}")

    def on_tool_execution_complete(self, event: dict, data: dict) -> None:
        if data.get("success") is False:
            error = data.setdefault("error", {})
            self.slot(error, "message", "tool.execution_complete.error.message", "note")
            self.name(error, "code", "tool.execution_complete.error.code")
            properties = (data.get("toolTelemetry") or {}).get("properties") or {}
            if "failure_category" in properties:
                self.name(
                    properties,
                    "failure_category",
                    "tool.execution_complete.toolTelemetry.properties.failure_category",
                )
            return
        result = data.setdefault("result", {})
        if self.long_once("result"):
            self.slot(result, "content", "tool.execution_complete.result.content (long)", "long")
        else:
            self.slot(result, "content", "tool.execution_complete.result.content", "note")
        self.slot(
            result, "detailedContent", "tool.execution_complete.result.detailedContent", "note"
        )

    def on_subagent_started(self, event: dict, data: dict) -> None:
        self.slot(data, "agentDescription", "subagent.started.agentDescription", "note")
        self.slot(data, "agentDisplayName", "subagent.started.agentDisplayName", "note")
        self.name(data, "agentName", "subagent.started.agentName")
        self.name(data, "model", "subagent.started.model")

    def on_subagent_failed(self, event: dict, data: dict) -> None:
        self.slot(data, "error", "subagent.failed.error", "note")
        self.name(data, "agentName", "subagent.failed.agentName")

    def on_session_error(self, event: dict, data: dict) -> None:
        where = "session.error" if _is_main(event) else "session.error (sub-agent)"
        self.slot(data, "message", where + ".message", "note")
        self.slot(data, "stack", where + ".stack", "note")
        self.name(data, "errorType", where + ".errorType")
        self.name(data, "errorCode", where + ".errorCode")

    def on_session_task_complete(self, event: dict, data: dict) -> None:
        self.slot(data, "summary", "session.task_complete.summary", "note")
        self.name(data, "reason", "session.task_complete.reason")

    def on_abort(self, event: dict, data: dict) -> None:
        self.name(data, "reason", "abort.reason")

    def on_session_mode_changed(self, event: dict, data: dict) -> None:
        self.name(data, "newMode", "session.mode_changed.newMode")

    def on_session_model_change(self, event: dict, data: dict) -> None:
        self.name(data, "newModel", "session.model_change.newModel")

    def on_session_compaction_start(self, event: dict, data: dict) -> None:
        self.name(data, "model", "session.compaction_start.model")
        self.name(data, "trigger", "session.compaction_start.trigger")

    def on_session_compaction_complete(self, event: dict, data: dict) -> None:
        for key in ("summaryContent", "customInstructions", "error"):
            self.slot(data, key, f"session.compaction_complete.{key}", "note")
        self.slot(data, "checkpointPath", "session.compaction_complete.checkpointPath", "path")
        self.name(data, "outcome", "session.compaction_complete.outcome")
        self.name(data, "model", "session.compaction_complete.model")

    def on_session_truncation(self, event: dict, data: dict) -> None:
        self.name(data, "performedBy", "session.truncation.performedBy")

    def on_hook_start(self, event: dict, data: dict) -> None:
        hook_input = data.setdefault("input", {})
        self.slot(hook_input, "prompt", "hook.start.input.prompt", "note")
        self.slot(
            hook_input.setdefault("toolArgs", {}),
            "command",
            "hook.start.input.toolArgs.command",
            "command",
        )
        self.name(data, "hookType", "hook.start.hookType")

    def on_hook_end(self, event: dict, data: dict) -> None:
        self.slot(data.setdefault("output", {}), "message", "hook.end.output.message", "note")
        error = data.setdefault("error", {})
        self.slot(error, "message", "hook.end.error.message", "note")
        self.slot(error, "stack", "hook.end.error.stack", "note")
        self.name(data, "hookType", "hook.end.hookType")

    def on_permission_requested(self, event: dict, data: dict) -> None:
        request = data.get("permissionRequest") or {}
        if request.get("kind") == "url":
            self.slot(request, "url", "permission.requested.permissionRequest.url", "note")
        for key in ("fullCommandText", "intention"):
            if key in request:
                style = "note" if key == "intention" else "command"
                self.slot(request, key, f"permission.requested.permissionRequest.{key}", style)
        for command in request.get("commands") or []:
            self.slot(
                command,
                "identifier",
                "permission.requested.permissionRequest.commands.identifier",
                "command",
            )
        for segment in request.get("commandSegments") or []:
            self.slot(
                segment,
                "fullCommandText",
                "permission.requested.permissionRequest.commandSegments.fullCommandText",
                "command",
            )
        prompt = data.get("promptRequest") or {}
        for key in ("fullCommandText", "intention"):
            if key in prompt:
                style = "note" if key == "intention" else "command"
                self.slot(prompt, key, f"permission.requested.promptRequest.{key}", style)
        identifiers = prompt.get("commandIdentifiers") or []
        for index in range(len(identifiers)):
            self.slot(
                identifiers,
                index,
                "permission.requested.promptRequest.commandIdentifiers",
                "command",
            )

    def on_permission_completed(self, event: dict, data: dict) -> None:
        result = data.setdefault("result", {})
        if self.first_permission:
            self.first_permission = False
            self.name(result, "kind", "permission.completed.result.kind (cut at 64)", "label64")
        else:
            self.name(result, "kind", "permission.completed.result.kind")
        if "decisionSource" in data:
            self.name(data, "decisionSource", "permission.completed.decisionSource")

    def on_session_warning(self, event: dict, data: dict) -> None:
        self.slot(data, "message", "session.warning.message", "note")
        self.name(data, "warningType", "session.warning.warningType")

    def on_model_call_failure(self, event: dict, data: dict) -> None:
        self.slot(data, "errorMessage", "model.call_failure.errorMessage", "note")
        self.name(data, "errorCode", "model.call_failure.errorCode")
        self.name(data, "model", "model.call_failure.model")
        self.name(data, "failureKind", "model.call_failure.failureKind")

    def on_assistant_turn_retry(self, event: dict, data: dict) -> None:
        self.name(data, "reason", "assistant.turn_retry.reason")
        self.name(data, "model", "assistant.turn_retry.model")


# --- timestamps and ids --------------------------------------------------------------------


def _parse(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)


def _format(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _chain(events: list[dict[str, Any]]) -> None:
    """parentId = the previous event's id, as the CLI writes it."""
    previous = None
    for event in events:
        event["parentId"] = previous
        previous = event["id"]


def _rename(events: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    """Replace an id everywhere it occurs (it is a plain JSON string: no escaping needed)."""
    return [json.loads(json.dumps(e).replace(old, new)) for e in events]


# --- the corpus ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Leak:
    """A planted secret found in output: its longest piece there, what surrounds it, and
    whether all of its key material is there (else only a piece of it)."""

    secret: Secret
    fragment: str
    context: str
    complete: bool


@dataclass
class Corpus:
    """The planted logs (session directory name -> events.jsonl bytes), their secrets and
    planted texts, and how to find them in output."""

    sessions: dict[str, bytes]
    secrets: list[Secret]
    texts: list[PlantedText]
    _index: dict[str, tuple[int, int, int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        seen: Counter[str] = Counter()
        index: dict[str, tuple[int, int, int]] = {}
        for secret in self.secrets:
            for number, core in enumerate(secret.cores):
                for run in _RUN.finditer(core):
                    for i in range(run.start(), run.end() - WINDOW + 1):
                        window = core[i : i + WINDOW]
                        seen[window] += 1
                        index[window] = (secret.id, number, i)
        self._index = {w: where for w, where in index.items() if seen[w] == 1}
        findable = {sid for sid, _, _ in self._index.values()}
        lost = [s for s in self.secrets if s.id not in findable]
        assert not lost, f"secrets without a unique window: {lost[:3]}"

    def write(self, root: Path) -> Path:
        """Write the logs as a session-state directory: root/<session>/events.jsonl."""
        for name, data in self.sessions.items():
            (root / name).mkdir(parents=True, exist_ok=True)
            (root / name / "events.jsonl").write_bytes(data)
        return root

    def find_secrets(self, output: bytes | str, kinds: set[str] | None = None) -> list[Leak]:
        """Every planted secret (of `kinds`; all by default) a piece of which is in `output`."""
        text = output.decode("latin-1") if isinstance(output, bytes) else output
        best: dict[int, Leak] = {}
        for run in _RUN.finditer(text):
            value = run.group()
            i = 0
            while i <= len(value) - WINDOW:
                where = self._index.get(value[i : i + WINDOW])
                if where is None:
                    i += 1
                    continue
                sid, number, offset = where
                secret = self.secrets[sid]
                core = secret.cores[number]
                start, end = i, i + WINDOW  # grow the match as far as it follows the core
                while start > 0 and offset > 0 and value[start - 1] == core[offset - 1]:
                    start, offset = start - 1, offset - 1
                while (
                    end < len(value)
                    and offset + end - start < len(core)
                    and value[end] == core[offset + end - start]
                ):
                    end += 1
                if kinds is None or secret.kind in kinds:
                    fragment = value[start:end]
                    if sid not in best or len(fragment) > len(best[sid].fragment):
                        at = run.start() + start
                        context = text[max(at - 60, 0) : at + len(fragment) + 30]
                        whole = all(c in text for c in secret.cores)
                        best[sid] = Leak(secret, fragment, context, whole)
                i = end
        return sorted(best.values(), key=lambda leak: leak.secret.id)

    def find_texts(self, output: bytes | str) -> set[str]:
        """The markers of the planted texts present in `output`."""
        text = output.decode("latin-1") if isinstance(output, bytes) else output
        return set(_SENTINEL.findall(text))

    def summary(self) -> str:
        """What the corpus holds: secrets by kind, by field, planted texts."""
        by_kind = Counter(s.kind for s in self.secrets)
        by_field = Counter(s.field for s in self.secrets)
        events = sum(data.count(b"\n") for data in self.sessions.values())
        lines = [
            f"{len(self.sessions)} logs, {events} lines, {len(self.secrets)} secrets, "
            f"{len(self.texts)} planted texts "
            f"({sum(t.exported_with_content for t in self.texts)} exported with content)",
            "by kind:",
        ]
        lines += [f"  {kind:24} {n}" for kind, n in sorted(by_kind.items())]
        lines.append(f"by field ({len(by_field)}):")
        lines += [f"  {name:70} {n}" for name, n in sorted(by_field.items())]
        return "\n".join(lines)


def _bad_lines(builder: _Builder, anchor: dict[str, Any], session: str) -> list[str]:
    """Lines a crash or a bug could leave: an event whose type is a token and whose timestamp
    is bad or missing, a torn line, a line that is not JSON."""
    lines = []
    for kind in ("github_token", "aws_access_key_id", "slack_token", "stripe_key", "custom"):
        secret = builder.secret(kind, "<malformed line>.type (bad timestamp)", session)
        lines.append(
            json.dumps(
                {"type": secret.text, "data": {}, "id": builder.uuid(), "timestamp": "yesterday"}
            )
        )
        secret = builder.secret(kind, "<malformed line>.type (no timestamp)", session)
        lines.append(json.dumps({"type": secret.text, "data": {}, "id": builder.uuid()}))
    torn = _near(
        anchor,
        "session.plugin_state_saved",
        {
            "detail": "\n".join(
                builder.secret(kind, "<torn line>.data", session).text
                for kind in ("github_pat", "jwt", "private_key", "bearer_token", "url_password")
            )
        },
        builder,
    )
    whole = json.dumps(torn)
    lines.append(
        whole[: len(whole) - 40]
        + json.dumps(_near(anchor, "session.info", {"message": "", "infoType": "notice"}, builder))
    )
    lines.append("not json " + builder.secret("openai_key", "<not JSON line>", session).text)
    lines.append(
        json.dumps(
            {
                "type": "session.plugin_state_saved",
                "timestamp": 17,
                "data": {
                    "detail": builder.secret(
                        "google_api_key", "<malformed line>.data (bad timestamp)", session
                    ).text
                },
            }
        )
    )
    return lines


def build_corpus(seed: int = SEED) -> Corpus:
    """The corpus: one log per capture, one per kind of name-shaped secret, one with bad
    lines. Deterministic for a seed."""
    builder = _Builder(seed)
    logs: dict[str, list[dict[str, Any]]] = {}
    for base in _SESSION_BASES:
        name = builder.uuid()
        events = _insert_extras(_load(base), builder)
        _Walker(builder, name, None).walk(events)
        logs[name] = events
    for kind in TOKEN_KINDS:
        name = builder.uuid()
        events: list[dict[str, Any]] = []
        session_id = builder.uuid()
        start = _parse("2026-12-01T09:00:00.000Z")
        for base in _NAME_BASES:
            segment = _load(base)
            old = segment[0]["data"]["sessionId"]
            segment = _rename(segment, old, session_id)
            shift = start - _parse(segment[0]["timestamp"])
            for event in segment:
                event["timestamp"] = _format(_parse(event["timestamp"]) + shift)
            start = _parse(segment[-1]["timestamp"]) + timedelta(minutes=1)
            events += _insert_extras(segment, builder)
        _Walker(builder, name, kind).walk(events)
        logs[name] = events
    # the per-kind logs' ids: the session, first tool call, first sub-agent and first
    # interaction ids become secrets of the log's kind (they are exported as attributes)
    builder.fill()
    renames: dict[str, list[tuple[str, str]]] = {}
    for kind, name in zip(TOKEN_KINDS, list(logs)[len(_SESSION_BASES) :], strict=True):
        events = logs[name]
        ids = [
            ("session.start.sessionId", events[0]["data"]["sessionId"]),
            (
                "tool.execution_start.toolCallId",
                next(
                    e["data"]["toolCallId"] for e in events if e["type"] == "tool.execution_start"
                ),
            ),
            ("<envelope>.agentId", next(e["agentId"] for e in events if "agentId" in e)),
            (
                "user.message.interactionId",
                next(e["data"]["interactionId"] for e in events if e["type"] == "user.message"),
            ),
        ]
        renames[name] = [(old, builder.secret(kind, where, name).text) for where, old in ids]
    sessions: dict[str, bytes] = {}
    for name, events in logs.items():
        for old, new in renames.get(name, []):
            events = _rename(events, old, new)
        _chain(events)
        sessions[name] = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events).encode()
    bad = _load("run1_cli_prompt_basic")
    bad_name = builder.uuid()
    middle = len(bad) // 2
    rows = (
        [json.dumps(e) for e in bad[:middle]]
        + _bad_lines(builder, bad[middle], bad_name)
        + [json.dumps(e) for e in bad[middle:]]
    )
    sessions[bad_name] = "".join(row + "\n" for row in rows).encode()
    return Corpus(sessions, builder.secrets, builder.texts)


if __name__ == "__main__":  # python -m tests.secrets_corpus: what the corpus holds
    print(build_corpus().summary())
