"""`otel-bridge replay` and the command line as a user meets it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from otel_bridge.cli import main
from otel_bridge.export import trace_exporter_choices
from tests import paths
from tests.builder import Log
from tests.traces_file import read_traces_file

FIXTURES = paths.FIXTURES
#: doctor without the machine's port 9464 and default state directory (not the test's)
NOT_THE_MACHINES = ("--no-prometheus", "--no-checkpoints")


def test_replay_session_state_dir_to_traces_file(tmp_path, caplog) -> None:
    out = tmp_path / "traces.jsonl"
    code = main(["replay", str(FIXTURES), "--traces-file", str(out), "--no-progress"])
    assert code == 0
    spans = read_traces_file(out)
    raw = [
        json.loads(line)
        for path in FIXTURES.glob("*/events.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert sum(s["name"] == "turn" for s in spans) == sum(
        e["type"] == "assistant.turn_start" for e in raw
    )
    assert sum(s["name"].startswith("execute_tool ") for s in spans) == sum(
        e["type"] == "tool.execution_start" for e in raw
    )
    assert len({s["span_id"] for s in spans}) == len(spans)


def test_two_replays_write_the_same_ids(tmp_path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (first, second):
        assert (
            main(
                [
                    "replay",
                    str(FIXTURES / "subagent_nested"),
                    "--traces-file",
                    str(out),
                    "--no-progress",
                ]
            )
            == 0
        )
    key = lambda s: (s["trace_id"], s["span_id"], s["parent"], s["name"])  # noqa: E731
    assert sorted(map(key, read_traces_file(first))) == sorted(map(key, read_traces_file(second)))


def test_replay_without_exporter_settings_prints_spans_to_stdout(capsys) -> None:
    code = main(
        ["replay", str(FIXTURES / "run1_cli_prompt_basic" / "events.jsonl"), "--no-progress"]
    )
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(line["name"] for line in lines)[0] == "chat gpt-4.1"
    assert len(lines) == 6


def test_otel_traces_exporter_none_exports_nothing(capsys, monkeypatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert main(["replay", str(FIXTURES / "run1_cli_prompt_basic")]) == 0
    assert capsys.readouterr().out == ""


def test_missing_path_is_a_clear_error(caplog, tmp_path) -> None:
    assert main(["replay", str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in caplog.text


def test_directory_without_logs_says_what_to_give(caplog, tmp_path) -> None:
    assert main(["replay", str(tmp_path)]) == 2
    assert "session-state directory" in caplog.text


def test_unknown_exporter_is_a_clear_error(caplog, monkeypatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlpp")
    assert main(["replay", str(FIXTURES / "run1_cli_prompt_basic")]) == 2
    # the names of the exporter table, whatever rows it has (otlp, console or none today)
    assert f"'otlpp' is not supported: use {trace_exporter_choices()} (comma" in caplog.text
    assert "use otlp, console" in caplog.text


def test_10000_hostile_lines_between_real_events_lose_nothing(tmp_path) -> None:
    real = (FIXTURES / "subagent_parallel" / "events.jsonl").read_bytes().splitlines(True)
    junk = [
        b"{not json\n",
        b"\xff\xfe\x00garbage\n",
        b"[]\n",
        b'{"type":"x"}\n',
        b"x" * 100_000 + b"\n",
        b'{"type":"zz.unknown","timestamp":"2026-01-01T00:00:00Z"}\n',
    ]
    per_line = 10_000 // len(real) + 1  # 10,000 hostile lines in all, between the real ones
    mixed = b"".join(
        line + b"".join(junk[(i + j) % len(junk)] for j in range(per_line))
        for i, line in enumerate(real)
    )
    log = tmp_path / "sess" / "events.jsonl"
    log.parent.mkdir()
    log.write_bytes(mixed)
    clean = tmp_path / "clean" / "events.jsonl"
    clean.parent.mkdir()
    clean.write_bytes(b"".join(real))
    out_mixed, out_clean = tmp_path / "m.jsonl", tmp_path / "c.jsonl"
    assert (
        main(
            [
                "replay",
                str(log),
                "--traces-file",
                str(out_mixed),
                "--no-progress",
                "--max-line-bytes",
                "50000",
            ]
        )
        == 0
    )
    assert main(["replay", str(clean), "--traces-file", str(out_clean), "--no-progress"]) == 0
    assert sorted(s["span_id"] for s in read_traces_file(out_mixed)) == sorted(
        s["span_id"] for s in read_traces_file(out_clean)
    )


def test_truncated_log_still_ends_every_span(tmp_path) -> None:
    log = Log.asked()
    log.turn("0")
    log.message([("c", "bash")])
    log.tool_start("c", "bash")
    path = tmp_path / "s" / "events.jsonl"
    path.parent.mkdir()
    path.write_bytes(log.jsonl()[:-30])  # cut in the middle of the last event
    out = tmp_path / "t.jsonl"
    assert main(["replay", str(path), "--traces-file", str(out), "--no-progress"]) == 0
    names = sorted(s["name"] for s in read_traces_file(out))
    assert names == ["chat gpt-4.1", "invoke_agent copilot", "turn"]


def test_help_is_usable() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "otel_bridge", "--help"], capture_output=True, text=True, check=True
    )
    for word in ("replay", "run", "OTEL_EXPORTER_OTLP_ENDPOINT", "examples"):
        assert word in result.stdout
    for command in ("replay", "run"):
        sub = subprocess.run(
            [sys.executable, "-m", "otel_bridge", command, "--help"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert "--traces-file" in sub.stdout


@pytest.mark.parametrize(
    "argv",
    [["run", "--idle-timeout", "-1"], ["replay", "--jobs", "0"], ["run", "--poll-interval", "0"]],
)
def test_bad_arguments_exit_2(argv) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_doctor_sees_sessions_and_a_reachable_collector(otlp_receiver, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver.grpc_endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert main(["doctor", "--session-state", str(FIXTURES), *NOT_THE_MACHINES]) == 0
    out = capsys.readouterr().out
    assert f"{len(list(FIXTURES.glob('*/events.jsonl')))} session logs" in out
    assert "reachable" in out and "NOT" not in out


def test_doctor_reports_what_is_wrong(tmp_path, monkeypatch, capsys) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    assert main(["doctor", "--session-state", str(tmp_path / "missing"), *NOT_THE_MACHINES]) == 1
    out = capsys.readouterr().out
    assert "does not exist" in out
    assert "NOT reachable" in out
