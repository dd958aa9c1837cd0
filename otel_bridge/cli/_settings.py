"""Settings from three places: flags, a configuration file (`--config FILE`, TOML), and the
environment. Flags win over the file; the file wins over the bridge's own variables'
defaults (OTEL_BRIDGE_STATE_DIR, OTEL_BRIDGE_CONTENT_HASH_SALT); the OTEL_* variables apply
as the OpenTelemetry SDK reads them, whatever the file says (docs/configuration.md).

A key is a long flag of the command without its dashes (`catch-up-minutes = 30`,
`no-prometheus = true`, `session-state = ["/srv/a", "/srv/b"]`), `log-paths` for replay's
PATHs. Keys at the top of the file are for the command that reads it (one that only the other
command has is left to it); a `[run]` or `[replay]` table holds keys for that command
only. Each value goes through the flag's own type, so the file is checked as the command
line is: an unknown key or a wrong value is an error naming the key and the file (exit
status 2). The file is parsed with the standard library's tomllib (Python 3.11+) or tomli,
its backport.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the backport, same interface
    import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]

from ._options import Given
from ._parser import command_parser

__all__ = ["COMMANDS", "ConfigFileError", "apply_config", "config_keys", "load_config"]

#: The commands that take --config, each a table of the file.
COMMANDS = ("run", "replay")
_POSITIONAL_KEY = {"paths": "log-paths"}
_NOT_KEYS = {"help", "config"}


class ConfigFileError(Exception):
    """A configuration file that cannot be used: the message names the file and the key."""


def config_keys(sub: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The file's keys for a command's parser, each with the option it sets."""
    keys = {}
    for action in sub._actions:
        if action.dest in _NOT_KEYS:
            continue
        longs = [s for s in action.option_strings if s.startswith("--")]
        key = longs[0][2:] if longs else _POSITIONAL_KEY.get(action.dest)
        if key is not None:
            keys[key] = action
    return keys


def load_config(
    path: Path,
    command: str,
    sub: argparse.ArgumentParser,
    other_keys: Collection[str] = (),
) -> dict[str, Any]:
    """The options `path` sets for `command`, by dest, each value checked by its flag's type.
    A top-level key in `other_keys` (an option of the other command only) is left to it.

    Raises:
        ConfigFileError: the file cannot be read or parsed, a key is unknown, a value wrong.
    """
    try:
        with path.open("rb") as handle:
            table = tomllib.load(handle)
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not a TOML file ({exc})") from None
    keys = config_keys(sub)
    chosen: dict[str, Any] = {}
    for key, value in table.items():
        if key in COMMANDS:
            if not isinstance(value, dict):
                raise ConfigFileError(f"{path}: [{key}] must be a table")
            if key == command:
                chosen.update({k: (f"[{key}] {k}", v) for k, v in value.items()})
            continue
        chosen.setdefault(key, (key, value))
    for key, (where, _) in list(chosen.items()):
        if key in keys:
            continue
        if where == key and key in other_keys:  # the other command's, at the top
            del chosen[key]
            continue
        raise ConfigFileError(
            f"{path}: unknown key {where!r}: not an option of {command} (keys are its long "
            "flags without --, docs/configuration.md)"
        )
    return {
        keys[key].dest: _value(path, where, keys[key], value)
        for key, (where, value) in chosen.items()
    }


def _value(path: Path, key: str, action: argparse.Action, value: Any) -> Any:
    """`value` as the flag would give it."""

    def wrong(expected: str) -> ConfigFileError:
        return ConfigFileError(f"{path}: key {key!r}: {value!r} is not {expected}")

    if action.nargs == 0:  # store_true
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if isinstance(action, argparse._AppendAction) or action.nargs == "*":
        if not isinstance(value, list):
            raise wrong("a list (key = [...])")
        return [_one(path, key, action, item) for item in value]
    return _one(path, key, action, value)


def _one(path: Path, key: str, action: argparse.Action, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigFileError(f"{path}: key {key!r}: {value!r} is not a string or a number")
    text = str(value)
    try:
        converted = action.type(text) if callable(action.type) else text
    except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
        raise ConfigFileError(f"{path}: key {key!r}: {exc}") from None
    if action.choices is not None and converted not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise ConfigFileError(f"{path}: key {key!r}: {value!r} is not one of {choices}")
    return converted


def apply_config(
    parser: argparse.ArgumentParser,
    sub: argparse.ArgumentParser,
    args: argparse.Namespace,
    argv: Sequence[str],
) -> None:
    """Set in `args` what the file of `args.config` says, but for what a flag gave. An
    option the file sets counts as given (`_options.Given`): the checks of contradicting
    flags see it.

    Raises:
        ConfigFileError: as `load_config`.
    """
    others = set().union(
        *(config_keys(command_parser(parser, name)) for name in COMMANDS if name != args.command)
    )
    values = load_config(args.config, args.command, sub, others)
    given = _given_on_command_line(parser, sub, argv)
    noted: set[str] = getattr(args, "given_options", set())
    tracked = {a.dest for a in sub._actions if isinstance(a, Given)}
    for dest, value in values.items():
        if dest in given:
            continue
        setattr(args, dest, value)
        if dest in tracked:
            noted = noted | {dest}
    args.given_options = noted


def _given_on_command_line(
    parser: argparse.ArgumentParser, sub: argparse.ArgumentParser, argv: Sequence[str]
) -> set[str]:
    """The dests the command line set: parsed again with every default None (argparse keeps
    a default where no flag is given, so a value that is not None was given)."""
    saved = [(action, action.default) for action in (*parser._actions, *sub._actions)]
    try:
        for action, _ in saved:
            if action.dest != "help" and action.default is not argparse.SUPPRESS:
                action.default = None
        again = parser.parse_args(argv)
    finally:
        for action, default in saved:
            action.default = default
    return {dest for dest, value in vars(again).items() if value is not None}
