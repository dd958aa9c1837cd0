"""A long task in a real Jaeger while it runs: `run` exports each finished turn (with its LLM
calls and tools) as it ends, so the trace backend shows the task's progress before the task is
over; the root comes last, when it ends (docs/spans.md, "Progress of a long task"). A SIGKILL
in the middle and a restart from the checkpoints repeat nothing: every span reaches the traces
file once, and Jaeger holds each once.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from otel_bridge import semconv as sc
from tests.builder import GrowingLog
from tests.goparts import Jaeger, jaeger_binary
from tests.processes import bridge_env, start_bridge, terminate

DEADLINE_S = 60.0


@pytest.fixture
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Any:
    jaeger_binary()  # skip, saying how to build it, when it is not built
    with Jaeger(tmp_path_factory.mktemp("jaeger")) as server:
        yield server


def start_run(state: Path, workdir: Path, jaeger: Jaeger) -> subprocess.Popen[bytes]:
    return start_bridge(
        [
            *("run", "--no-prometheus", "--session-state", str(state)),
            *(
                "--state-dir",
                str(workdir / "state"),
                "--traces-file",
                str(workdir / "traces.jsonl"),
            ),
            *("--poll-interval", "0.1", "--rescan-interval", "0.3", "--export-timeout", "2"),
        ],
        env=bridge_env(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_http_url,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_METRICS_EXPORTER": "none",
            }
        ),
        log=workdir / "bridge.err",
        append=True,
    )


def spans_in_file(path: Path) -> list[dict[str, Any]]:
    """Every span the traces file holds, in the order written (a repeat appears twice)."""
    if not path.exists():
        return []
    spans: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        for resource_spans in json.loads(line)["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                spans += scope_spans["spans"]
    return spans


def attribute(span: dict[str, Any], key: str) -> Any:
    for item in span.get("attributes", []):
        if item["key"] == key:
            return next(iter(item["value"].values()))
    return None


def names(spans: list[dict[str, Any]]) -> Counter[str]:
    """What kinds of spans: the root (no parent), turns by index, LLM calls, tools by call id."""
    out: Counter[str] = Counter()
    for span in spans:
        if not span.get("parentSpanId"):
            out["root"] += 1
        elif span["name"] == sc.SPAN_TURN:
            out[f"turn {attribute(span, sc.COPILOT_TURN_INDEX)}"] += 1
        elif attribute(span, sc.GEN_AI_TOOL_CALL_ID) is not None:
            out[f"tool {attribute(span, sc.GEN_AI_TOOL_CALL_ID)}"] += 1
        elif attribute(span, sc.GEN_AI_OPERATION_NAME) == sc.OP_CHAT:
            out["chat"] += 1
    return out


def wait_until(what: str, done: Any, process: subprocess.Popen[bytes], workdir: Path) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"run exited: {(workdir / 'bridge.err').read_text()[-3000:]}")
        result = done()
        if result:
            return result
        time.sleep(0.2)
    pytest.fail(f"{what}: not within {DEADLINE_S}s; {(workdir / 'bridge.err').read_text()[-3000:]}")


def checkpoint_names_delivered(workdir: Path, log: Path) -> bool:
    """The checkpoint of `log` names spans delivered after its safe place (the turns of the
    open task): a SIGKILL now must not make a restart send them again."""
    path = workdir / "state" / "checkpoints.jsonl"
    if not path.exists():
        return False
    for line in path.read_text().splitlines()[1:]:
        entry = json.loads(line)
        if entry.get("path") == str(log) and entry.get("sent"):
            return True
    return False


def test_a_long_task_shows_its_finished_turns_in_jaeger_before_it_ends_each_once(
    jaeger: Jaeger, tmp_path: Path
) -> None:
    state = tmp_path / "session-state"
    growing = GrowingLog(state)
    log = growing.log
    log.start()
    log.user()
    log.turn("0")
    log.usage("u0")
    log.message([("c1", "bash")], turn="0")
    log.tool_start("c1", "bash")
    log.tool_done("c1")
    log.turn_end("0")
    log.turn("1")
    log.usage("u1")
    log.message([("c2", "bash")], turn="1")
    log.tool_start("c2", "bash")  # still running
    growing.write()
    traces = tmp_path / "traces.jsonl"

    process = start_run(state, tmp_path, jaeger)
    try:
        # the finished turn, its LLM call and its tool go before the task ends, and the
        # running turn's LLM call, which has ended; not the running turn, its running tool,
        # nor the root
        first = wait_until(
            "the first turn exported",
            lambda: names(spans_in_file(traces))["turn 1"],
            process,
            tmp_path,
        )
        assert first == 1
        written = spans_in_file(traces)
        assert names(written) == Counter({"turn 1": 1, "chat": 2, "tool c1": 1})
        trace_id = written[0]["traceId"]
        in_jaeger = jaeger.wait_for_trace(trace_id, len(written), timeout=DEADLINE_S)
        assert names(in_jaeger) == names(written)

        wait_until(
            "a checkpoint naming them",
            lambda: checkpoint_names_delivered(tmp_path, growing.path),
            process,
            tmp_path,
        )
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    # the task goes on while the bridge is down, then ends
    log.tool_done("c2")
    log.turn_end("1")
    log.turn("2")
    log.usage("u2")
    log.message([], turn="2")
    log.turn_end("2")
    growing.write()

    process = start_run(state, tmp_path, jaeger)
    try:
        wait_until(
            "the root exported", lambda: names(spans_in_file(traces))["root"], process, tmp_path
        )
    finally:
        terminate(process, 20)

    written = spans_in_file(traces)
    everything = Counter(
        {"root": 1, "turn 1": 1, "turn 2": 1, "turn 3": 1, "chat": 3, "tool c1": 1, "tool c2": 1}
    )
    assert names(written) == everything
    ids = Counter(span["spanId"] for span in written)
    assert max(ids.values()) == 1, [i for i, n in ids.items() if n > 1]
    assert not written[-1].get("parentSpanId")  # the root came last
    in_jaeger = jaeger.wait_for_trace(trace_id, len(written), timeout=DEADLINE_S)
    assert Counter(span["spanId"] for span in in_jaeger) == ids
