"""Issue 32, item 1: secrets in every shape. The corpus of tests/secrets_corpus.py (`SHAPES`:
known token formats of public secret-scanning rule sets, and the shell's ways of passing a
password) against the scrubber alone: every shape redacted in any text around it, the command
still readable, and the ordinary values of real work left alone."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_bridge.processors import Scrubber, ScrubberConfig
from tests.secrets_corpus import SHAPES, TOKEN_SHAPES, Shape

#: Where a secret sits in a text: alone, in a sentence, a line of a longer text, a command
#: after another, at a line's start after a prompt, in brackets.
AROUND = (
    "{}",
    "please run this for me:\n{}\nthen tell me what it printed",
    "cd /srv/app && {}",
    "$ {}\nok",
    "{}\n# more output follows",
    "Output of the step:\n\n{}\n\nexit code 0",
    "[{}]",
    "see ({}), then rerun",
)
#: Texts with no secret, from real work: paths, ids, digests, commands that look like the
#: shapes above without a secret in them. They must come through unchanged.
ORDINARY = (
    "/home/alice/src/acme-widgets_backend2024/services/orders/handlers.py",
    "git log --oneline 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "session d3ebfa08-de8a-4b43-93da-591db8061cb6 resumed",
    "sha256:3f2a9c1b7e4d5a6f8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a",
    "docker pull nginx:1.25@sha256:3f2a9c1b7e4d5a6f8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c",
    "echo hello | tee out.log",
    "echo $PASSWORD | sudo -S true",
    'echo "$REGISTRY_TOKEN" | docker login -u ci --password-stdin ghcr.io',
    "cat ~/.pgpass",
    "grep -n root /etc/passwd",
    "mysql -u root -p shop",
    "ssh -p 2222 deploy@build.internal",
    "zip -r backup.zip data/",
    "ldapsearch -x -W -b dc=example,dc=org",
    "curl -u deploy https://api.example.com",
    "git clone git@github.com:acme/app.git",
    "mailto:alice@example.com",
    "Co-authored-by: Copilot <223556219+Copilot@users.noreply.github.com>",
    "SELECT value FROM session_state WHERE key = 'current_phase';",
    "kubectl get secret db -o yaml --namespace prod",
    "openssl x509 -in cert.pem -noout -text",
    "ssh-keygen -t ed25519 -f ~/.ssh/id_deploy",
    "curl --key ./tls/client.key --cert ./tls/client.crt https://mtls.example.com",
    "sort --key=2 names.txt",
    "app --token-file /etc/app/token --max-tokens 4096",
    "the author field and the auth middleware",
    "src/components/UserProfileCard2024/index.tsx:12:5: error TS2304",
    "toolu_01ABCDEF23456789 call_44576fa8bc chatcmpl-2b99c565f4a6",
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg",
    "passing tests: 42 of 42; bypass the cache with --no-cache",
)


def test_the_corpus_has_at_least_60_shapes_from_the_public_rule_sets_and_the_shell() -> None:
    assert len(SHAPES) >= 60
    assert len({shape.name for shape in SHAPES}) == len(SHAPES)
    sources = Counter(shape.source.split(":")[0] for shape in SHAPES)
    assert sources["gitleaks"] >= 30 and sources["detect-secrets"] >= 5 and sources["shell"] >= 40
    assert len(TOKEN_SHAPES) >= 30


@pytest.mark.parametrize("shape", SHAPES, ids=[shape.name for shape in SHAPES])
def test_every_shape_is_redacted_wherever_it_sits(shape: Shape) -> None:
    scrubber = Scrubber()
    rng = random.Random(shape.name)
    for around in AROUND:
        text, core = shape.draw(rng)
        scrubbed = scrubber.text(around.format(text))
        assert core not in scrubbed, (around, scrubbed)
        assert "[REDACTED:" in scrubbed
        assert scrubber.text(scrubbed) == scrubbed  # redacting again changes nothing


@pytest.mark.parametrize(
    ("command", "kept"),
    [
        ("echo 'Xk9fPq2LmZ7tWb4R' | sudo -S apt-get install -y nginx", "| sudo -S apt-get"),
        ("mysql -uroot -pXk9fPq2LmZ7tWb4R -h db shop", "mysql -uroot -p"),
        ("redis-cli -h cache AUTH Xk9fPq2LmZ7tWb4R", "redis-cli -h cache AUTH "),
        ("ldapsearch -x -w Xk9fPq2LmZ7tWb4R -b dc=example", "-b dc=example"),
        ("zip -P Xk9fPq2LmZ7tWb4R -r backup.zip data/", "-r backup.zip data/"),
        ("keytool -list -storepass Xk9fPq2LmZ7tWb4R -keystore a.jks", "-keystore a.jks"),
        ("failed to connect to alice:Xk9fPq2LmZ7tWb4R@127.0.0.1:4317", "@127.0.0.1:4317"),
        ("db.internal:5432:orders:app:Xk9fPq2LmZ7tWb4R", "db.internal:5432:orders:app:"),
    ],
)
def test_only_the_secret_goes_and_the_command_still_reads(command: str, kept: str) -> None:
    scrubbed = Scrubber().text(command)
    assert "Xk9fPq2LmZ7tWb4R" not in scrubbed
    assert kept in scrubbed


@pytest.mark.parametrize("ordinary", ORDINARY)
def test_ordinary_values_of_real_work_survive(ordinary: str) -> None:
    assert Scrubber().text(ordinary) == ordinary


_ALPHABET = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@settings(max_examples=300, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    seed=st.integers(0, 2**32 - 1),
    before=st.sampled_from(["", "ok ", "note:\n", "> ", "```sh\n", "1. "]),
    after=st.sampled_from(["", "\n", " # done", "\n```", "\nexit 0"]),
    paths=st.sampled_from(["keep", "basename", "hash"]),
    limit=st.sampled_from([8192, 200]),
)
def test_no_shape_survives_any_surrounding_text_or_setting(
    shape: Shape, seed: int, before: str, after: str, paths: str, limit: int
) -> None:
    """Property: whatever is around a secret of any shape, and however the scrubber is set
    (paths rewritten or not, content cut short), none of the secret comes out, as text or as
    content (JSON strings, cut after redaction)."""
    text, core = shape.draw(random.Random(seed))
    scrubber = Scrubber(ScrubberConfig(paths=paths, content_max_chars=limit))
    content = before + text + after
    out = scrubber.attributes(
        {
            "input.value": content,
            "gen_ai.tool.call.arguments": '{"command": ' + _json(content) + "}",
            "gen_ai.tool.call.result": content,
            "copilot.error.message": content,
        }
    )
    for value in out.values():
        assert isinstance(value, str)
        assert core not in value and core[:12] not in value, value


def _json(value: object) -> str:
    return json.dumps(value)


def test_a_json_key_that_names_a_secret_hides_its_value_and_one_about_a_secret_does_not() -> None:
    arguments = {
        "passphrase": "correct horse battery staple",
        "clientSecret": "plain words too",
        "auth_token": "opaque-value",
        "author": "Alice Smith",
        "max_tokens": "unlimited",
        "token_type": "bearer-ish",
        "secret_key_id": "primary-key",
        "SECRET_KEY_FILE": "/etc/app/secret.key",
    }
    out = Scrubber().attributes({"gen_ai.tool.call.arguments": _json(arguments)})
    scrubbed = json.loads(str(out["gen_ai.tool.call.arguments"]))
    hidden = {key for key, value in scrubbed.items() if value == "[REDACTED:secret]"}
    assert hidden == {"passphrase", "clientSecret", "auth_token"}
