"""Issue 6: no planted secret leaves otel-bridge, through any sink, content capture off or on.

tests/secrets_corpus.py plants thousands of fake secrets of every common kind into every text
field, name and id of real Copilot CLI logs, plus unique sentences where prompts, answers and
other content go. Here the corpus is replayed through every sink the bridge has, in separate
processes as a user would run them:

- `otel-bridge replay` with `--traces-file` and `--metrics-file`, OTLP to the real test receiver
  (tests/otlp_receiver.py) over gRPC or HTTP/protobuf, the console exporters, and its own log
  (stderr, `--log-level DEBUG`); with content capture off (the default; once with no option at
  all), on by `--capture-content`, and on by OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
- `otel-bridge run` following the corpus, the same sinks plus its Prometheus `/metrics`.

Every byte that came out is searched: the OTLP requests both as the protobuf bytes the receiver
decoded (serialized again) and in protobuf text form. Asserted: no piece of a planted secret
(WINDOW characters of its random core) appears anywhere; with content off, no planted sentence
either; with content on, every prompt and answer the bridge exports is there (so the test sees
content when there is some) beside "[REDACTED:" placeholders, and still no secret. Tokens of
the company format only `--scrub-pattern` knows are checked where that option is given.

The bridge runs once per configuration for the whole module (in parallel), and each sink is a
test of its own, so a failure names the configuration, the sink, the field and the kind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pytest

from otel_bridge.processors import Scrubber, ScrubberConfig
from tests import paths
from tests.otlp_receiver import OtlpReceiver
from tests.processes import log_tail, start_bridge, terminate
from tests.prometheus import free_port
from tests.secrets_corpus import CUSTOM_PATTERN, KINDS, Corpus, Leak, build_corpus

ROOT = paths.REPO
CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
TRACE_SINKS = ("traces-file", "otlp-traces-wire", "otlp-traces-text", "console")
OTHER_SINKS = ("metrics-file", "otlp-metrics-wire", "otlp-metrics-text", "log")
SINKS = TRACE_SINKS + OTHER_SINKS


@dataclass(frozen=True)
class Config:
    """One way of running the bridge over the corpus."""

    name: str
    protocol: str  # OTLP: grpc or http/protobuf
    content: bool  # content capture on
    flags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    daemon: bool = False  # `run` instead of `replay`

    @property
    def custom(self) -> bool:
        """Whether the company token format was configured (--scrub-pattern)."""
        return "--scrub-pattern" in self.flags

    @property
    def sinks(self) -> tuple[str, ...]:
        return (*SINKS, "prometheus") if self.daemon else SINKS


_CUSTOM = ("--scrub-pattern", CUSTOM_PATTERN)
CONFIGS = (
    Config("default-grpc", "grpc", content=False),  # no option at all
    Config("default-http", "http/protobuf", content=False, flags=_CUSTOM),
    Config(
        "content-flag-grpc",
        "grpc",
        content=True,
        flags=("--capture-content", *_CUSTOM, "--content-hash-salt", "pepper"),
    ),
    Config("content-flag-http", "http/protobuf", content=True, flags=("--capture-content",)),
    Config(
        "content-env-http", "http/protobuf", content=True, flags=_CUSTOM, env={CONTENT_ENV: "true"}
    ),
    Config(
        "run-content-http",
        "http/protobuf",
        content=True,
        flags=("--capture-content", *_CUSTOM),
        daemon=True,
    ),
)
BY_NAME = {config.name: config for config in CONFIGS}


@dataclass
class Outputs:
    """What one run of the bridge sent, sink by sink."""

    config: Config
    corpus: Corpus
    returncode: int
    sinks: dict[str, bytes]
    otlp_spans: int
    otlp_points: int

    @cached_property
    def leaks(self) -> dict[str, list[Leak]]:
        """Per sink, the planted secrets found in it (all kinds)."""
        return {sink: self.corpus.find_secrets(data) for sink, data in self.sinks.items()}

    @cached_property
    def texts(self) -> dict[str, set[str]]:
        """Per sink, the planted sentences found in it."""
        return {sink: self.corpus.find_texts(data) for sink, data in self.sinks.items()}

    def checked_leaks(self, sink: str) -> list[Leak]:
        """The leaks that count: custom-format tokens only where the bridge was told of them."""
        return [
            leak for leak in self.leaks[sink] if leak.secret.kind != "custom" or self.config.custom
        ]


# --- running the bridge --------------------------------------------------------------------


def _environment(config: Config, receiver: OtlpReceiver) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    endpoint = receiver.grpc_endpoint if config.protocol == "grpc" else receiver.http_endpoint
    env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": config.protocol,
            "OTEL_TRACES_EXPORTER": "otlp,console",
            "OTEL_METRICS_EXPORTER": "prometheus,otlp,console" if config.daemon else "otlp,console",
            "PYTHONPATH": str(ROOT),
            **config.env,
        }
    )
    return env


def _start(
    config: Config, corpus_dir: Path, work: Path, receiver: OtlpReceiver, port: int | None
) -> subprocess.Popen[bytes]:
    work.mkdir()
    files = [
        "--traces-file",
        str(work / "traces.jsonl"),
        "--metrics-file",
        str(work / "metrics.jsonl"),
    ]
    if config.daemon:
        command = [
            "run",
            "--session-state",
            str(corpus_dir),
            "--no-checkpoints",
            "--prometheus-port",
            str(port),
            "--metrics-interval",
            "0.5",
            "--idle-timeout",
            "1",
            "--poll-interval",
            "0.1",
            "--rescan-interval",
            "0.5",
            "--export-timeout",
            "10",
        ]
    else:
        command = ["replay", str(corpus_dir), "--no-progress"]
    return start_bridge(
        ["--log-level", "DEBUG", *command, *files, *config.flags],
        env=_environment(config, receiver),
        log=work / "stderr",
        stdout=work / "stdout",
        cwd=work,
    )


def _collect(
    config: Config,
    corpus: Corpus,
    work: Path,
    receiver: OtlpReceiver,
    returncode: int,
    prometheus: bytes = b"",
) -> Outputs:
    traces, metrics = receiver.requests("traces"), receiver.requests("metrics")
    sinks = {
        "traces-file": (work / "traces.jsonl").read_bytes(),
        "otlp-traces-wire": b"".join(r.message.SerializeToString() for r in traces),
        "otlp-traces-text": "\n".join(str(r.message) for r in traces).encode(),
        "console": (work / "stdout").read_bytes(),
        "metrics-file": (work / "metrics.jsonl").read_bytes(),
        "otlp-metrics-wire": b"".join(r.message.SerializeToString() for r in metrics),
        "otlp-metrics-text": "\n".join(str(r.message) for r in metrics).encode(),
        "log": (work / "stderr").read_bytes(),
    }
    if config.daemon:
        sinks["prometheus"] = prometheus
    return Outputs(
        config, corpus, returncode, sinks, len(receiver.spans()), len(receiver.metrics())
    )


def _file_spans(data: bytes) -> int:
    return sum(
        len(scope["spans"])
        for line in data.splitlines()
        if line.strip()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
    )


def _console_spans(data: bytes) -> int:
    return sum(
        1
        for line in data.splitlines()
        if line.startswith(b'{"name": ') and b'"context": {"trace_id"' in line
    )


def _scrape(
    port: int, process: subprocess.Popen[bytes], work: Path, timeout: float = 15.0
) -> bytes:
    """The daemon's Prometheus /metrics, once it serves them."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
                return resp.read()
        except OSError as exc:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"no /metrics on port {port} ({exc}); the bridge logged:\n"
                    f"{log_tail(work / 'stderr')}",
                    pytrace=False,
                )
            time.sleep(0.1)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return build_corpus()


@pytest.fixture(scope="module")
def runs(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Outputs]]:
    """Every configuration run once over the corpus, all at the same time."""
    root = tmp_path_factory.mktemp("privacy")
    corpus_dir = corpus.write(root / "session-state")
    port = free_port()
    receivers: dict[str, OtlpReceiver] = {}
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for config in CONFIGS:
            receivers[config.name] = OtlpReceiver().start()
        for config in sorted(CONFIGS, key=lambda c: not c.daemon):  # the daemon first
            processes[config.name] = _start(
                config, corpus_dir, root / config.name, receivers[config.name], port
            )
        outputs: dict[str, Outputs] = {}
        for config in CONFIGS:
            if config.daemon:
                continue
            code = processes[config.name].wait(timeout=60)
            outputs[config.name] = _collect(
                config, corpus, root / config.name, receivers[config.name], code
            )
        # the daemon: once it has exported as many spans as a replay of the same logs, scrape
        # /metrics, give its OTLP metrics one more interval, stop it
        daemon = next(c for c in CONFIGS if c.daemon)
        process, receiver = processes[daemon.name], receivers[daemon.name]
        expected = _file_spans(outputs["content-flag-http"].sinks["traces-file"])
        deadline = time.monotonic() + 30
        while (
            len(receiver.spans()) < expected
            and time.monotonic() < deadline
            and process.poll() is None
        ):
            time.sleep(0.2)
        prometheus = _scrape(port, process, root / daemon.name)
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
        outputs[daemon.name] = _collect(
            daemon, corpus, root / daemon.name, receiver, code, prometheus
        )
        yield outputs
    finally:
        for process in processes.values():
            terminate(process)
        for receiver in receivers.values():
            receiver.stop()


# --- reporting -----------------------------------------------------------------------------


def _describe(leaks: list[Leak], limit: int = 40) -> str:
    """Leaks grouped by field and kind: how many, whole or in part, one example."""
    groups: dict[tuple[str, str], list[Leak]] = defaultdict(list)
    for leak in leaks:
        groups[(leak.secret.field, leak.secret.kind)].append(leak)
    lines = [f"{len(leaks)} planted secrets leaked, in {len(groups)} (field, kind) groups:"]
    for (field_, kind), group in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        example = max(group, key=lambda leak: len(leak.fragment))
        whole = sum(leak.complete for leak in group)
        lines.append(
            f"- {field_} / {kind}: {len(group)} ({whole} whole, "
            f"{len(group) - whole} in part), e.g. planted {example.secret.text[:70]!r}"
            f"\n    out: ...{example.context!r}..."
        )
        if len(lines) > limit:
            lines.append(f"... and {len(groups) - limit} more groups")
            break
    return "\n".join(lines)


def _describe_texts(corpus: Corpus, found: set[str]) -> str:
    fields = Counter(text.field for text in corpus.texts if text.marker in found)
    return f"{len(found)} planted sentences found, from: " + ", ".join(
        f"{name} ({n})" for name, n in fields.most_common()
    )


def _cases(configs: tuple[Config, ...], sinks: tuple[str, ...] | None = None) -> list:
    return [
        pytest.param(config.name, sink, id=f"{config.name}-{sink}")
        for config in configs
        for sink in (sinks or config.sinks)
        if sink in config.sinks
    ]


# --- the tests -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [c.name for c in CONFIGS])
def test_every_sink_received_every_span(runs: dict[str, Outputs], name: str) -> None:
    """Not vacuous: each run read the whole corpus and every sink got all its spans."""
    out = runs[name]
    log = out.sinks["log"].decode(errors="replace")
    assert out.returncode == 0, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    spans = _file_spans(out.sinks["traces-file"])
    reference = _file_spans(runs["content-flag-http"].sinks["traces-file"])
    assert spans > 500
    assert spans == out.otlp_spans == _console_spans(out.sinks["console"]) == reference
    assert out.otlp_points > 0 and out.sinks["metrics-file"].strip()
    assert b"copilot.tool.calls" in out.sinks["otlp-metrics-wire"]
    if out.config.daemon:
        assert b"copilot_tool_calls" in out.sinks["prometheus"]
    else:
        assert f"replayed {len(out.corpus.sessions)} logs" in log


@pytest.mark.parametrize(("name", "sink"), _cases(CONFIGS))
def test_no_planted_secret_leaves_the_bridge(
    runs: dict[str, Outputs], name: str, sink: str
) -> None:
    leaks = runs[name].checked_leaks(sink)
    if leaks:
        pytest.fail(f"{name}, {sink}: " + _describe(leaks), pytrace=False)


@pytest.mark.parametrize(("name", "sink"), _cases(tuple(c for c in CONFIGS if not c.content)))
def test_without_content_capture_no_planted_text_leaves(
    runs: dict[str, Outputs], name: str, sink: str
) -> None:
    """With content off, no text from the logs goes out (docs/configuration.md: "prompts,
    answers, tool arguments and results, error messages"): only sizes, counts, names, ids and
    timings."""
    found = runs[name].texts[sink]
    if found:
        pytest.fail(f"{name}, {sink}: " + _describe_texts(runs[name].corpus, found), pytrace=False)


@pytest.mark.parametrize(
    ("name", "sink"), _cases(tuple(c for c in CONFIGS if c.content), TRACE_SINKS)
)
def test_with_content_capture_prompts_and_answers_go_out_scrubbed(
    runs: dict[str, Outputs], name: str, sink: str
) -> None:
    """Content on: every exported prompt and answer is there (the test can see content), with
    secrets replaced by placeholders."""
    out = runs[name]
    expected = {t.marker for t in out.corpus.texts if t.exported_with_content}
    missing = expected - out.texts[sink]
    assert not missing, (
        f"{len(missing)} of {len(expected)} prompts and answers missing: "
        + ", ".join(
            sorted(f"{t.marker} ({t.field})" for t in out.corpus.texts if t.marker in missing)[:20]
        )
    )
    data = out.sinks[sink]
    assert b"[REDACTED:" in data
    for kind in ("github_token", "private_key", "url_password", "secret", "high_entropy"):
        assert f"[REDACTED:{kind}]".encode() in data


@pytest.mark.parametrize(
    ("name", "sink"), _cases(tuple(c for c in CONFIGS if c.content), (*OTHER_SINKS, "prometheus"))
)
def test_content_never_reaches_metrics_or_logs(
    runs: dict[str, Outputs], name: str, sink: str
) -> None:
    found = runs[name].texts[sink]
    if found:
        pytest.fail(f"{name}, {sink}: " + _describe_texts(runs[name].corpus, found), pytrace=False)


def test_the_corpus_is_large_deterministic_and_covers_every_kind(corpus: Corpus) -> None:
    assert len(corpus.secrets) >= 1000
    assert {s.kind for s in corpus.secrets} == set(KINDS)
    assert len({s.marker for s in corpus.secrets}) == len(corpus.secrets)  # all distinct
    assert build_corpus().sessions == corpus.sessions  # seeded: the same bytes every time
    # every planted secret is findable in the logs themselves, and none in what is innocent
    logs = b"".join(corpus.sessions.values())
    assert {leak.secret.id for leak in corpus.find_secrets(logs)} == {s.id for s in corpus.secrets}
    fixture_logs = b"".join(p.read_bytes() for p in (ROOT / "tests/fixtures").rglob("*.jsonl"))
    assert corpus.find_secrets(fixture_logs) == []
    assert corpus.find_texts(logs) == {t.marker for t in corpus.texts}


@pytest.mark.parametrize("paths", ["keep", "basename", "hash"])
def test_a_checkpoint_s_scrubbing_then_the_export_s_is_the_export_s_alone(
    corpus: Corpus, paths: str
) -> None:
    """A checkpoint keeps a session's state scrubbed of secrets (paths kept), and the state
    restored from it is scrubbed again on export, as text or as a path: that must give what
    the export alone gives, or the spans of a restarted `run` would differ from those of an
    unbroken one."""
    stored = Scrubber(ScrubberConfig(extra_patterns=(CUSTOM_PATTERN,)))
    export = Scrubber(ScrubberConfig(extra_patterns=(CUSTOM_PATTERN,), paths=paths))
    for secret in corpus.secrets:
        kept = stored.text(secret.text)
        assert export.text(kept) == export.text(secret.text), (secret.kind, kept)
        assert export.path(kept) == export.path(secret.text), (secret.kind, kept)
