"""The gateway tier of deploy/otelcol/, for real: bridges -> load balancer -> tail samplers ->
Jaeger, every part a real process on 127.0.0.1.

Three `otel-bridge replay --shard I/3` (two over OTLP/gRPC, one over OTLP/HTTP) send every real
log of tests/fixtures to one Collector running deploy/otelcol/loadbalancer.yaml, which routes
by trace id to two Collectors running deploy/otelcol/sampler.yaml, which send what they keep to
Jaeger v2. Then, from the samplers' own metrics and Jaeger's query API:
- every trace reached exactly one sampler (the new traces the two counted add up to the traces
  there are), so each was judged whole;
- every trace with an ERROR span is in Jaeger, whole (the same spans as `replay --traces-file`);
- the others are in Jaeger, whole, or absent, as OTELCOL_SAMPLE_PERCENT says (0, 50 or 100:
  which ones the policy keeps at 50% is computed here from its hash of the trace id).
Also: a sampler's persistent queue outlives a restart while the backend is down, and
`otelcol validate` accepts every shipped configuration and refuses a broken one.
Jaeger and the Collector are built by scripts/build_test_parts.sh (tests/goparts.py).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.goparts import (
    BUILD_SCRIPT,
    COLLECTOR_VERSION,
    JAEGER_VERSION,
    MANIFEST,
    ROOT,
    Collector,
    Jaeger,
    jaeger_binary,
    otelcol_binary,
    running,
    validate,
)
from tests.integration.test_jaeger import (
    FIXTURES,
    Span,
    as_jaeger_stores,
    otlp_span,
    replay,
    traces_in_file,
)

DEPLOY = MANIFEST.parent


def _is_collector_config(path: Path) -> bool:
    """A Collector configuration has top-level `receivers:` and `service:` keys."""
    keys = {line.split(":")[0] for line in path.read_text().splitlines() if line[:1].isalpha()}
    return {"receivers", "service"} <= keys


#: Every Collector configuration the repository ships, under deploy/ (the gateway's, the compose
#: stack's...): the Collector built from the manifest has the components of all of them.
SHIPPED = sorted(
    p for p in (ROOT / "deploy").rglob("*.y*ml") if p != MANIFEST and _is_collector_config(p)
)
SHARDS = 3
_DECIDED = "otelcol_processor_tail_sampling_global_count_traces_sampled"
_NEW_TRACES = "otelcol_processor_tail_sampling_new_trace_id_received"


def test_the_build_script_and_the_tests_name_the_same_versions() -> None:
    script = BUILD_SCRIPT.read_text()
    assert f"JAEGER_VERSION={JAEGER_VERSION}\n" in script
    assert f"BUILDER_VERSION={COLLECTOR_VERSION} " in script
    # one Collector release for every module of the manifest (the builder's and the tests')
    minor = COLLECTOR_VERSION.split(".")[1]
    versions = set(re.findall(r"^\s+- gomod: \S+ (v\S+)$", MANIFEST.read_text(), re.M))
    assert versions == {COLLECTOR_VERSION, f"v1.{int(minor) - 94}.0"}, versions


def test_the_shipped_configurations_are_all_found() -> None:
    found = {str(p.relative_to(ROOT)) for p in SHIPPED}
    assert {"deploy/otelcol/loadbalancer.yaml", "deploy/otelcol/sampler.yaml"} <= found
    assert "deploy/compose/otelcol.yaml" in found
    assert not any("prometheus" in name or "kubernetes" in name for name in found)


@pytest.mark.parametrize("config", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_otelcol_validate_accepts_the_shipped_configuration(config: Path) -> None:
    """With the defaults (nothing set) and with the settings the tests run them with."""
    for env in ({}, {"OTELCOL_SAMPLERS": "[127.0.0.1:1234, 127.0.0.1:1235]"}):
        done = validate(config, env)
        assert done.returncode == 0, done.stdout + done.stderr


def test_otelcol_validate_refuses_a_broken_configuration(tmp_path: Path) -> None:
    """The check above can fail: a misspelt key is refused, naming it."""
    broken = tmp_path / "sampler.yaml"
    broken.write_text((DEPLOY / "sampler.yaml").read_text().replace("decision_wait:", "decison:"))
    done = validate(broken, {})
    assert done.returncode != 0
    assert "decison" in done.stdout + done.stderr


def probabilistic_keeps(trace_id: str, percent: int) -> bool:
    """Whether the tail sampler's `probabilistic` policy keeps a trace: the FNV-1a 64 hash of
    the salt ("default-hash-seed" when none is set) and the trace id's 16 bytes, at most
    MaxUint64 x ratio (tailsamplingprocessor v0.161.0, internal/sampling/probabilistic.go:
    hashTraceID, calculateThreshold; exact here for the percentages used)."""
    digest = 0xCBF29CE484222325
    for byte in b"default-hash-seed" + bytes.fromhex(trace_id):
        digest = ((digest ^ byte) * 0x100000001B3) % 2**64
    return digest <= (2**64 - 1) * percent // 100


def _wait(what: str, check: Callable[[], bool], explain: Callable[[], str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} after {timeout}s:\n{explain()}")
        time.sleep(0.2)


def _total(collectors: list[Collector], prefix: str) -> float:
    return sum(sum(c.metric_series(prefix).values()) for c in collectors)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[Span]]:
    """trace id -> spans of every log, from one plain `replay --traces-file`."""
    path = tmp_path_factory.mktemp("reference") / "all.jsonl"
    done = replay([FIXTURES], {"OTEL_TRACES_EXPORTER": "none"}, "--traces-file", str(path))
    assert done.returncode == 0, done.stderr
    return traces_in_file(path)


@pytest.mark.parametrize("percent", [0, 50, 100])
def test_bridges_through_the_gateway_into_jaeger(
    tmp_path: Path, reference: dict[str, set[Span]], percent: int
) -> None:
    jaeger_binary()
    otelcol_binary()  # skip, saying how to build them, when they are not built
    errors = {t for t, spans in reference.items() if any(s[5] == 2 for s in spans)}
    assert 0 < len(errors) < len(reference)  # the fixtures have both kinds
    kept = errors | {t for t in reference if probabilistic_keeps(t, percent)}
    if percent == 50:  # both policies matter: some traces are kept by the hash alone, some not
        assert errors < kept < set(reference)

    for name in ("jaeger", "s0", "s1", "lb"):
        (tmp_path / name).mkdir()
    jaeger = Jaeger(tmp_path / "jaeger")
    sampler_env = {
        "OTELCOL_BACKEND": jaeger.otlp_grpc,
        "OTELCOL_BACKEND_INSECURE": "true",
        "OTELCOL_SAMPLE_PERCENT": str(percent),
        "OTELCOL_DECISION_WAIT": "30s",
        "OTELCOL_DECISION_AFTER_ROOT": "1s",
    }
    samplers = [
        Collector(DEPLOY / "sampler.yaml", tmp_path / n, sampler_env, name=n) for n in ("s0", "s1")
    ]
    ring = ", ".join(s.grpc_endpoint for s in samplers)
    lb = Collector(
        DEPLOY / "loadbalancer.yaml", tmp_path / "lb", {"OTELCOL_SAMPLERS": f"[{ring}]"}, "lb"
    )
    with running(jaeger, *samplers, lb):
        for server in (jaeger, *samplers, lb):
            server.start()

        def bridge(shard: int) -> subprocess.CompletedProcess[str]:
            """Shards 0 and 1 over OTLP/gRPC, shard 2 over OTLP/HTTP."""
            grpc = shard < 2
            endpoint = lb.grpc_endpoint if grpc else f"127.0.0.1:{lb.http_port}"
            env = {
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{endpoint}",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc" if grpc else "http/protobuf",
            }
            return replay([FIXTURES], env, "--shard", f"{shard}/{SHARDS}")

        # the bridges run at the same time, as they would on their nodes
        with ThreadPoolExecutor(SHARDS) as pool:
            for done in pool.map(bridge, range(SHARDS)):
                assert done.returncode == 0, done.stderr

        def logs() -> str:
            return "\n".join(f"--- {c.name}\n{c.log_tail(15)}" for c in (lb, *samplers))

        # every trace decided, by exactly one sampler
        _wait(
            f"not every one of {len(reference)} traces was decided",
            lambda: _total(samplers, _DECIDED) >= len(reference),
            logs,
            timeout=30,
        )
        assert _total(samplers, _DECIDED) == len(reference)
        assert _total(samplers, _NEW_TRACES) == len(reference)
        assert all(_total([s], _NEW_TRACES) > 0 for s in samplers)  # both had a share

        for trace_id in kept:
            stored = jaeger.wait_for_trace(trace_id, len(reference[trace_id]))
            expected = {as_jaeger_stores(s) for s in reference[trace_id]}
            assert {otlp_span(s) for s in stored} == expected, trace_id
        # a trace not kept was never sent: with every trace decided and the kept ones stored,
        # the others are absent for good
        for trace_id in set(reference) - kept:
            assert jaeger.otlp_trace(trace_id) == [], trace_id

        # the persistent queues: each Collector keeps its queue in a file under its storage
        for collector in (lb, *samplers):
            assert any((collector.workdir / "storage").iterdir()), collector.name


def test_a_sampler_keeps_what_the_backend_did_not_take_across_a_restart(
    tmp_path: Path, reference: dict[str, set[Span]]
) -> None:
    """The persistent queue: with the backend down, a sampler that decided its traces and is
    then restarted still delivers them once the backend is up (an in-memory queue loses
    them)."""
    jaeger_binary()
    otelcol_binary()
    (tmp_path / "jaeger").mkdir()
    (tmp_path / "s0").mkdir()
    jaeger = Jaeger(tmp_path / "jaeger")  # its ports are chosen; it is not started yet
    env = {
        "OTELCOL_BACKEND": jaeger.otlp_grpc,
        "OTELCOL_BACKEND_INSECURE": "true",
        "OTELCOL_SAMPLE_PERCENT": "100",
        "OTELCOL_DECISION_WAIT": "30s",
        "OTELCOL_DECISION_AFTER_ROOT": "1s",
    }
    first = Collector(DEPLOY / "sampler.yaml", tmp_path / "s0", env, name="first")
    with running(first):
        first.start()
        done = replay(
            [FIXTURES],
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{first.grpc_endpoint}",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            },
        )
        assert done.returncode == 0, done.stderr
        _wait(
            "the sampler did not decide every trace",
            lambda: _total([first], _DECIDED) >= len(reference),
            first.log_tail,
            timeout=30,
        )
        # every trace is kept and none could be delivered: the backend is not there
        assert first.metric_series(_DECIDED) == {
            f'{_DECIDED}{{decision="sampled",sampled="true"}}': len(reference)
        }
    # the same storage directory, new ports; now the backend is up
    again = Collector(DEPLOY / "sampler.yaml", tmp_path / "s0", env, name="again")
    with running(jaeger, again):
        jaeger.start()
        again.start()
        for trace_id, spans in reference.items():
            stored = jaeger.wait_for_trace(trace_id, len(spans))
            assert {otlp_span(s) for s in stored} == {as_jaeger_stores(s) for s in spans}
        assert _total([again], _NEW_TRACES) == 0  # nothing came in: it all came off the disk
