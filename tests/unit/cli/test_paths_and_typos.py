"""Paths as a shell gives them (`~`, `$NAME`) wherever they come from, and the errors a user
meets first (a path that cannot be used, a misspelt flag or key) on one line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from otel_bridge.cli import main
from otel_bridge.cli._parser import build_parser, command_parser
from otel_bridge.cli._settings import apply_config
from tests import paths

LOG = paths.FIXTURES / "mcp_tools" / "events.jsonl"


def _args(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "config", None) is not None:
        apply_config(parser, command_parser(parser, args.command), args, argv)
    return args


def _path_options(command: str) -> list[argparse.Action]:
    """Every option of `command` that names a file or directory (its metavar says)."""
    sub = command_parser(build_parser(), command)
    return [a for a in sub._actions if a.metavar in ("FILE", "DIR", "PATH")]


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    return capsys.readouterr().err


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.mark.parametrize("command", ["run", "replay", "doctor", "stats"])
def test_every_path_flag_expands_tilde_and_variables(command: str, home: Path) -> None:
    options = _path_options(command)
    assert options, command
    for action in options:
        flag = action.option_strings[0] if action.option_strings else None
        for typed, meant in (("~/x", home / "x"), ("${OUT}/y", home.parent / "out" / "y")):
            argv = [command, f"{flag}={typed}"] if flag else [command, typed]
            got = getattr(build_parser().parse_args(argv), action.dest)
            assert (got[0] if isinstance(got, list) else got) == meant, (flag, typed)


def test_paths_in_the_config_file_are_expanded(home: Path) -> None:
    config = home / "bridge.toml"
    config.write_text(
        'traces-file = "~/t.jsonl"\nsession-state = ["$OUT/a", "~/b"]\nstate-dir = "${OUT}/s"\n'
    )
    args = _args(["run", "--config=~/bridge.toml"])
    out = home.parent / "out"
    assert args.traces_file == home / "t.jsonl"
    assert args.session_state == [out / "a", home / "b"]
    assert args.state_dir == out / "s"


def test_replay_writes_under_home_not_a_directory_named_tilde(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "--no-progress", "--traces-file=~/traces.jsonl", str(LOG)]) == 0
    assert (home / "traces.jsonl").stat().st_size > 0
    assert not (home.parent / "~").exists()


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["replay", "--traces-file", "$NOT_SET_HERE/t.jsonl", str(LOG)],
            "otel-bridge replay: error: argument --traces-file: '$NOT_SET_HERE/t.jsonl': "
            "$NOT_SET_HERE is not set (or is empty)",
        ),
        (
            ["replay", "--metrics-file", "~no-such-user-here/m", str(LOG)],
            "otel-bridge replay: error: argument --metrics-file: '~no-such-user-here/m': "
            "~no-such-user-here: no such user",
        ),
    ],
)
def test_a_path_that_cannot_be_expanded_is_one_line_naming_it(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    assert _error(capsys, argv).splitlines() == [line]


def test_a_config_file_that_cannot_be_read_is_one_line_naming_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _error(capsys, ["run", "--config=~/none.toml"])
    assert err.splitlines() == [
        f"otel-bridge run: error: {home / 'none.toml'}: cannot be read (No such file or directory)"
    ]


def test_a_variable_unset_in_the_config_file_is_one_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = home / "bridge.toml"
    config.write_text('metrics-file = "$NOT_SET_HERE/m.jsonl"\n')
    err = _error(capsys, ["replay", "--config", str(config), str(LOG)])
    assert err.splitlines() == [
        f"otel-bridge replay: error: {config}: key 'metrics-file': '$NOT_SET_HERE/m.jsonl': "
        "$NOT_SET_HERE is not set (or is empty)"
    ]


# --- typos ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["run", "--prometheus-prot", "9"],
            "otel-bridge run: error: unknown option --prometheus-prot; "
            "did you mean --prometheus-port?",
        ),
        (
            ["replay", "--trace-file=x", str(LOG)],
            "otel-bridge replay: error: unknown option --trace-file; did you mean --traces-file?",
        ),
        (
            ["run", "--zzzzzz"],
            "otel-bridge run: error: unknown option --zzzzzz "
            "(otel-bridge run --help lists the options)",
        ),
        (["rn"], "otel-bridge: error: unknown command 'rn'; did you mean run?"),
    ],
)
def test_a_misspelt_flag_or_command_is_one_line_naming_the_closest(
    capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    assert _error(capsys, argv).splitlines() == [line]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("prometheus-prot = 9\n", "unknown key 'prometheus-prot'; did you mean 'prometheus-port'?"),
        (
            "[run]\nidle-timout = 5\n",
            "unknown key '[run] idle-timout'; did you mean '[run] idle-timeout'?",
        ),
    ],
)
def test_a_misspelt_config_key_is_one_line_naming_the_closest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text(text)
    err = _error(capsys, ["run", "--config", str(config)])
    assert err.splitlines() == [f"otel-bridge run: error: {config}: {said}"]


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("~", "/home/u"),
        ("~/", "/home/u/"),
        ("~/a/$X/b", "/home/u/a/x/b"),
        ("${X}y/~", "xy/~"),  # a ~ not at the start is a name
        ("a$/b", "a$/b"),  # a $ before no name stays
        ("/srv/$X", "/srv/x"),
    ],
)
def test_expansion_is_a_shell_s(text: str, expanded: str) -> None:
    from otel_bridge.cli._types import expand_path

    assert expand_path(text, {"HOME": "/home/u", "X": "x"}) == expanded


def test_an_error_names_the_path_as_given() -> None:
    from otel_bridge.cli._types import expand_path

    with pytest.raises(argparse.ArgumentTypeError) as said:
        expand_path("~/$NOPE/t", {"HOME": "/home/u"})
    assert str(said.value) == "'~/$NOPE/t': $NOPE is not set (or is empty)"
