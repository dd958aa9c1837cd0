"""A long task in a real Jaeger while it runs: `run` exports each finished turn (with its LLM
calls and tools) as it ends, so the trace backend shows the task's progress before the task is
over; the root comes last, when it ends (docs/spans.md, "Progress of a long task"). A SIGKILL
in the middle and a restart from the checkpoints repeat nothing: every span reaches the traces
file once, and Jaeger holds each once.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.builder import GrowingLog
from tests.goparts import Jaeger, jaeger_binary
from tests.processes import bridge_env, start_bridge, terminate
from tests.traces_file import checkpoint_names_sent, span_kinds, spans_in_file

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
            lambda: span_kinds(spans_in_file(traces))["turn 1"],
            process,
            tmp_path,
        )
        assert first == 1
        written = spans_in_file(traces)
        assert span_kinds(written) == Counter({"turn 1": 1, "chat": 2, "tool c1": 1})
        trace_id = written[0]["traceId"]
        in_jaeger = jaeger.wait_for_trace(trace_id, len(written), timeout=DEADLINE_S)
        assert span_kinds(in_jaeger) == span_kinds(written)

        wait_until(
            "a checkpoint naming them",
            lambda: checkpoint_names_sent(tmp_path / "state", growing.path, written),
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
            "the root exported",
            lambda: span_kinds(spans_in_file(traces))["root"],
            process,
            tmp_path,
        )
    finally:
        terminate(process, 20)

    written = spans_in_file(traces)
    everything = Counter(
        {"root": 1, "turn 1": 1, "turn 2": 1, "turn 3": 1, "chat": 3, "tool c1": 1, "tool c2": 1}
    )
    assert span_kinds(written) == everything
    ids = Counter(span["spanId"] for span in written)
    assert max(ids.values()) == 1, [i for i, n in ids.items() if n > 1]
    assert not written[-1].get("parentSpanId")  # the root came last
    in_jaeger = jaeger.wait_for_trace(trace_id, len(written), timeout=DEADLINE_S)
    assert Counter(span["spanId"] for span in in_jaeger) == ids
