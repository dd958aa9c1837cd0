"""Events of types the bridge does not know: counted by type and CLI version, and with
`keep_unknown_events` (`--keep-unknown-events`) kept as span events on the open interaction's
root, so that nothing a CLI wrote is dropped silently (docs/architecture.md)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from otel_bridge import Assembler, AssemblerConfig, event_from_json, parse_timestamp_ns
from otel_bridge._records import SpanRecord
from otel_bridge.assembler._meter import MAX_UNKNOWN_TYPES
from otel_bridge.cli import main
from otel_bridge.processors import Scrubber, ScrubberConfig
from tests import paths
from tests.builder import Log
from tests.spantree import by_name


def ns(stamp: str) -> int:
    return parse_timestamp_ns(stamp)


def one(spans: list[SpanRecord], prefix: str) -> SpanRecord:
    found = by_name(spans, prefix)
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


class Counts:
    """A MetricsRecorder that sums `otel_bridge.events.unknown` by event type."""

    def __init__(self) -> None:
        self.unknown: Counter[str] = Counter()

    def add(self, name: str, value: float, attributes: Mapping[str, Any], session_id: str) -> None:
        if name == "otel_bridge.events.unknown":
            self.unknown[str(attributes["copilot.event.type"])] += int(value)

    def record(
        self, name: str, value: float, attributes: Mapping[str, Any], session_id: str
    ) -> None:
        return None


def _log_with_unknown_events() -> Log:
    log = Log()
    log.start()
    log.add("future.thing", secret_note="token-in-data", size=3)  # before any task: not kept
    log.user()
    log.turn("0")
    log.add("future.thing", note="while working", size=1)
    log.add("model.call_0123456789abcdef", x=1)
    log.add("session.usage_info", tokenLimit=10)  # known to the schema: not an unknown
    log.usage("u1")
    log.message()
    log.turn_end("0")
    return log


def _assemble(log: Log, config: AssemblerConfig) -> tuple[list[SpanRecord], Counts]:
    recorder = Counts()
    assembler = Assembler(config, metrics=recorder)
    spans = assembler.feed("sess-1", log.events()) + assembler.end_stream("sess-1")
    return spans, recorder


def _unknown_counts(recorder: Counts) -> dict[str, int]:
    return dict(recorder.unknown)


def test_unknown_events_are_only_counted_by_default() -> None:
    spans, recorder = _assemble(_log_with_unknown_events(), AssemblerConfig())
    assert one(spans, "invoke_agent copilot").events == ()
    assert _unknown_counts(recorder) == {
        "future.thing": 2,
        "model.call_0123456789abcdef": 1,
    }


def test_kept_unknown_events_are_span_events_on_the_open_interaction_root() -> None:
    log = _log_with_unknown_events()
    spans, recorder = _assemble(log, AssemblerConfig(keep_unknown_events=True))
    root = one(spans, "invoke_agent copilot")
    kept = [e for e in log.raw[2:] if e["type"] in ("future.thing",) or "model.call_" in e["type"]]
    assert [(e.name, e.timestamp_ns) for e in root.events] == [
        (k["type"], ns(k["timestamp"])) for k in kept
    ]
    for event, raw in zip(root.events, kept, strict=True):
        assert event.attributes["copilot.event.id"] == raw["id"]
        size = len(json.dumps(raw["data"], ensure_ascii=False, sort_keys=True))
        assert event.attributes["copilot.event.data.length"] == size
        assert "copilot.event.data" not in event.attributes  # content capture is off
    # counted either way, the one before the task included
    assert _unknown_counts(recorder)["future.thing"] == 2


def test_kept_unknown_events_carry_their_data_with_content_capture_on() -> None:
    log = _log_with_unknown_events()
    spans, _ = _assemble(log, AssemblerConfig(keep_unknown_events=True, capture_content=True))
    root = one(spans, "invoke_agent copilot")
    assert json.loads(str(root.events[0].attributes["copilot.event.data"])) == {
        "note": "while working",
        "size": 1,
    }


def test_kept_unknown_event_data_is_cut_to_the_content_limit_on_export() -> None:

    log = Log.asked()
    log.add("future.big", items=["word"] * 500)
    log.simple_turn("0", "u1")
    spans, _ = _assemble(log, AssemblerConfig(keep_unknown_events=True, capture_content=True))
    (event,) = one(spans, "invoke_agent copilot").events
    scrubbed = Scrubber(ScrubberConfig(content_max_chars=100)).record(
        one(spans, "invoke_agent copilot")
    )
    data = str(scrubbed.events[0].attributes["copilot.event.data"])
    assert len(str(event.attributes["copilot.event.data"])) > 100
    assert data.endswith("...[truncated]") and len(data) == 100 + len("...[truncated]")


def test_unknown_event_names_keep_a_bounded_shape() -> None:
    """A type that is not a dotted lower-case name (it could hold anything) is not copied."""
    log = Log.asked()
    log.add("Not A Type: ghp_" + "x" * 40)
    log.simple_turn("0", "u1")
    spans, recorder = _assemble(log, AssemblerConfig(keep_unknown_events=True))
    assert [e.name for e in one(spans, "invoke_agent copilot").events] == ["<invalid>"]
    assert set(_unknown_counts(recorder)) == {"<invalid>"}


def test_many_unknown_types_keep_the_metric_label_bounded_but_every_event_kept() -> None:
    log = Log.asked()
    count = MAX_UNKNOWN_TYPES + 20
    for i in range(count):  # as compactions write model.* types with hashes in their names
        log.add(f"model.c{i:024x}")
    log.simple_turn("0", "u1")
    spans, recorder = _assemble(log, AssemblerConfig(keep_unknown_events=True))
    assert len(one(spans, "invoke_agent copilot").events) == count
    counts = _unknown_counts(recorder)
    assert len(counts) == MAX_UNKNOWN_TYPES + 1
    assert counts["other"] == 20


def _span_events(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(span event name, attributes) of every root span in an OTLP JSON Lines file."""
    out = []
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    if span.get("parentSpanId"):
                        continue
                    for event in span.get("events", []):
                        attributes = {
                            a["key"]: next(iter(a["value"].values()))
                            for a in event.get("attributes", [])
                        }
                        out.append((event["name"], attributes))
    return out


def test_replay_keep_unknown_events_writes_them_on_the_root(tmp_path: Path) -> None:
    log = Log.asked()
    log.turn("0")
    log.add("future.thing", note="sk-" + "a" * 30)  # a secret-looking value: scrubbed
    log.usage("u1")
    log.message()
    log.turn_end("0")
    session = tmp_path / "state" / "sess-1"
    session.mkdir(parents=True)
    (session / "events.jsonl").write_bytes(log.jsonl())
    plain, kept, content = (tmp_path / f"{n}.jsonl" for n in ("plain", "kept", "content"))
    base = ["replay", str(session), "--no-progress", "--traces-file"]

    assert main([*base, str(plain)]) == 0
    assert main([*base, str(kept), "--keep-unknown-events"]) == 0
    assert main([*base, str(content), "--keep-unknown-events", "--capture-content"]) == 0
    assert _span_events(plain) == []
    ((name, attributes),) = _span_events(kept)
    assert name == "future.thing"
    assert attributes["copilot.event.id"] == log.raw[3]["id"]
    assert "copilot.event.data" not in attributes
    assert int(attributes["copilot.event.data.length"]) == len(json.dumps(log.raw[3]["data"]))
    ((_, with_data),) = _span_events(content)
    data = json.loads(with_data["copilot.event.data"])
    assert set(data) == {"note"} and "a" * 30 not in data["note"]


class Labels:
    """A MetricsRecorder that keeps the labels of `otel_bridge.events.unknown`."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def add(self, name: str, value: float, attributes: Mapping[str, Any], session_id: str) -> None:
        if name == "otel_bridge.events.unknown":
            self.seen.append(dict(attributes))

    def record(
        self, name: str, value: float, attributes: Mapping[str, Any], session_id: str
    ) -> None:
        return None


def _versioned(version: object) -> tuple[list[SpanRecord], Labels]:
    log = Log()
    log.add("session.start", sessionId=log.session, copilotVersion=version, selectedModel="m")
    log.user()
    log.add("future.thing", size=1)
    log.simple_turn("0", "u1")
    recorder = Labels()
    assembler = Assembler(AssemblerConfig(), metrics=recorder)
    spans = assembler.feed("sess-1", log.events()) + assembler.end_stream("sess-1")
    return spans, recorder


def test_the_cli_version_label_is_the_version_itself() -> None:
    # a version is not an event type: "1.0.102" has no place in a dotted lower-case name
    for version in ("1.0.102", "1.0.81", "v1.0.103-beta.2", "1.0.104+sha.5e1f0a"):
        spans, recorder = _versioned(version)
        assert {label["copilot.version"] for label in recorder.seen} == {version}
        assert one(spans, "invoke_agent copilot").attributes["copilot.version"] == version


def test_a_cli_version_of_another_shape_is_bounded_where_it_is_read() -> None:
    # the field comes from the log: a prompt, a token or 10,000 characters are not versions,
    # on the metric label and on the span alike
    for version in ("ghp_" + "a" * 36, "1.0.102\nforged line", "1." * 5000, "latest build"):
        spans, recorder = _versioned(version)
        assert {label["copilot.version"] for label in recorder.seen} == {"<invalid>"}
        assert one(spans, "invoke_agent copilot").attributes["copilot.version"] == "<invalid>"
    spans, recorder = _versioned(102)  # not text: no version
    assert {label["copilot.version"] for label in recorder.seen} == {"unknown"}
    assert "copilot.version" not in one(spans, "invoke_agent copilot").attributes


def test_a_checkpoint_gives_back_a_bounded_version() -> None:
    log = Log.asked()
    log.simple_turn("0", "u1")
    assembler = Assembler(AssemblerConfig())
    assembler.feed("sess-1", log.events())
    saved = assembler.session("sess-1").snapshot()
    assert saved["copilot_version"] == "1.0.102"
    for stored, restored in (("1.0.92", "1.0.92"), ("x" * 100, "<invalid>")):
        other = Assembler(AssemblerConfig())
        other.session("sess-1").restore({**saved, "copilot_version": stored})
        assert other.session("sess-1").facts.copilot_version == restored


def test_real_logs_of_three_cli_versions_label_their_version() -> None:
    fixtures = paths.FIXTURES
    recorder = Labels()
    assembler = Assembler(AssemblerConfig(), metrics=recorder)
    versions = {}
    for name in ("one_tool_cli1081", "one_tool_cli1092", "run1_cli_prompt_basic"):
        lines = (fixtures / name / "events.jsonl").read_text().splitlines()
        events = [json.loads(line) for line in lines]
        events.insert(1, {**events[1], "type": "future.thing", "id": f"x-{name}"})
        session = assembler.session(name)
        for event in map(event_from_json, events):
            session.feed(event)
        versions[name] = recorder.seen[-1]["copilot.version"]
    assert versions == {
        "one_tool_cli1081": "1.0.81",
        "one_tool_cli1092": "1.0.92",
        "run1_cli_prompt_basic": "1.0.102",
    }
