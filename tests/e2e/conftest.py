"""The real Copilot CLI end to end: scripted sessions through `copilot -p` (and the Python SDK),
then the bridge on what they produced, as a user would run it.

Each scenario runs once per test session (`e2e.run(name)`) and every test that looks at it shares
that run: the span tree from `otel-bridge replay`, the metrics it writes, `otel-bridge stats`,
the spans `otel-bridge run` exported while following the log as the CLI wrote it, and the CLI's
own telemetry of the same run. What the bridge writes is read back as OTLP/JSON (each line also
parsed as the opentelemetry-proto message), never through the bridge's own code.

The CLI must be installed in the repository root (`npm install --no-save
@github/copilot@1.0.102`); without it the tests fail and say so.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.e2e.copilot import (
    SCENARIOS,
    CopilotMissing,
    ScenarioRun,
    Workspace,
    find_copilot,
    run_scenario,
    selected_version,
    version_tuple,
)
from tests.processes import bridge_env

#: The `copilot -p` scenarios the tests run (tests/e2e/copilot.py SCENARIOS), each once.
CLI_SCENARIOS = (
    "one_tool",
    "resume",
    "parallel_tools",
    "autopilot",
    "autopilot_nudge",
    "subagent_nested",
    "subagent_parallel",
    "provider_error",
    "abort",
    "custom_agent",
    "skill",
    "autopilot_limit",
)
#: Scenarios of tool calls killed and resumed, denied, and served by MCP
#: (tests/e2e/test_cli_tools.py). Not in CLI_SCENARIOS: the killed process's own telemetry is
#: lost, so the comparisons with the CLI's telemetry do not apply to all of them.
TOOL_SCENARIOS = ("crash_resume", "permission_denied", "mcp_tools")
#: Scenarios that `otel-bridge run` also follows live, while the CLI writes the log (all: it
#: costs about a second each).
FOLLOWED = frozenset(CLI_SCENARIOS + TOOL_SCENARIOS)
#: Seconds into the slow tool at which the abort scenarios interrupt the CLI.
ABORT_AFTER = 1.0

#: The CLI under test: 1.0.102, or the one $OTEL_BRIDGE_TEST_COPILOT names (scripts/test.sh runs
#: the suite against 1.0.81, 1.0.92 and 1.0.102). What differs: docs/cli-versions.md.
CLI_VERSION = selected_version()


def cli_at_least(version: str) -> bool:
    """True when the CLI under test is `version` or newer."""
    return version_tuple(CLI_VERSION) >= version_tuple(version)


#: `session.usage_record` (tokens, duration, initiator per LLM call): written since 1.0.102.
#: Older logs give chat spans from assistant.message, with `copilot.usage.unknown`.
USAGE_RECORDS = cli_at_least("1.0.102")
#: `shellExecution.exitCode` on a bash call's tool.execution_complete: 1.0.92 writes it, 1.0.81
#: does not (its exit code is only in the result text).
SHELL_EXIT_CODES = cli_at_least("1.0.92")
#: Before 1.0.102 the CLI completes a `task` call before its sub-agent's last turn ends (the
#: sub-agent's `subagent.completed` comes later): the bridge keeps the sub-agent's span as the
#: CLI wrote it, so it may end after its parent `execute_tool task` span.
SUBAGENT_OUTLIVES_TASK = not cli_at_least("1.0.102")
#: `subagent.selected` with the sub-agent's `agentId` as a sub-agent starts: 1.0.92 writes it;
#: 1.0.81 writes it only for the session's own agent (`--agent`), a sub-agent is named by its
#: `subagent.started` alone.
SUBAGENT_SELECTED = cli_at_least("1.0.92")
#: `skill.context_delivered_ref` after `skill.invoked` (the skill's text went to the model):
#: 1.0.92 writes it; 1.0.81 writes `skill.invoked` only.
SKILL_CONTEXT_DELIVERED = cli_at_least("1.0.92")
#: `session.autopilot_stopped{reason: cap_reached}` in the live stream when
#: `--max-autopilot-continues` stops the loop: 1.0.102 only. 1.0.81 and 1.0.92 just shut down
#: after the last nudged turn (neither their log nor their live stream says why).
AUTOPILOT_STOPPED = cli_at_least("1.0.102")
#: On `--resume` of a session whose CLI was killed with a tool running, 1.0.102 writes an
#: `interrupted` tool.execution_complete for that call and a `session.warning`
#: (`interrupted_tools`); 1.0.81 and 1.0.92 write neither: the call never completes.
RESUME_REPORTS_INTERRUPTED = cli_at_least("1.0.102")
#: `decisionSource` (e.g. `unattended_fallback`) on `permission.completed`: 1.0.92 writes it,
#: 1.0.81 does not (only the result's kind).
PERMISSION_DECISION_SOURCE = cli_at_least("1.0.92")
#: `mcpTransport` (and `mcpConfigServerName`, `mcpConfigSource`) on an MCP tool's
#: tool.execution_start: 1.0.92 writes it, 1.0.81 names only the server and the tool.
MCP_TRANSPORT = cli_at_least("1.0.92")
#: When a background (`mode: async`) shell finishes, 1.0.92 writes a `system.notification` and
#: then a read_bash call of its own (assistant.message, tool.execution_start/complete with the
#: output) before the next turn; 1.0.81 writes only the notification (which tells the model to
#: call read_bash) and the next turn.
SHELL_DONE_READS_OUTPUT = cli_at_least("1.0.92")


# --- reading what the bridge (or the CLI) wrote -------------------------------------------------


@dataclass
class Span:
    """A span as it went over the wire (OTLP), ids in hex."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    kind: str  # INTERNAL, CLIENT, ...
    start_ns: int
    end_ns: int
    status: str  # UNSET, OK, ERROR
    status_message: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    links: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    @property
    def attrs(self) -> dict[str, Any]:
        return self.attributes

    def key(self) -> tuple:
        """Everything but the resource: two exports of the same span compare equal."""
        return (
            self.trace_id,
            self.span_id,
            self.parent_span_id,
            self.name,
            self.kind,
            self.start_ns,
            self.end_ns,
            self.status,
            self.status_message,
            json.dumps(self.attributes, sort_keys=True),
            json.dumps(self.events, sort_keys=True),
            json.dumps(self.links, sort_keys=True),
        )


def _value(any_value: dict[str, Any]) -> Any:
    """An OTLP AnyValue in its JSON mapping, as a Python value."""
    if "stringValue" in any_value:
        return any_value["stringValue"]
    if "boolValue" in any_value:
        return any_value["boolValue"]
    if "intValue" in any_value:
        return int(any_value["intValue"])
    if "doubleValue" in any_value:
        return float(any_value["doubleValue"])
    if "arrayValue" in any_value:
        return [_value(v) for v in any_value["arrayValue"].get("values", [])]
    return None


def _attributes(pairs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {p["key"]: _value(p.get("value", {})) for p in pairs}


_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def _otlp_lines(path: Path, message: type) -> Iterator[dict[str, Any]]:
    """The requests of an OTLP JSON Lines file. Each line must also parse as the protobuf
    message (the official mapping, unknown fields refused); values are read from the JSON as
    the OTLP/JSON encoding defines them (ids in hex, enums as numbers)."""
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        if line.strip():
            json_format.Parse(line, message())
            yield json.loads(line)


def read_traces(path: Path) -> list[Span]:
    """Spans of an OTLP JSON Lines traces file (`--traces-file`)."""
    spans = []
    for request in _otlp_lines(path, ExportTraceServiceRequest):
        for resource_spans in request.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for raw in scope_spans.get("spans", []):
                    status = raw.get("status", {})
                    spans.append(
                        Span(
                            name=raw["name"],
                            trace_id=raw["traceId"],
                            span_id=raw["spanId"],
                            parent_span_id=raw.get("parentSpanId") or None,
                            kind=_KINDS[int(raw.get("kind", 0))],
                            start_ns=int(raw["startTimeUnixNano"]),
                            end_ns=int(raw["endTimeUnixNano"]),
                            status=_STATUS[int(status.get("code", 0))],
                            status_message=status.get("message", ""),
                            attributes=_attributes(raw.get("attributes", [])),
                            events=[
                                (e["name"], _attributes(e.get("attributes", [])))
                                for e in raw.get("events", [])
                            ],
                            links=[
                                (
                                    link["traceId"],
                                    link["spanId"],
                                    _attributes(link.get("attributes", [])),
                                )
                                for link in raw.get("links", [])
                            ],
                        )
                    )
    return spans


@dataclass
class Point:
    name: str
    attributes: dict[str, Any]
    value: float | None = None  # sums and gauges
    count: int | None = None  # histograms
    sum: float | None = None


class Metrics:
    """The last exported point of every metric series (cumulative temporality)."""

    def __init__(self, points: Sequence[Point]) -> None:
        latest: dict[tuple[str, str], Point] = {}
        for point in points:
            latest[(point.name, json.dumps(point.attributes, sort_keys=True))] = point
        self.points = list(latest.values())

    def names(self) -> set[str]:
        return {p.name for p in self.points}

    def series(self, name: str, **match: Any) -> list[Point]:
        """Points of `name` whose attributes include `match` (dots written as __)."""
        wanted = {k.replace("__", "."): v for k, v in match.items()}
        return [
            p
            for p in self.points
            if p.name == name and all(p.attributes.get(k) == v for k, v in wanted.items())
        ]

    def total(self, name: str, **match: Any) -> float:
        """Sum of a counter over the matching series (0 when there is none)."""
        return sum(p.value or 0 for p in self.series(name, **match))

    def histogram(self, name: str, **match: Any) -> tuple[int, float]:
        """(count, sum) of a histogram over the matching series."""
        points = self.series(name, **match)
        return sum(p.count or 0 for p in points), sum(p.sum or 0 for p in points)

    def by(self, name: str, key: str) -> dict[Any, float]:
        """Counter totals of `name` grouped by one attribute."""
        out: dict[Any, float] = defaultdict(float)
        for point in self.points:
            if point.name == name and (point.value or 0):
                out[point.attributes.get(key)] += point.value or 0
        return dict(out)


def read_metrics(path: Path) -> Metrics:
    """Metrics of an OTLP JSON Lines metrics file (`--metrics-file`): every line read, the last
    point of a series wins (the values are cumulative)."""
    points: list[Point] = []
    for request in _otlp_lines(path, ExportMetricsServiceRequest):
        for resource_metrics in request.get("resourceMetrics", []):
            for scope_metrics in resource_metrics.get("scopeMetrics", []):
                for metric in scope_metrics.get("metrics", []):
                    points.extend(_points(metric))
    return Metrics(points)


def _points(metric: dict[str, Any]) -> list[Point]:
    name = metric["name"]
    out = []
    for kind in ("sum", "gauge"):
        for raw in metric.get(kind, {}).get("dataPoints", []):
            value = float(raw["asInt"]) if "asInt" in raw else float(raw.get("asDouble", 0))
            out.append(Point(name, _attributes(raw.get("attributes", [])), value=value))
    for raw in metric.get("histogram", {}).get("dataPoints", []):
        out.append(
            Point(
                name,
                _attributes(raw.get("attributes", [])),
                count=int(raw.get("count", 0)),
                sum=float(raw.get("sum", 0)),
            )
        )
    return out


def read_native(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The CLI's own telemetry file: (spans, metrics), one JSON object a line."""
    spans, metrics = [], []
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.strip():
            record = json.loads(line)
            (spans if record.get("type") == "span" else metrics).append(record)
    return spans, metrics


def label(span: Span) -> str:
    """The span's name, and for a turn its index: `turn #2` (tests/spantree.label)."""
    index = span.attributes.get("copilot.turn.index")
    return f"{span.name} #{index}" if span.name == "turn" and index is not None else span.name


class Tree:
    """A list of spans seen as trees."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.spans = list(spans)
        self.by_id = {s.span_id: s for s in self.spans}

    def __len__(self) -> int:
        return len(self.spans)

    def named(self, prefix: str) -> list[Span]:
        """Spans whose name is `prefix` or starts with `prefix + " "`, in start order."""
        return sorted(
            (s for s in self.spans if s.name == prefix or s.name.startswith(prefix + " ")),
            key=lambda s: s.start_ns,
        )

    def roots(self) -> list[Span]:
        return sorted((s for s in self.spans if s.parent_span_id is None), key=lambda s: s.start_ns)

    def parent(self, span: Span) -> Span | None:
        return self.by_id.get(span.parent_span_id) if span.parent_span_id else None

    def children(self, span: Span, prefix: str | None = None) -> list[Span]:
        kids = [s for s in self.spans if s.parent_span_id == span.span_id]
        if prefix is not None:
            kids = [s for s in kids if s.name == prefix or s.name.startswith(prefix + " ")]
        return sorted(kids, key=lambda s: (s.start_ns, s.name))

    def root_of(self, span: Span) -> Span:
        while (parent := self.parent(span)) is not None:
            span = parent
        return span

    def ancestors(self, span: Span) -> list[Span]:
        out = []
        while (parent := self.parent(span)) is not None:
            out.append(parent)
            span = parent
        return out

    def outline(self) -> list[str]:
        """Indented names; a turn (every one is named `turn`) with its copilot.turn.index."""
        lines: list[str] = []

        def walk(span: Span, depth: int) -> None:
            lines.append("  " * depth + label(span))
            for child in self.children(span):
                walk(child, depth + 1)

        for root in self.roots():
            walk(root, 0)
        return lines

    def check_well_formed(self) -> None:
        """Unique ids, parents present and in the same trace, children inside their parent's
        time (a few ms of slack: the CLI stamps events in ms), one root per trace."""
        assert len(self.by_id) == len(self.spans), "duplicate span ids"
        roots_per_trace: dict[str, int] = defaultdict(int)
        for span in self.spans:
            assert span.end_ns >= span.start_ns, span.name
            if span.parent_span_id is None:
                roots_per_trace[span.trace_id] += 1
                continue
            parent = self.by_id.get(span.parent_span_id)
            assert parent is not None, f"{span.name}: parent {span.parent_span_id} missing"
            assert parent.trace_id == span.trace_id, span.name
            slack = 5_000_000
            assert parent.start_ns - slack <= span.start_ns, (span.name, parent.name)
            if SUBAGENT_OUTLIVES_TASK and parent.name == "execute_tool task":
                parent = self.root_of(span)  # ... but not its task: see SUBAGENT_OUTLIVES_TASK
            assert span.end_ns <= parent.end_ns + slack, (span.name, parent.name)
        assert all(n == 1 for n in roots_per_trace.values()), dict(roots_per_trace)
        assert set(roots_per_trace) == {s.trace_id for s in self.spans}


# --- running the bridge -----------------------------------------------------------------------


def bridge_command() -> list[str]:
    """`otel-bridge` as installed beside this Python (pip install -e .), else `-m otel_bridge`."""
    script = Path(sys.executable).with_name("otel-bridge")
    return [str(script)] if script.exists() else [sys.executable, "-m", "otel_bridge"]


@dataclass
class BridgeView:
    """What one bridge command exported."""

    spans: list[Span]
    metrics: Metrics
    stderr: str

    @property
    def tree(self) -> Tree:
        return Tree(self.spans)


def replay(path: Path, out: Path) -> BridgeView:
    """`otel-bridge replay PATH --traces-file ... --metrics-file ...`."""
    out.mkdir(parents=True, exist_ok=True)
    traces, metrics = out / "replay-traces.jsonl", out / "replay-metrics.jsonl"
    done = subprocess.run(
        [
            *bridge_command(),
            "replay",
            str(path),
            "--traces-file",
            str(traces),
            "--metrics-file",
            str(metrics),
            "--no-progress",
        ],
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return BridgeView(read_traces(traces), read_metrics(metrics), done.stderr)


def stats(path: Path) -> dict[str, Any]:
    """`otel-bridge stats --json PATH`: the one session's numbers."""
    done = subprocess.run(
        [*bridge_command(), "stats", "--json", str(path)],
        env=bridge_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report["sessions"]) == 1, report
    return report["sessions"][0]


class Follower:
    """`otel-bridge run` following a session-state directory (that may not exist yet)."""

    def __init__(self, state: Path, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.traces = out / "run-traces.jsonl"
        self.metrics = out / "run-metrics.jsonl"
        self.stderr_lines: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        self.process = subprocess.Popen(
            [
                *bridge_command(),
                "run",
                "--session-state",
                str(state),
                "--traces-file",
                str(self.traces),
                "--metrics-file",
                str(self.metrics),
                "--no-prometheus",
                "--poll-interval",
                "0.1",
                "--rescan-interval",
                "0.5",
                "--metrics-interval",
                "1",
                "--idle-timeout",
                "600",
                "--state-dir",  # its own checkpoints, not the user's (nor another run's)
                str(out / "state"),
            ],
            env=bridge_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._wait_for_line("watching", timeout=30)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_lines.append(line)
            self._lines.put(line)

    def _wait_for_line(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.1)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            if text in line:
                return
        self.stop()
        raise AssertionError(f"otel-bridge run never said {text!r}:\n{self.stderr}")

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def wait_for_spans(self, count: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(read_traces(self.traces)) < count:
            time.sleep(0.1)

    def stop(self) -> BridgeView:
        """SIGTERM (flushes and exits 0), then what it wrote."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=5)
        if self.process.stderr is not None:
            self.process.stderr.close()
        return BridgeView(read_traces(self.traces), read_metrics(self.metrics), self.stderr)


# --- scenarios, run once per test session -------------------------------------------------------


@dataclass
class Result:
    """A scenario's run and every view of it."""

    run: ScenarioRun
    replayed: BridgeView
    stats: dict[str, Any]
    followed: BridgeView | None  # `otel-bridge run` while the CLI ran (FOLLOWED scenarios)
    follower_exit: int | None

    @property
    def tree(self) -> Tree:
        return self.replayed.tree

    @property
    def metrics(self) -> Metrics:
        return self.replayed.metrics

    @property
    def workspace(self) -> Workspace:
        return self.run.workspace

    def events(self) -> list[dict[str, Any]]:
        return self.run.events()

    def native(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return read_native(self.workspace.native_otel)


class E2E:
    """Runs each scenario at most once per test session and keeps the result."""

    def __init__(self, root: Path, binary: Path) -> None:
        self.root = root
        self.binary = binary
        self._results: dict[str, Result | BaseException] = {}
        self.timings: dict[str, float] = {}

    def run(self, name: str) -> Result:
        cached = self._results.get(name)
        if cached is None:
            started = time.monotonic()
            try:
                cached = self._run(name)
            except Exception as exc:  # every test of this scenario fails with the cause
                cached = exc
            self._results[name] = cached
            self.timings[name] = time.monotonic() - started
        if isinstance(cached, BaseException):
            raise AssertionError(f"scenario {name!r} could not run: {cached!r}") from cached
        return cached

    def _run(self, name: str) -> Result:
        scenario = SCENARIOS[name]
        root = self.root / name
        follower = (
            Follower(root / "home" / "session-state", root / "bridge") if name in FOLLOWED else None
        )
        followed = None
        try:
            run = run_scenario(scenario, root, binary=self.binary, interrupt_after=ABORT_AFTER)
            replayed = replay(run.events_file, root / "bridge")
            if follower is not None:
                follower.wait_for_spans(len(replayed.spans))
        finally:
            if follower is not None:
                followed = follower.stop()
        return Result(
            run,
            replayed,
            stats(run.events_file),
            followed,
            follower.process.returncode if follower is not None else None,
        )


@pytest.fixture(scope="session")
def copilot_binary() -> Path:
    try:
        return find_copilot()
    except CopilotMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def e2e(tmp_path_factory: pytest.TempPathFactory, copilot_binary: Path) -> Iterator[E2E]:
    runner = E2E(tmp_path_factory.mktemp("e2e"), copilot_binary)
    yield runner
    if runner.timings:
        summary = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(runner.timings.items()))
        print(f"\ne2e scenario timings: {summary}")
