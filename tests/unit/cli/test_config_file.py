"""`--config FILE`: every option of run and replay as a key, flags over the file, and a bad
file an error that names it and the key (exit status 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from otel_bridge.cli import main
from otel_bridge.cli._config_file import config_keys
from otel_bridge.cli._parser import build_parser, command_parser
from otel_bridge.cli._settings import apply_config
from tests import paths

ROOT = paths.REPO


def _args(argv: list[str]):
    parser = build_parser()
    args = parser.parse_args(argv)
    apply_config(parser, command_parser(parser, args.command), args, argv)
    return args


@pytest.mark.parametrize("command", ["run", "replay"])
def test_every_option_has_a_key_documented_in_configuration_md(command) -> None:
    sub = command_parser(build_parser(), command)
    keys = config_keys(sub)
    options = {a.dest for a in sub._actions} - {"help", "config"}
    assert {a.dest for a in keys.values()} == options
    doc = (ROOT / "docs" / "configuration.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in doc.splitlines() if "| `" in line}
    assert [key for key in keys if key not in rows] == []
    for key, action in keys.items():  # each row names the key's flag and its command
        flag = action.option_strings[-1] if action.option_strings else "PATH..."
        assert f"`{flag}`" in rows[key] and command in rows[key], rows[key]


def test_the_file_sets_options_and_flags_override_it(tmp_path) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text(
        'catch-up-minutes = 5\nsession-state = ["/a", "/b"]\nqueue-size = 100\n'
        "[run]\nstatus-interval = 0\n[replay]\njobs = 3\n"
    )
    args = _args(["run", "--config", str(config), "--session-state", "/c", "--queue-size", "7"])
    assert args.catch_up_minutes == 5.0 and args.status_interval == 0.0
    assert args.session_state == [Path("/c")]  # the flag's list replaces the file's
    assert args.queue_size == 7
    assert _args(["replay", "--config", str(config), "--jobs", "2"]).jobs == 2


def test_the_example_file_loads_for_run_and_replay() -> None:
    example = ROOT / "deploy" / "otel-bridge.toml"
    assert _args(["run", "--config", str(example)]).path_mode == "hash"
    replay = _args(["replay", "--config", str(example)])
    assert replay.jobs == 4 and replay.path_mode == "hash"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("bogus = 1\n", "unknown key 'bogus'"),
        ("[run]\nbogus = 1\n", "unknown key '[run] bogus'"),
        ("[run]\njobs = 2\n", "unknown key '[run] jobs': not an option of run"),
        ('catch-up-minutes = "soon"\n', "key 'catch-up-minutes': 'soon' is not a number"),
        ("backfill = 1\n", "key 'backfill': 1 is not true or false"),
        ('session-state = "/a"\n', "key 'session-state': '/a' is not a list"),
        ('paths = "all"\n', "key 'paths': 'all' is not one of keep, basename, hash"),
        ("queue-size = 1.5\n", "key 'queue-size': '1.5' is not a whole number"),
        ("sample-ratio = true\n", "key 'sample-ratio': True is not a string or a number"),
        ("catch-up-minutes = \n", "not a TOML file"),
    ],
)
def test_a_bad_file_is_an_error_naming_the_file_and_the_key(tmp_path, capsys, text, said) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text(text)
    with pytest.raises(SystemExit) as exit:
        main(["run", "--config", str(config)])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert f"{config}: " in err and said in err


def test_what_the_file_sets_is_checked_against_the_flags_as_a_flag_is(tmp_path, capsys) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text('state-dir = "/tmp/x"\n')
    with pytest.raises(SystemExit) as exit:
        main(["run", "--config", str(config), "--no-checkpoints"])
    assert exit.value.code == 2
    assert "argument --state-dir: not allowed with argument --no-checkpoints" in (
        capsys.readouterr().err
    )


def test_a_missing_file_is_an_error(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["replay", "--config", str(tmp_path / "none.toml")])
    assert exit.value.code == 2
    assert "none.toml: cannot be read" in capsys.readouterr().err


def test_doctor_reads_run_s_file_and_takes_the_options_it_has(tmp_path) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text(
        'state-dir = "/srv/state"\nbackfill = true\n[run]\nprometheus-port = 9465\n'
        "[replay]\njobs = 2\n"
    )
    args = _args(["doctor", "--config", str(config)])
    assert args.state_dir == Path("/srv/state") and args.prometheus_port == 9465
    assert not hasattr(args, "backfill")  # run's, which doctor does not check


def test_doctor_checks_the_file_as_run_would(tmp_path, capsys, monkeypatch) -> None:
    """A file run refuses is doctor's failure line (exit 1), and the rest is checked."""
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path))
    config = tmp_path / "bridge.toml"
    config.write_text("[run]\nbackfil = true\n")
    assert main(["doctor", "--config", str(config), "--no-prometheus", "--no-checkpoints"]) == 1
    out = capsys.readouterr().out
    assert f"[!!] config file {config}: unknown key '[run] backfil'" in out
    assert "run would not start" in out


def test_the_log_level_of_the_file_is_the_one_used_unless_a_flag_says(tmp_path) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text('log-level = "DEBUG"\n')
    assert _args(["run", "--config", str(config)]).log_level == "DEBUG"
    assert _args(["--log-level", "ERROR", "run", "--config", str(config)]).log_level == "ERROR"
    assert _args(["run", "--config", str(config), "--log-level", "WARNING"]).log_level == (
        "WARNING"
    )


def test_the_file_install_service_writes_has_numbers_as_numbers(tmp_path) -> None:
    """Each option whose flag reads a number is a TOML number in the file written
    (`trouble-turns = 50`, once "50"), and the file reads back to the same options."""
    from otel_bridge.cli._config_file import command_line_options, to_toml, tomllib

    parser = build_parser()
    sub = command_parser(parser, "run")
    numeric = {
        key: type(value)
        for key, action in config_keys(sub).items()
        if action.nargs != 0
        and isinstance(value := _converted(action, "50"), int | float)
        and not isinstance(value, bool)
    }
    assert {"trouble-turns", "queue-size", "prometheus-port", "idle-timeout"} <= set(numeric)
    argv = ["run", *[x for key in numeric for x in (f"--{key}", "50")]]
    written = to_toml(sub, command_line_options(parser, sub, argv))
    table = tomllib.loads(written)
    assert {key: type(table[key]) for key in numeric} == numeric, written
    config = tmp_path / "bridge.toml"
    config.write_text(written)
    again, given = _args(["run", "--config", str(config)]), parser.parse_args(argv)
    assert all(getattr(again, k.dest) == getattr(given, k.dest) for k in config_keys(sub).values())


def _converted(action, text: str):
    try:
        return action.type(text) if callable(action.type) else None
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        return None
