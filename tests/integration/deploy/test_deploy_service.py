"""`otel-bridge install-service`: the systemd user unit and the launchd agent it writes.

The unit is checked by systemd itself (`systemd-analyze verify --user`, which reports unknown
keys, bad values and a missing executable); the plist is read back with plistlib (launchd's
format; no macOS here). Both command lines go through the CLI's own parser, and the command
they start is run for real (`--version`).
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from otel_bridge.cli import main
from otel_bridge.cli._config_file import tomllib  # the standard library's, or tomli on 3.10
from otel_bridge.cli._parser import build_parser, command_parser
from otel_bridge.cli._service import bridge_command, render
from otel_bridge.cli._settings import apply_config
from tests.integration.deploy.test_deploy_docker import cli_problem

ENV_VALUE = 'authorization=Bearer a b%c"d$e\\f'


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own, with an OTLP endpoint and a header with awkward characters."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    for key in list(os.environ):
        if key.startswith("OTEL_") or key == "COPILOT_HOME":
            monkeypatch.delenv(key)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", ENV_VALUE)
    monkeypatch.setenv("UNRELATED_SECRET", "not copied")
    return tmp_path


def unit_values(text: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


def exec_start_words(text: str) -> list[str]:
    """ExecStart= split into words as systemd does for these (quotes, %% and $$)."""
    (line,) = unit_values(text, "ExecStart")
    return [w.replace("%%", "%").replace("$$", "$") for w in shlex.split(line)]


def systemd_problems(unit: Path, runtime: Path) -> list[str]:
    """What `systemd-analyze verify --user` says about this unit file (nothing when good)."""
    runtime.mkdir(mode=0o700, exist_ok=True)
    done = subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )
    said = [line for line in (done.stdout + done.stderr).splitlines() if unit.name in line]
    if done.returncode != 0:
        said.append(f"exit {done.returncode}: {done.stderr.strip()}")
    return said


needs_systemd = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze is not installed (Debian: apt-get install systemd; "
    "scripts/build_deploy_tools.sh does it in CI)",
)


def test_the_service_runs_this_installation_of_the_bridge() -> None:
    command = bridge_command()
    assert Path(command[0]).is_absolute()
    done = subprocess.run([*command, "--version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("otel-bridge ")


def test_an_otel_bridge_script_is_named_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "bin" / "otel-bridge"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["bin/otel-bridge", "install-service"])
    assert bridge_command() == [str(script)]


def test_the_systemd_unit_runs_run_with_the_state_and_environment(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install-service", "--print", "--platform", "systemd", "--", "--backfill"]) == 0
    text = capsys.readouterr().out
    assert not (home / ".config").exists(), "--print writes nothing"
    words = exec_start_words(text)
    command = bridge_command()
    assert words[: len(command)] == command
    args = words[len(command) :]
    assert cli_problem(args) is None, cli_problem(args)
    assert args[:3] == ["run", "--state-dir", "%S/otel-bridge"]  # $XDG_STATE_HOME/otel-bridge
    config = home / ".config" / "otel-bridge" / "otel-bridge.toml"
    assert args[-2:] == ["--config", str(config)]  # the options are in the file
    assert tomllib.loads(text.split(f"# {config}\n", 1)[1]) == {"backfill": True}
    assert unit_values(text, "StateDirectory") == ["otel-bridge"]
    assert unit_values(text, "WantedBy") == ["default.target"]
    assert unit_values(text, "TimeoutStopSec") == ["45"]  # --export-timeout 30 + 15
    environment = [shlex.split(value)[0] for value in unit_values(text, "Environment")]
    environment = [value.replace("%%", "%") for value in environment]
    assert environment == [
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318",
        f"OTEL_EXPORTER_OTLP_HEADERS={ENV_VALUE}",
    ]
    assert "StandardOutput" not in text  # stdout and stderr go to the journal


@needs_systemd
def test_systemd_accepts_the_unit(home: Path, tmp_path: Path) -> None:
    service = render("systemd", ["--backfill"], dict(os.environ), 30.0)
    unit = tmp_path / "otel-bridge.service"
    unit.write_text(service.text)
    assert systemd_problems(unit, tmp_path / "run") == []
    # the same check sees a mistake
    unit.write_text(service.text.replace("Restart=on-failure", "Restart=sometimes"))
    assert systemd_problems(unit, tmp_path / "run")


def test_install_writes_the_unit_once_and_says_how_to_enable_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unit = home / ".config" / "systemd" / "user" / "otel-bridge.service"
    assert main(["install-service", "--platform", "systemd"]) == 0
    out = capsys.readouterr().out
    assert stat.S_IMODE(unit.stat().st_mode) == 0o600  # OTLP headers may hold tokens
    assert "systemctl --user enable --now otel-bridge.service" in out
    assert "journalctl --user -u otel-bridge" in out
    assert "OTEL_EXPORTER_OTLP_HEADERS" in out and "UNRELATED_SECRET" not in unit.read_text()
    # again: unchanged; a different one is not overwritten without --force
    assert main(["install-service", "--platform", "systemd"]) == 0
    assert "unchanged" in capsys.readouterr().out
    assert main(["install-service", "--platform", "systemd", "--", "--backfill"]) == 1
    assert "--force" in capsys.readouterr().err
    config = home / ".config" / "otel-bridge" / "otel-bridge.toml"
    assert tomllib.loads(config.read_text()) == {}
    assert main(["install-service", "--platform", "systemd", "--force", "--", "--backfill"]) == 0
    assert tomllib.loads(config.read_text()) == {"backfill": True}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600  # a content hash salt is a secret
    assert "--backfill" not in unit.read_text()
    assert f"wrote {config}" in capsys.readouterr().out


def test_install_respects_xdg_config_home(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "cfg"))
    assert main(["install-service", "--platform", "systemd"]) == 0
    assert (home / "cfg" / "systemd" / "user" / "otel-bridge.service").is_file()


def test_the_launchd_agent_has_the_macos_state_and_log_places(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install-service", "--platform", "launchd", "--", "--export-timeout", "10"]) == 0
    out = capsys.readouterr().out
    path = home / "Library" / "LaunchAgents" / "local.otel-bridge.plist"
    agent = plistlib.loads(path.read_bytes())
    assert agent["Label"] == "local.otel-bridge"
    command = bridge_command()
    arguments = agent["ProgramArguments"]
    assert arguments[: len(command)] == command
    args = arguments[len(command) :]
    assert cli_problem(args) is None, cli_problem(args)
    state = home / "Library" / "Application Support" / "otel-bridge"
    logs = home / "Library" / "Logs" / "otel-bridge"
    assert args[:3] == ["run", "--state-dir", str(state)]
    assert agent["StandardErrorPath"] == agent["StandardOutPath"] == str(logs / "otel-bridge.log")
    assert state.is_dir() and logs.is_dir(), "launchd creates neither"
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["ExitTimeOut"] == 25  # --export-timeout 10 + 15
    assert agent["EnvironmentVariables"] == {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": ENV_VALUE,
    }
    assert f"launchctl bootstrap gui/{os.getuid()} {shlex.quote(str(path))}" in out
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_bad_run_argument_is_refused_before_anything_is_written(home: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["install-service", "--platform", "systemd", "--", "--no-such-flag"])
    assert exit_info.value.code == 2
    assert not (home / ".config").exists()


#: Run arguments a unit file must carry through: a newline (which ended the line, and the
#: unit systemd read), an escape sequence, a tab, a C1 control, a quote, a lone `;` (which
#: starts a second command when bare).
AWKWARD_ARGS = [
    "--session-state",
    "/srv/copilot/odd\nname\t\x1b[2J\x85\"'\\",
    "--session-state",
    ";",
]


def systemd_words(line: str) -> list[str]:
    """ExecStart= split into words as systemd.syntax(7) says: double-quoted words with the C
    escapes \\n, \\t, \\r, \\xNN, \\uNNNN, \\\\ and \\"; then %% and $$ undoubled."""
    words, pos = [], 0
    while pos < len(line):
        if line[pos] == " ":
            pos += 1
            continue
        if line[pos] != '"':
            end = line.find(" ", pos)
            end = len(line) if end < 0 else end
            words.append(line[pos:end])
            pos = end
            continue
        pos += 1
        word = []
        while line[pos] != '"':
            if line[pos] == "\\":
                kind = line[pos + 1]
                if kind in "xu":
                    size = 2 if kind == "x" else 4
                    word.append(chr(int(line[pos + 2 : pos + 2 + size], 16)))
                    pos += 2 + size
                    continue
                word.append({"n": "\n", "t": "\t", "r": "\r"}.get(kind, kind))
                pos += 2
                continue
            word.append(line[pos])
            pos += 1
        words.append("".join(word))
        pos += 1
    return [w.replace("%%", "%").replace("$$", "$") for w in words]


def test_awkward_run_arguments_go_to_the_file_as_they_were_given(home: Path) -> None:
    service = render("systemd", AWKWARD_ARGS, dict(os.environ), 30.0)
    (line,) = unit_values(service.text, "ExecStart")  # one line, one command
    assert systemd_words(line)[-2:] == ["--config", str(service.config_path)]
    assert tomllib.loads(service.config)["session-state"] == AWKWARD_ARGS[1::2]
    assert_reads_as_flags(service.config, AWKWARD_ARGS, home)


def assert_reads_as_flags(config: str, run_args: list[str], where: Path) -> None:
    """The file gives run the options the arguments give it."""
    path = where / "read-back.toml"
    path.write_text(config)
    parser = build_parser()
    from_file = parser.parse_args(["run", "--config", str(path)])
    apply_config(parser, command_parser(parser, "run"), from_file, ["run", "--config", str(path)])
    from_flags = parser.parse_args(["run", *run_args])
    read = vars(from_file)
    read.pop("config_options", None)  # what the file gave, to name its keys in an error
    assert read == {**vars(from_flags), "config": path}


def test_every_kind_of_option_reads_back_from_the_file(home: Path) -> None:
    run_args = [
        *("--export-timeout", "1e-3", "--prometheus-port", "0", "--sample-ratio", "0.25"),
        *("--metric-labels", "client,branch", "--shard", "1/3", "--paths", "hash"),
        *("--content-hash-salt", "1e3", "--scrub-pattern", "a\\d+", "--no-progress"),
        *("--user", "os", "--root-name", "{agent} {mode}", "--catch-up-minutes", "5"),
    ]
    service = render("systemd", run_args, dict(os.environ), 30.0)
    assert 'content-hash-salt = "1e3"' in service.config  # a string stays a string
    assert_reads_as_flags(service.config, run_args, home)


@needs_systemd
def test_systemd_accepts_awkward_run_arguments(home: Path, tmp_path: Path) -> None:
    unit = tmp_path / "otel-bridge.service"
    unit.write_text(render("systemd", AWKWARD_ARGS, dict(os.environ), 30.0).text)
    assert systemd_problems(unit, tmp_path / "run") == []


@needs_systemd
def test_systemd_decodes_the_escapes_into_the_characters(tmp_path: Path) -> None:
    """The quoting is read back by systemd itself: an executable named with a newline is
    refused (systemd allows none in its name), and the name it quotes has a real newline."""
    odd = tmp_path / "odd\nname"
    odd.write_text("#!/bin/sh\n")
    odd.chmod(0o755)
    unit = tmp_path / "otel-bridge.service"
    unit.write_text(render("systemd", [], {}, 30.0, command=[str(odd)]).text)
    (tmp_path / "run").mkdir(mode=0o700)
    done = subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run")},
    )
    assert str(odd) in done.stdout + done.stderr


def test_install_service_takes_a_newline_in_a_run_argument(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["install-service", "--print", "--platform", "systemd", "--", *AWKWARD_ARGS]
    assert main(args) == 0
    out = capsys.readouterr().out
    (line,) = unit_values(out, "ExecStart")
    assert systemd_words(line)[-2] == "--config"
    config = tomllib.loads(out.split(f"# {systemd_words(line)[-1]}\n", 1)[1])
    assert config["session-state"] == AWKWARD_ARGS[1::2]


def test_launchd_carries_a_newline_and_refuses_what_a_plist_cannot_hold(
    home: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = ["install-service", "--platform", "launchd", "--", "--session-state", "/srv/a\nb"]
    assert main(args) == 0
    path = home / "Library" / "LaunchAgents" / "local.otel-bridge.plist"
    config = Path(plistlib.loads(path.read_bytes())["ProgramArguments"][-1])
    assert tomllib.loads(config.read_text())["session-state"] == ["/srv/a\nb"]
    path.unlink()
    capsys.readouterr()
    # a run argument with an escape goes to the file; the environment goes to the plist
    args = ["install-service", "--platform", "launchd", "--force", "--", "--session-state"]
    assert main([*args, "/srv/a\x1bb"]) == 0
    assert tomllib.loads(config.read_text())["session-state"] == ["/srv/a\x1bb"]
    path.unlink()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "bridge\x1b[2J")
    assert main([*args, "/srv/a"]) == 2
    assert "control character" in caplog.text and "\\x1b" in caplog.text
    assert not path.exists()


@pytest.mark.parametrize("platform", ["systemd", "launchd"])
def test_a_variable_holding_a_newline_is_refused_not_left_out(home: Path, platform: str) -> None:
    """A header with a newline was silently left out of the unit, and the service ran without
    its auth header. Now install-service says so (naming the variable, not the value), writes
    nothing, and exits 2, with --print too."""
    environ = dict(os.environ, OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer s3cr3tT0ken\nx=1")
    for extra in ([], ["--print"]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "otel_bridge",
                "install-service",
                "--platform",
                platform,
                *extra,
            ],
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "OTEL_EXPORTER_OTLP_HEADERS holds a newline" in done.stderr, done.stderr
        assert "s3cr3tT0ken" not in done.stderr + done.stdout, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (home / ".config").exists() and not (home / "Library").exists()
