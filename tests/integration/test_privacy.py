"""Privacy defaults: content off, secrets scrubbed everywhere, sampling that keeps failures,
safe exposure."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from otel_bridge import AssemblerConfig, SpanRecord, StatusCode
from otel_bridge._records import SpanKind
from otel_bridge.processors import Scrubber, ScrubberConfig, TraceSampler, shannon_entropy
from otel_bridge.sources import scan_session_state
from tests import paths, spantree
from tests.builder import Log
from tests.spantree import by_name, turns

SECRETS = {  # kind: (text holding the secret, the part that must not survive)
    "github_token": ("ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c", "Ab3dEf6hIj9kLm2n"),
    "aws_access_key": ("AKIAQ3EXAMPLE7QZ5WJ2", "Q3EXAMPLE7QZ5WJ2"),
    "private_key": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    "jwt": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlLXBsYW50ZWQtMTIz",
        "c2lnbmF0dXJlLXBsYW50ZWQtMTIz",
    ),
    "bearer_token": (
        "Authorization: Bearer Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1",
        "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1",
    ),
    "url_password": ("https://deploy:Pl4nted-Pa55@git.example.com/repo.git", "Pl4nted-Pa55"),
    "assignment": ("export DB_PASSWORD=pl4nted-db-pass", "pl4nted-db-pass"),
    "google_api_key": ("AIzaSyPlantedKey0123456789abcdefghijkLM", "PlantedKey0123456789"),
    "slack_token": ("xoxb-123456789012-PlantedSlackToken99", "PlantedSlackToken99"),
    "high_entropy": ("token9 Zx9Qm2Lp8Vt4Rk7Wn3Bf6Hs1Jc5Dg0Ya2Ue8Oi4Xq", "Zx9Qm2Lp8Vt4Rk7W"),
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_kind_of_secret_is_redacted(kind: str) -> None:
    secret, core = SECRETS[kind]
    scrubbed = Scrubber().text(f"before {secret} after")
    assert "[REDACTED:" in scrubbed
    assert core not in scrubbed
    assert scrubbed.startswith("before") and scrubbed.endswith("after")


@pytest.mark.parametrize(
    "innocent",
    [
        "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",  # a git commit
        "d3ebfa08-de8a-4b43-93da-591db8061cb6",  # a session id
        "/home/dev/project/src/otel_bridge/_assembler.py",
        "The quick brown fox jumps over the lazy dog, twice.",
        "call_44576fa8bc",
        "chatcmpl-2b99c565f4a6",
    ],
)
def test_ordinary_text_is_left_alone(innocent: str) -> None:
    assert Scrubber().text(innocent) == innocent


#: Command lines that carry a credential: (the command, the secret, what must stay of it).
COMMAND_LINES = [
    (
        "git clone https://glpat-Xk9fPq2LmZ7tWb4RyC3d@gitlab.com/acme/app.git",
        "Xk9fPq2LmZ7t",
        "git clone https://",
    ),
    (
        "git clone https://Xk9fPq2LmZ7tWb4R@github.com/acme/app.git",
        "Xk9fPq2LmZ7t",
        "@github.com/acme",
    ),
    ("git clone https://oauth2:Xk9fPq2L@gitlab.com/a/b.git", "Xk9fPq2L", "oauth2:"),
    ("docker login -u deploy -p Xk9fPq2L registry.example.com", "Xk9fPq2L", "registry.example"),
    ("docker login --username deploy --password Xk9fPq2L ghcr.io", "Xk9fPq2L", "ghcr.io"),
    ("podman login -p 'Xk9 fPq2L' quay.io", "fPq2L", "quay.io"),
    ("mysql -h db -u root -pXk9fPq2L shop", "Xk9fPq2L", "-u root -p"),
    ("mysqldump --single-transaction -p'Xk9fPq2L' shop", "Xk9fPq2L", "shop"),
    ("mysql -u root -proot shop", "-proot", "shop"),
    ("curl -sS -u deploy:Xk9fPq2L https://api.example.com", "Xk9fPq2L", "-u deploy:"),
    ("curl --user=deploy:Xk9fPq2L https://api.example.com", "Xk9fPq2L", "deploy:"),
    ("wget --user=deploy --password=Xk9fPq2L https://x.example.com/a", "Xk9fPq2L", "wget"),
    ("sshpass -p 'Xk9fPq2L' ssh deploy@host", "Xk9fPq2L", "ssh deploy@host"),
    ("sshpass -pXk9fPq2L ssh deploy@host", "Xk9fPq2L", "ssh deploy@host"),
    ("DEPLOY_PASS=Xk9fPq2L ./release.sh", "Xk9fPq2L", "./release.sh"),
    ("PGPASSWORD=Xk9fPq2L psql -h db", "Xk9fPq2L", "psql -h db"),
    ("MYSQL_PWD=Xk9fPq2L mysqldump shop", "Xk9fPq2L", "mysqldump shop"),
    ("./manage.py createsuperuser --password Xk9fPq2L", "Xk9fPq2L", "--password "),
    ("app --password=Xk9fPq2L --verbose", "Xk9fPq2L", "--verbose"),
    ("app --api-key Xk9fPq2L --verbose", "Xk9fPq2L", "--verbose"),
    ("app --client-secret 'a b c d e f'", "a b c d e f", "--client-secret"),
    ("gh api -H 'Authorization: token Xk9fPq2LmZ7tWb4RyC3d' /user", "Xk9fPq2LmZ7t", "/user"),
    ("curl -H 'X-Api-Key: Xk9fPq2L' https://api.example.com", "Xk9fPq2L", "curl -H"),
    ("curl -H 'Authorization: Xk9fPq2L' https://api.example.com", "Xk9fPq2L", "curl -H"),
    ("redis-cli -h cache -a Xk9fPq2L ping", "Xk9fPq2L", "ping"),
    ("smbclient //srv/share -U alice%Xk9fPq2L", "Xk9fPq2L", "-U alice%"),
    ("openssl enc -aes-256-cbc -pass pass:Xk9fPq2L -in f", "Xk9fPq2L", "-in f"),
    ("machine api.example.com login deploy password Xk9fPq2L", "Xk9fPq2L", "login deploy"),
    ("CREATE USER app IDENTIFIED BY 'Xk9fPq2L';", "Xk9fPq2L", "CREATE USER app"),
    ("ALTER ROLE app WITH PASSWORD 'hunter2';", "hunter2", "ALTER ROLE"),
    (
        "aws configure set aws_secret_access_key wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEM",
        "aws configure set",
    ),
    ("npm config set //registry.npmjs.org/:_authToken=Xk9fPq2L", "Xk9fPq2L", "npm config set"),
    ("export NPM_TOKEN=npm_Xk9fPq2LmZ7tWb4RyC3dXk9fPq2LmZ7tWb4R", "Xk9fPq2LmZ7t", "export"),
    ("kubectl create secret generic db --from-literal=password=Xk9fPq2L", "Xk9fPq2L", "kubectl"),
]


@pytest.mark.parametrize(("command", "secret", "kept"), COMMAND_LINES)
def test_command_line_credentials_are_redacted_and_the_command_stays(
    command: str, secret: str, kept: str
) -> None:
    scrubbed = Scrubber().text(command)
    assert secret not in scrubbed and "[REDACTED:" in scrubbed
    assert kept in scrubbed
    assert Scrubber().text(scrubbed) == scrubbed  # scrubbing twice changes nothing


@pytest.mark.parametrize(
    "ordinary",
    [
        "/home/alice/src/acme-widgets_backend2024/services",
        "cd /home/alice/src/acme-widgets_backend2024/services && make test",
        "/home/alice/.copilot/session-state/d3ebfa08-de8a-4b43-93da-591db8061cb6/events.jsonl",
        "/home/bob/projects/InvoiceService2023/src/main/java/com/acme/Billing.java",
        "src/components/UserProfileCard2024/index.tsx",
        "/var/lib/docker/overlay2/3f2a9c1b7e4d5a6f8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a/merged",
        "getUserAccountSettingsHandlerFactory2024",
        "mkdir -p build/out && cp -p a b",
        "ssh -p 2222 deploy@build.internal",
        "docker run -u 1000:1000 -p 8080:80 nginx",
        "git push -u origin feature/login-page",
        "docker login --password-stdin -u deploy ghcr.io",
        "docker login ghcr.io",
        "mysql -u root -p shop",
        "curl -u deploy https://api.example.com",
        "curl -sS https://api.example.com/v1/items | jq .",
        "sort -u names.txt && ps -u root",
        "app --token-file /etc/app/token --key-id 12 --session-id d3ebfa08",
        'app --password $DB_PASSWORD --token "$GITHUB_TOKEN"',
        "the password field is required; reset your password here",
        "Password Manager, compass=north, bypass the cache",
        "git clone git@github.com:acme/app.git",
        "git clone https://github.com/acme/app.git",
        "ssh://git@github.com/acme/app.git",
        "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
        "toolu_01ABCDEF23456789",
        "npm install passport passport-local",
        "pip install --user requests",
    ],
)
def test_ordinary_commands_paths_and_ids_are_left_alone(ordinary: str) -> None:
    assert Scrubber().text(ordinary) == ordinary


def test_a_random_token_is_redacted_with_no_secret_word_near_it() -> None:
    # no pattern's trigger ("token", "key", a known prefix...) is in the text: only the
    # entropy check can find it, and it must still run
    token = "Zx9Qm2Lp8Vt4Rk7Wn3Bf6Hs1Jc5Dg0Ya2Ue8Oi4Xq"
    assert Scrubber().text(f"see {token} here") == "see [REDACTED:high_entropy] here"
    assert Scrubber(ScrubberConfig(entropy=False)).text(f"see {token}") == f"see {token}"


def test_extra_patterns_lists_and_paths() -> None:
    scrubber = Scrubber(
        ScrubberConfig(
            extra_patterns=(r"ACME-\d{6}",),
            deny_attributes=frozenset({"copilot.prompt.length"}),
            paths="basename",
        )
    )
    assert scrubber.text("ticket ACME-123456 done") == "ticket [REDACTED:custom] done"
    assert scrubber.attributes({"copilot.prompt.length": 5, "x": "/a/b/c.txt"}) == {"x": "c.txt"}
    hashed = Scrubber(ScrubberConfig(paths="hash")).text("read /etc/app/config.yml now")
    assert hashed.startswith("read path:") and "config" not in hashed
    only = Scrubber(ScrubberConfig(allow_attributes=frozenset({"keep"})))
    assert only.attributes({"keep": 1, "drop": 2}) == {"keep": 1}
    with pytest.raises(Exception):  # noqa: B017  (re.error)
        ScrubberConfig(extra_patterns=("(unclosed",))


def test_a_record_is_scrubbed_everywhere_it_carries_text() -> None:
    from otel_bridge import SpanEventRecord

    secret = SECRETS["github_token"][0]
    record = SpanRecord(
        1,
        2,
        None,
        f"execute_tool {secret}",
        SpanKind.INTERNAL,
        0,
        1,
        {"a": secret, "b": [secret, "ok"], "n": 3},
        StatusCode.ERROR,
        f"failed with {secret}",
        (SpanEventRecord(f"e {secret}", 0, {"c": secret}),),
    )
    out = Scrubber().record(record)
    assert secret not in repr(out)
    assert out.attributes["n"] == 3 and out.attributes["b"][1] == "ok"


def test_a_record_without_secrets_comes_through_whole() -> None:
    """Scrubbing builds the record anew field by field: none may be lost on the way."""
    from otel_bridge import LinkRecord, SpanEventRecord

    record = SpanRecord(
        trace_id=11,
        span_id=12,
        parent_span_id=13,
        name="execute_tool bash",
        kind=SpanKind.CLIENT,
        start_ns=14,
        end_ns=15,
        attributes={"s": "a plain value", "i": 7, "f": 0.5, "b": True, "l": ["x", "yy"]},
        status=StatusCode.ERROR,
        status_message="exit code 1",
        events=(SpanEventRecord("compaction", 16, {"n": 1}),),
        links=(LinkRecord(17, 18, {"copilot.link": "previous"}),),
        root_span_id=19,
    )
    defaults = SpanRecord(1, 2, None, "n", SpanKind.INTERNAL, 0, 0)
    assert all(  # the record above sets every field away from its default
        getattr(record, f.name) != getattr(defaults, f.name) for f in dataclasses.fields(SpanRecord)
    )
    out = Scrubber().record(record)
    assert out == record
    assert out.root_span_id == record.root_span_id  # not compared by ==


def test_a_record_scrubbing_leaves_unchanged_is_kept_and_any_change_makes_a_new_one() -> None:
    """Scrubbing keeps a record it changes nothing in (most spans), and only such a one."""
    from otel_bridge import SpanEventRecord

    secret = SECRETS["github_token"][0]
    plain = SpanRecord(
        1,
        2,
        None,
        "chat gpt-4.1",
        SpanKind.CLIENT,
        0,
        1,
        {"s": "a plain value", "l": ["x"], "n": 3, "copilot.error.message": "exit 1"},
        StatusCode.ERROR,
        "exit code 1",
        (SpanEventRecord("compaction", 5, {"n": 1}),),
    )
    scrubber = Scrubber(ScrubberConfig(deny_attributes=frozenset({"denied"})))
    assert scrubber.record(plain) is plain
    changes = {
        "name": {"name": f"chat {secret}"},
        "attribute": {"attributes": {**plain.attributes, "s": secret}},
        "denied": {"attributes": {**plain.attributes, "denied": "x"}},
        "message": {"status_message": f"failed with {secret}"},
        "empty message": {"status_message": ""},
        "event": {"events": (SpanEventRecord("compaction", 5, {"n": secret}),)},
        "events list": {"events": []},
    }
    for what, change in changes.items():
        record = dataclasses.replace(plain, **change)  # type: ignore[arg-type]
        out = scrubber.record(record)
        assert out is not record, what
        assert secret not in repr(out) and "denied" not in out.attributes, what
    assert scrubber.record(dataclasses.replace(plain, status_message="")).status_message is None
    assert scrubber.record(dataclasses.replace(plain, events=[])).events == ()  # type: ignore[arg-type]


def test_a_token_of_fewer_than_16_distinct_characters_is_never_high_entropy() -> None:
    # the scrubber skips counting such tokens: log2(15) < the 4 bits threshold
    import random

    rng = random.Random(7)
    alphabet = "0123456789abcdefABCDEF-_"
    for _ in range(2000):
        symbols = rng.sample(alphabet, rng.randint(1, 15))
        token = "".join(rng.choice(symbols) for _ in range(rng.randint(32, 80)))
        assert shannon_entropy(token) < 4.0
        assert Scrubber().text(token) == token


def content_log() -> Log:
    log = Log()
    log.start()
    log.user(content="planted prompt: fix the build")
    log.turn("0")
    log.usage("u1")
    log.add(
        "assistant.message",
        messageId="m1",
        content="planted answer",
        turnId="0",
        toolRequests=[{"toolCallId": "c1", "name": "bash", "arguments": {"command": "ls"}}],
    )
    log.add(
        "tool.execution_start",
        toolCallId="c1",
        toolName="bash",
        arguments={"command": "cat /etc/planted"},
    )
    log.tool_done("c1", result={"content": "planted tool output " + "z" * 50})
    log.turn_end("0")
    log.simple_turn("1", "u2")
    return log


def assemble_with(config: AssemblerConfig) -> list[SpanRecord]:
    return spantree.assemble(content_log(), "s", config=config)


def test_content_is_off_by_default_sizes_only() -> None:
    spans = assemble_with(AssemblerConfig())
    assert "planted" not in repr(spans)
    (root,) = by_name(spans, "invoke_agent")
    assert root.attributes["copilot.prompt.length"] == len("planted prompt: fix the build")
    (tool,) = by_name(spans, "execute_tool")
    assert tool.attributes["copilot.tool.result.length"] == len("planted tool output ") + 50
    assert "copilot.tool.arguments.length" in tool.attributes
    assert turns(spans, 1)[0].attributes["copilot.response.length"] == 14


def test_content_on_fills_the_genai_attributes_cut_to_the_limit() -> None:
    scrubber = Scrubber(ScrubberConfig(content_max_chars=30))  # cut on export, after redaction
    spans = scrubber.records(assemble_with(AssemblerConfig(capture_content=True)))
    (root,) = by_name(spans, "invoke_agent")
    messages = json.loads(root.attributes["gen_ai.input.messages"])
    assert messages == [
        {"role": "user", "parts": [{"type": "text", "content": "planted prompt: fix the build"}]}
    ]
    (tool,) = by_name(spans, "execute_tool")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {
        "command": "cat /etc/planted"
    }  # cut string by string: still valid JSON
    assert tool.attributes["gen_ai.tool.call.result"].endswith("...[truncated]")
    assert len(tool.attributes["gen_ai.tool.call.result"]) == 30 + len("...[truncated]")
    answer = json.loads(turns(spans, 1)[0].attributes["gen_ai.output.messages"])
    assert answer[0]["parts"][0]["content"] == "planted answer"


def test_salted_hashes_match_equal_texts_without_sending_them() -> None:
    first = assemble_with(AssemblerConfig(hash_salt="pepper"))
    again = assemble_with(AssemblerConfig(hash_salt="pepper"))
    other = assemble_with(AssemblerConfig(hash_salt="salt"))
    key = "copilot.prompt.sha256"
    root = lambda spans: by_name(spans, "invoke_agent")[0]  # noqa: E731
    assert root(first).attributes[key] == root(again).attributes[key]
    assert root(first).attributes[key] != root(other).attributes[key]
    assert "planted" not in repr(first)


def trace(trace_id: int, *, error: bool = False, outcome: str = "no_signal") -> list[SpanRecord]:
    child = SpanRecord(
        trace_id,
        2,
        1,
        "execute_tool bash",
        SpanKind.INTERNAL,
        0,
        1,
        {"error.type": "failure"} if error else {},
        StatusCode.ERROR if error else StatusCode.UNSET,
    )
    root = SpanRecord(
        trace_id,
        1,
        None,
        "invoke_agent copilot",
        SpanKind.INTERNAL,
        0,
        2,
        {"copilot.end_reason": "loop_end", "copilot.task.outcome": outcome},
    )
    return [child, root]


def test_sampler_keeps_every_failure_and_a_ratio_of_the_rest() -> None:
    sampler = TraceSampler(0.25)
    kept_failures = sum(len(sampler.offer(trace(i, error=True))) for i in range(1, 201))
    assert kept_failures == 400
    for outcome in ("failed", "error", "aborted"):
        assert len(TraceSampler(0.0).offer(trace(7, outcome=outcome))) == 2
    healthy = [
        sampler.offer(trace(i * 0x9E3779B97F4A7C15 % (1 << 128) or 1)) for i in range(1, 4001)
    ]
    kept = sum(1 for spans in healthy if spans)
    assert 0.2 < kept / 4000 < 0.3
    assert all(len(spans) in (0, 2) for spans in healthy)  # whole traces, never halves


def test_sampler_decisions_agree_across_replicas_and_hold_nothing_at_ratio_one() -> None:
    a, b = TraceSampler(0.5), TraceSampler(0.5)
    for i in range(1, 300):
        assert bool(a.offer(trace(i * 7919))) == bool(b.offer(trace(i * 7919)))
    child = trace(5)[0]
    assert TraceSampler(1.0).offer([child]) == [child]  # no buffering by default


def test_symlinks_out_of_the_watched_tree_are_not_followed(tmp_path, caplog) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "events.jsonl").write_text("secret\n")
    root = tmp_path / "session-state"
    (root / "inside").mkdir(parents=True)
    (root / "inside" / "events.jsonl").write_text("")
    (root / "evil").mkdir()
    os.symlink(outside / "events.jsonl", root / "evil" / "events.jsonl")
    os.symlink(outside, root / "linked-dir")
    found = [log.path.parent.name for log in scan_session_state(root)]
    assert found == ["inside"]
    assert "evil/events.jsonl: a symbolic link" in caplog.text


def test_the_metrics_endpoint_binds_loopback_by_default() -> None:
    from otel_bridge.cli._parser import build_parser

    args = build_parser().parse_args(["run"])
    assert args.prometheus_host == "127.0.0.1"


def test_the_traces_and_metrics_files_are_created_private(tmp_path) -> None:
    """With content capture the traces file holds prompts and command lines: created 0600
    whatever the umask (022 here, which would give 0644); a file that exists keeps its mode."""
    fixture = paths.FIXTURES / "run1_cli_prompt_basic" / "events.jsonl"
    traces, metrics, kept = tmp_path / "t.jsonl", tmp_path / "m.jsonl", tmp_path / "k.jsonl"
    kept.write_text("")
    kept.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for out in (traces, kept):
        done = subprocess.run(
            [
                sys.executable, "-m", "otel_bridge", "replay", str(fixture), "--no-progress",
                "--capture-content", "--traces-file", str(out), "--metrics-file", str(metrics),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=lambda: os.umask(0o022),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert out.stat().st_size > 0
    assert stat.S_IMODE(traces.stat().st_mode) == 0o600
    assert stat.S_IMODE(metrics.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.stat().st_mode) == 0o644


def test_checkpoints_are_private(tmp_path) -> None:
    from otel_bridge.checkpoint._store import CheckpointStore, FileCheckpoint

    store = CheckpointStore(tmp_path / "state")
    store.save({"log": FileCheckpoint("log", 1, 2, "f", 3, 4)})
    assert oct(Path(store.path).stat().st_mode & 0o777) == "0o600"
    assert oct(Path(store.directory).stat().st_mode & 0o777) == "0o700"


def test_json_content_is_scrubbed_as_decoded_and_cut_without_splitting_a_secret() -> None:
    secret = SECRETS["github_token"][0]
    arguments = json.dumps(
        {
            "command": f"curl -H 'x: y'\nGH={secret}",
            "password": "hunter22",
            "note": "x" * 40 + secret,
        }
    )
    scrubber = Scrubber(ScrubberConfig(content_max_chars=50))
    out = json.loads(
        scrubber.attributes({"gen_ai.tool.call.arguments": arguments})["gen_ai.tool.call.arguments"]
    )
    assert secret[4:16] not in json.dumps(out)
    assert out["password"] == "[REDACTED:secret]"
    assert out["note"].startswith("x" * 40 + "[REDACTED:")  # redacted first, then cut
    assert out["note"].endswith("...[truncated]")
