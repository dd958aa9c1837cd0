"""The command line as a new user meets it: help that reads well at any width, flags that
contradict refused, a flag never silently ignored, and the defaults run, replay and stats
share."""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from otel_bridge.cli import main
from otel_bridge.cli._parser import build_parser, command_parser
from otel_bridge.cli._service import render
from tests import paths
from tests.corpus import session_state
from tests.otlp_receiver import OtlpReceiver
from tests.processes import bridge_env, start_bridge, terminate


def dead_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


ROOT = paths.REPO
COMMANDS = ["replay", "run", "stats", "doctor", "install-service"]


def environment(**extra: str) -> dict[str, str]:
    return bridge_env({"PYTHONPATH": str(ROOT), **extra})


def bridge(*args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otel_bridge", *args],
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# --- help --------------------------------------------------------------------------------------


def _texts(parser: argparse.ArgumentParser) -> list[str]:
    """The prose a parser's help is made of: description, epilog, each option's help."""
    texts = [parser.description or "", parser.epilog or ""]
    texts += [
        action.help for action in parser._actions if action.help not in (None, "==SUPPRESS==")
    ]
    return texts


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_wraps_at_word_boundaries_and_breaks_no_word(
    command: str | None, columns: int
) -> None:
    argv = ["--help"] if command is None else [command, "--help"]
    result = bridge(*argv, COLUMNS=str(columns))
    assert result.returncode == 0, result.stderr
    parser = build_parser() if command is None else command_parser(build_parser(), command)
    shown = set(result.stdout.split())
    for text in _texts(parser):
        for word in text.split():
            assert word in shown, f"{word!r} is broken or missing in `{' '.join(argv)}`"
    for line in result.stdout.splitlines():
        # wider than the terminal only for a word that cannot be broken, alone on its line
        assert len(line) < columns or len(line.split()) == 1, line


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_s_help_ends_with_examples(command: str) -> None:
    help_text = bridge(command, "--help", COLUMNS="100").stdout
    examples = help_text.rsplit("\nexamples:\n", 1)
    assert len(examples) == 2, help_text
    lines = examples[1].splitlines()
    assert all(line.startswith("  ") for line in lines)
    commands = [line for line in lines if not line.lstrip().startswith("#")]
    assert 2 <= len(commands) <= 3, examples[1]
    assert all(f"otel-bridge {command}" in line for line in commands)


def test_run_s_options_are_grouped_by_what_they_are_about() -> None:
    run = command_parser(build_parser(), "run")
    groups = {group.title: group for group in run._action_groups}
    for title in ("sources", "checkpoints", "export", "metrics and probes", "privacy", "scale"):
        assert groups[title]._group_actions, title
    ungrouped = {a.option_strings[-1] for a in groups["options"]._group_actions}
    assert ungrouped == {"--help", "--log-level", "--config"}
    grouped = [a for t, g in groups.items() if t != "options" for a in g._group_actions]
    assert len(grouped) == len({id(a) for a in grouped}) >= 35  # each option once


# --- flags that contradict, or cannot take effect ---------------------------------------------


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (
            ["run", "--no-prometheus", "--prometheus-port", "9999"],
            {},
            "argument --prometheus-port: not allowed with argument --no-prometheus",
        ),
        (
            ["run", "--no-prometheus", "--prometheus-host", "0.0.0.0"],
            {},
            "argument --prometheus-host: not allowed with argument --no-prometheus",
        ),
        (
            ["run", "--no-prometheus", "--stuck-after", "30"],
            {},
            "argument --stuck-after: not allowed with argument --no-prometheus",
        ),
        (
            ["run", "--no-prometheus", "--unready-after", "30"],
            {},
            "argument --unready-after: not allowed with argument --no-prometheus",
        ),
        (
            ["run", "--no-checkpoints", "--state-dir", "X"],
            {},
            "argument --state-dir: not allowed with argument --no-checkpoints",
        ),
        (["run", "--user", ""], {}, "argument --user: '' is not os or an ID"),
        (["replay", "--user", "  ", "x"], {}, "argument --user: '  ' is not os or an ID"),
        (
            ["run", "--backfill", "--catch-up-minutes", "5"],
            {},
            "argument --catch-up-minutes: not allowed with argument --backfill",
        ),
        (
            ["run", "--metrics-interval", "5"],
            {},
            "argument --metrics-interval: no metrics are exported at intervals",
        ),
        (
            ["run", "--metrics-interval", "5"],
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_METRICS_EXPORTER": "none"},
            "argument --metrics-interval: no metrics are exported at intervals",
        ),
        (
            ["run", "--no-prometheus", "--metric-labels", "branch"],
            {},
            "argument --metric-labels: no metrics are exported",
        ),
        (
            ["replay", "--metric-labels", "branch", "x"],
            {},
            "argument --metric-labels: no metrics are exported (replay writes metrics only",
        ),
        (
            ["replay", "--content-max-chars", "100", "x"],
            {},
            "argument --content-max-chars: content capture is off",
        ),
        (
            ["run", "--allow-attribute", "a", "--deny-attribute", "a"],
            {},
            "argument --deny-attribute: 'a' is also given to --allow-attribute",
        ),
        (
            ["doctor", "--no-checkpoints", "--state-dir", "X"],
            {},
            "argument --state-dir: not allowed with argument --no-checkpoints",
        ),
    ],
)
def test_flags_that_cannot_take_effect_together_are_an_option_error(
    argv: list[str], env: dict[str, str], expected: str, tmp_path: Path
) -> None:
    result = bridge(*argv, HOME=str(tmp_path), **env)
    assert result.returncode == 2, result.stderr
    (last,) = result.stderr.strip().splitlines()[-1:]
    assert last.startswith(f"otel-bridge {argv[0]}: error: {expected}"), result.stderr
    assert result.stderr.startswith(f"usage: otel-bridge {argv[0]}")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--metrics-interval", "5", "--metrics-file", "m.jsonl"],
        ["run", "--capture-content", "--content-max-chars", "100"],
        ["replay", "--metric-labels", "branch", "--metrics-file", "m.jsonl", "x"],
        ["run", "--backfill", "--no-checkpoints"],
    ],
)
def test_flags_that_work_together_are_taken(argv: list[str]) -> None:
    from otel_bridge.cli._checks import contradiction

    args = build_parser().parse_args(argv)
    assert contradiction(args, {}) is None


def test_content_capture_from_the_environment_lets_content_max_chars_take_effect() -> None:
    from otel_bridge.cli._checks import contradiction
    from otel_bridge.cli._common import CONTENT_ENV

    args = build_parser().parse_args(["run", "--content-max-chars", "100"])
    assert contradiction(args, {CONTENT_ENV: "true"}) is None
    assert contradiction(args, {}) is not None


# --- the explicit flag wins --------------------------------------------------------------------


def test_console_format_prints_beside_an_otlp_endpoint(
    otlp_receiver: OtlpReceiver, tmp_path: Path
) -> None:
    state = session_state(tmp_path / "session-state")
    result = bridge(
        "replay",
        str(state),
        "--no-progress",
        "--console-format",
        "summary",
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.http_endpoint,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # summary lines: a line per day, then a line per task that starts with its time
    tasks = [x for x in lines if re.match(r"\d\d:\d\d  ", x)]
    assert tasks and all(
        x in tasks or re.fullmatch(r"-- \d{4}-\d\d-\d\d \w{3} --", x) for x in lines
    )
    alone = bridge("replay", str(state), "--no-progress", "--console-format", "summary")
    assert lines == alone.stdout.splitlines()  # what it prints with no endpoint
    roots = [s for s in otlp_receiver.spans() if s["name"] == "invoke_agent copilot"]
    assert len(tasks) >= len(roots) > 0  # and every task went to the collector too
    assert "(to each of 2 destinations" in result.stderr


def test_a_prometheus_flag_serves_the_port_whatever_otel_metrics_exporter_says(
    tmp_path: Path,
) -> None:
    port = dead_port()
    log = tmp_path / "run.log"
    process = start_bridge(
        [
            "run",
            "--session-state",
            str(tmp_path),
            "--no-checkpoints",
            "--prometheus-port",
            str(port),
        ],
        env=environment(OTEL_METRICS_EXPORTER="otlp", OTEL_TRACES_EXPORTER="none"),
        log=log,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as got:
                    body = got.read().decode()
                if "otel_bridge_" in body or time.monotonic() > deadline:
                    break  # (the port listens a moment before the meters are made)
                time.sleep(0.1)
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"no /metrics on {port}: {log.read_text()}")
                time.sleep(0.1)
    finally:
        terminate(process)
    assert "otel_bridge_" in body  # Prometheus metrics, beside the OTLP ones asked for


# --- where the sessions are --------------------------------------------------------------------


def test_a_copilot_home_given_as_session_state_is_its_session_state_directory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from otel_bridge.cli._common import session_state_roots

    home = tmp_path / ".copilot"
    state = session_state(home / "session-state")
    (home / "logs").mkdir()  # what else the CLI keeps there
    (home / "pkg").mkdir()
    with caplog.at_level("INFO", logger="otel_bridge"):
        roots = session_state_roots([home], {})
    assert roots == [(state, home)]
    assert f"{home} holds no session log but a session-state directory: watching {state}" in (
        caplog.text
    )
    assert session_state_roots([state], {}) == [(state, state)]  # a real one stays


def test_doctor_says_where_run_looks_for_a_copilot_home(tmp_path: Path) -> None:
    home = tmp_path / ".copilot"
    state = session_state(home / "session-state")
    logs = len(list(state.iterdir()))
    result = bridge(
        "doctor",
        "--session-state",
        str(home),
        "--no-prometheus",
        "--no-checkpoints",
        OTEL_TRACES_EXPORTER="console",
    )
    assert result.returncode == 0, result.stdout
    assert (
        f"[ok] {home} holds no session but a session-state directory: run watches {state}; "
        f"{logs} session logs" in result.stdout
    )


@pytest.mark.parametrize("command", ["replay", "stats"])
def test_replay_and_stats_without_a_path_read_copilot_home_s_sessions(
    command: str, tmp_path: Path
) -> None:
    home = tmp_path / "copilot-home"
    state = session_state(home / "session-state")
    logs = len(list(state.iterdir()))
    extra = ["--no-progress"] if command == "replay" else []
    result = bridge(
        command, *extra, COPILOT_HOME=str(home), OTEL_TRACES_EXPORTER="none", HOME=str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    verb = "replayed" if command == "replay" else "read"
    assert f"{verb} {logs} logs" in result.stderr


def test_replay_without_a_path_says_where_it_looked(tmp_path: Path) -> None:
    result = bridge("replay", HOME=str(tmp_path))
    assert result.returncode == 2
    assert f"{tmp_path}/.copilot/session-state: no such directory (the default PATH" in (
        result.stderr
    )


# --- install-service takes run's checks --------------------------------------------------------


def test_install_service_refuses_run_flags_that_contradict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "install-service",
                "--platform",
                "systemd",
                "--",
                "--no-prometheus",
                "--prometheus-port",
                "9999",
            ]
        )
    assert exit_info.value.code == 2
    assert "not allowed with argument --no-prometheus" in capsys.readouterr().err
    assert not (tmp_path / ".config").exists()


def test_the_service_s_defaults_never_contradict_its_arguments() -> None:
    def run_args(text: str) -> list[str]:
        line = next(x for x in text.splitlines() if x.startswith("ExecStart="))
        return line.split(" run ", 1)[1].split()

    service = render("systemd", ["--no-checkpoints"], {}, 30.0, ["otel-bridge"])
    without = run_args(service.text)
    assert "--state-dir" not in without and "no-checkpoints = true" in service.config
    console = run_args(render("systemd", [], {}, 30.0, ["otel-bridge"]).text)
    assert console[-4:-2] == ["--console-format", "summary"]  # spans go to the journal
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}
    otlp = run_args(render("systemd", [], endpoint, 30.0, ["otel-bridge"]).text)
    assert "--console-format" not in otlp  # it would add the console to the collector
    assert otlp[:3] == ["--state-dir", "%S/otel-bridge", "--config"]


@pytest.mark.parametrize("value", ["1000001", "100000000000000000000", "0"])
def test_queue_size_is_bounded_with_a_clear_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """1e20 spans was taken, to show only as memory exhausted while a collector is down."""
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["run", "--queue-size", value])
    assert exit_.value.code == 2
    assert "--queue-size" in capsys.readouterr().err
    assert build_parser().parse_args(["run", "--queue-size", "1000000"]).queue_size == 1_000_000


def test_queue_size_in_a_config_file_is_bounded_as_the_flag(tmp_path: Path) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text("queue-size = 9000000000\n")
    result = bridge("run", "--config", str(config), "--no-prometheus")
    assert result.returncode == 2, result.stderr
    assert "queue-size" in result.stderr and "1,000,000" in result.stderr, result.stderr
