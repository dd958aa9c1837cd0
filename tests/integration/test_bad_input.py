"""Bad input gets one clear line: files that are not Copilot logs, empty logs, bad option values,
a /metrics address that cannot be served. Exit statuses and stderr are a process's behaviour,
so those run `python -m otel_bridge` for real."""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import socket
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from otel_bridge import Assembler, ConfigError
from otel_bridge.cli import main
from otel_bridge.cli._parser import build_parser
from otel_bridge.export import MetricsOptions, build_metrics, build_resource
from otel_bridge.feed import StreamFeeder
from otel_bridge.sources import Tailer, TailOptions
from tests import paths
from tests.traces_file import read_traces_file

FIXTURES = paths.FIXTURES
REAL_LOG = FIXTURES / "run1_cli_prompt_basic" / "events.jsonl"


def binary_lines(count: int, seed: int = 11) -> bytes:
    """`count` lines of random bytes (none blank, no newline inside): a binary file."""
    rng = random.Random(seed)
    return b"".join(
        bytes(rng.randrange(1, 256) for _ in range(60)).replace(b"\n", b"x") + b"\n"
        for _ in range(count)
    )


def bridge(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    """Run the command line in its own process, in a clean environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "COPILOT_"))}
    env.update(HOME=str(home), OTEL_TRACES_EXPORTER="none", PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "otel_bridge", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def session(root: Path, name: str, data: bytes) -> Path:
    path = root / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


# --- files that are not logs -------------------------------------------------------------


def test_a_binary_events_jsonl_is_one_line_and_exit_1(tmp_path) -> None:
    log = session(tmp_path / "state", "bin", binary_lines(21))
    result = bridge("replay", str(log), "--no-progress", home=tmp_path)
    assert result.returncode == 1, result.stderr
    about = [line for line in result.stderr.splitlines() if str(log) in line]
    assert len(about) == 1, result.stderr
    assert "ERROR" in about[0]
    assert about[0].endswith(
        f"{log}: not a Copilot session log: 0 of 21 lines are events (line 1: not JSON)"
    )
    assert "WARNING" not in result.stderr and "Traceback" not in result.stderr
    assert "replayed 1 log (1 failed: not a Copilot session log)" in result.stderr


def test_an_empty_log_is_said_and_is_no_failure(tmp_path) -> None:
    log = session(tmp_path / "state", "new", b"")
    result = bridge("replay", str(log), "--no-progress", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"INFO otel_bridge.sources._replay: {log}: empty" in result.stderr
    assert "replayed 1 log (1 empty): 0 events" in result.stderr
    assert "not a Copilot session log" not in result.stderr


def test_among_real_logs_a_binary_fails_the_replay_but_the_logs_are_exported(tmp_path) -> None:
    state = tmp_path / "state"
    shutil.copytree(FIXTURES / "run1_cli_prompt_basic", state / "real")
    session(state, "bin", binary_lines(5))
    session(state, "new", b"")
    out = tmp_path / "traces.jsonl"
    assert main(["replay", str(state), "--traces-file", str(out), "--no-progress"]) == 1
    names = sorted(s["name"] for s in read_traces_file(out))
    assert names.count("invoke_agent copilot") == 1 and len(names) == 6


def test_stats_of_a_binary_exits_1(tmp_path) -> None:
    log = session(tmp_path, "bin", binary_lines(3))
    result = bridge("stats", str(log), home=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "not a Copilot session log: 0 of 3 lines are events" in result.stderr


def test_a_real_log_with_a_bad_first_line_gives_every_span(tmp_path, caplog) -> None:
    real = REAL_LOG.read_bytes()
    first = real.split(b"\n", 1)[0]
    spans = {}
    for name, data in {
        "clean": real,
        "garbage": b"\x00\xff{oops\n" + real,
        "torn": first[:50] + real,
    }.items():
        out = tmp_path / f"{name}.jsonl"
        log = session(tmp_path, name, data)
        with caplog.at_level(logging.INFO):
            assert main(["replay", str(log), "--traces-file", str(out), "--no-progress"]) == 0
        spans[name] = sorted(s["span_id"] for s in read_traces_file(out))
    assert spans["clean"] and spans["garbage"] == spans["clean"] == spans["torn"]
    assert "not a Copilot session log" not in caplog.text
    assert "1 bad line before its first event skipped" in caplog.text


# --- run: said once per file, and followed on ---------------------------------------------


def test_run_says_once_that_a_file_is_not_a_log_and_keeps_following_it(tmp_path, caplog) -> None:
    log = session(tmp_path, "s1", binary_lines(4))
    out: list = []
    tailer = Tailer(
        [tmp_path],
        StreamFeeder(Assembler(), out.extend),
        TailOptions(backfill=True, rescan_seconds=0, watch=False),
    )
    with caplog.at_level(logging.WARNING):
        tailer.start()
        tailer.poll_once()
        with log.open("ab") as handle:
            handle.write(binary_lines(30, seed=3))
        tailer.poll_once()
        tailer.poll_once()
        verdicts = [r.getMessage() for r in caplog.records]
        assert verdicts == [
            f"{log}: does not look like a Copilot session log so far: 0 of 4 "
            "lines are events (line 1: not JSON); still following it"
        ]
        with log.open("ab") as handle:  # it becomes a log after all: nothing of it is lost
            handle.write(REAL_LOG.read_bytes())
        tailer.poll_once()
    tailer.close()
    assert sum(s.name == "invoke_agent copilot" for s in out) == 1
    assert caplog.records[-1].getMessage() == (
        f"{log}: 34 bad lines before its first event skipped (the first, line 1: not JSON)"
    )


# --- option values -----------------------------------------------------------------------


def numeric_options() -> list[tuple[str, str]]:
    """(command, option) for every option of every command whose value is converted by one of
    the command line's own type functions of numbers (cli/_types.py, returning an int or a
    float): every option that takes a number."""
    parser = build_parser()
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                for option in sub._actions:
                    if (
                        callable(option.type)
                        and getattr(option.type, "__module__", "") == "otel_bridge.cli._types"
                        # the command line's types of numbers (not of templates or lists)
                        and typing.get_type_hints(option.type).get("return") in (int, float)
                    ):
                        found.append((command, option.option_strings[-1]))
    return found


def test_the_numeric_options_are_found() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bare = [
        (command, option.option_strings)
        for command, sub in subparsers.choices.items()
        for option in sub._actions
        if option.type in (int, float)
    ]
    assert bare == []  # int and float say "invalid int value": a type of cli/_types.py instead
    options = set(numeric_options())
    assert {
        ("run", "--prometheus-port"),
        ("run", "--sample-ratio"),
        ("replay", "--max-line-bytes"),
        ("run", "--poll-interval"),
    } <= options
    assert len(options) >= 16


@pytest.mark.parametrize(("command", "option"), numeric_options())
@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", "1e400", ""])
def test_every_bad_number_names_its_option_and_what_it_takes(
    command, option, value, capsys
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, f"{option}={value}", *(["x"] if command in ("replay", "stats") else [])])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"otel-bridge {command}: error: argument {option}: {value!r} is not ")
    assert "invalid" not in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--prometheus-port", "99999"], "'99999' is not a port number from 0 to 65535"),
        (["run", "--prometheus-port", "70000"], "'70000' is not a port number from 0 to 65535"),
        (["run", "--prometheus-port=-1"], "'-1' is not a port number from 0 to 65535"),
        (["run", "--sample-ratio", "abc"], "'abc' is not a number between 0 and 1"),
        (["replay", "--sample-ratio", "1.5", "x"], "'1.5' is not a number between 0 and 1"),
        (["run", "--metrics-interval", "0.0001"], "'0.0001' is not a number from 0.001"),
        (
            ["run", "--poll-interval", "3600"],
            "'3600' is not a number greater than 0 and at most 60",
        ),
        (["run", "--export-timeout", "1e300"], "'1e300' is not a number from 0 to 1000000000"),
    ],
)
def test_bad_values_exit_2_in_one_line_without_a_traceback(tmp_path, argv, expected) -> None:
    result = bridge(*argv, home=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    option = next(a for a in argv if a.startswith("--")).split("=")[0]
    assert f"otel-bridge {argv[0]}: error: argument {option}: {expected}" in result.stderr


@pytest.mark.parametrize(("value", "ok"), [("0", 0), ("65535", 65535), ("9464", 9464)])
def test_good_ports_are_taken(value: str, ok: int) -> None:
    args = build_parser().parse_args(["run", "--prometheus-port", value])
    assert args.prometheus_port == ok


# --- the /metrics address ----------------------------------------------------------------


def test_a_host_that_is_not_this_machines_is_one_line_exit_2(tmp_path) -> None:
    result = bridge(
        "run",
        "--no-checkpoints",
        "--session-state",
        str(tmp_path / "state"),
        "--prometheus-host",
        "not-a-host",
        "--prometheus-port",
        "0",
        home=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "cannot serve /metrics on not-a-host:0: the host is not an address of this machine "
        "(use 127.0.0.1, 0.0.0.0 or a local interface's address)" in result.stderr
    )
    (line,) = [line for line in result.stderr.splitlines() if "cannot serve" in line]
    assert "--prometheus-port" not in line  # the host is wrong, not the port


def test_a_port_in_use_says_to_pick_another(tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = bridge(
            "run",
            "--no-checkpoints",
            "--session-state",
            str(tmp_path / "state"),
            "--prometheus-host",
            "127.0.0.1",
            "--prometheus-port",
            str(port),
            home=tmp_path,
        )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert (
        f"cannot serve /metrics on 127.0.0.1:{port}: the port is in use: pick another with "
        "--prometheus-port" in result.stderr
    )


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("127.0.0.1", 70000, "the port is not from 0 to 65535"),
        ("::1", 0, "IPv6 addresses are not supported"),
    ],
)
def test_the_metrics_api_refuses_bad_addresses_clearly(host, port, expected) -> None:
    with pytest.raises(ConfigError, match=expected):
        build_metrics(
            {},
            build_resource({}),
            MetricsOptions(
                default_exporters=("prometheus",), prometheus_host=host, prometheus_port=port
            ),
        )
