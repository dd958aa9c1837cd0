"""The configuration file of run and replay (`--config FILE`, TOML): its keys, read and
checked, and written (install-service puts run's options in one).

A key is a long flag of the command without its dashes (`catch-up-minutes = 30`,
`no-prometheus = true`, `session-state = ["/srv/a", "/srv/b"]`), `log-paths` for replay's
PATHs. Keys at the top of the file are for the command that reads it (one that only the other
command has is left to it); a `[run]` or `[replay]` table holds keys for that command
only. Each value goes through the flag's own type, so the file is checked as the command
line is: an unknown key or a wrong value is an error naming the key and the file (exit
status 2). Only a regular file of at most 1 MiB is read, opened without blocking (a FIFO or
a device is refused at once). The file is parsed with the standard library's tomllib (Python
3.11+) or tomli, its backport (https://toml.io/en/v1.0.0 for the format).
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

from ..files._safe_open import open_regular
from ._errors import closest

__all__ = [
    "COMMANDS",
    "MAX_CONFIG_BYTES",
    "ConfigFileError",
    "command_line_options",
    "config_keys",
    "load_config",
    "read_config_text",
    "to_toml",
]

#: The largest configuration file read: a few hundred bytes is usual, a MiB is no configuration.
MAX_CONFIG_BYTES = 1 << 20
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
        table = tomllib.loads(read_config_text(path))
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
        match = closest(key, keys)
        if match is not None:
            shown = where.replace(key, match) if where != key else match
            raise ConfigFileError(f"{path}: unknown key {where!r}; did you mean {shown!r}?")
        raise ConfigFileError(
            f"{path}: unknown key {where!r}: not an option of {command} (keys are its long "
            "flags without --, docs/configuration.md)"
        )
    return {
        keys[key].dest: _value(path, where, keys[key], value)
        for key, (where, value) in chosen.items()
    }


def read_config_text(path: Path) -> str:
    """The text of a configuration file, opened as the logs are (`open_regular`): a FIFO
    there would block the start for good (and SIGTERM with it), `/dev/zero` or
    `/dev/urandom` would be read until memory runs out. So only a regular file is read, and
    one over `MAX_CONFIG_BYTES` is refused (a configuration is some lines; more is not one).

    Raises:
        ConfigFileError: it cannot be read, is not a regular file, is too large, or is not
            UTF-8.
    """
    try:
        with open_regular(path) as handle:
            size = handle.stat.st_size
            data = b"" if size > MAX_CONFIG_BYTES else handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if size > MAX_CONFIG_BYTES or len(data) > MAX_CONFIG_BYTES:
        raise ConfigFileError(
            f"{path}: {max(size, len(data))} bytes, more than a configuration file holds "
            f"(at most {MAX_CONFIG_BYTES} bytes, 1 MiB)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path}: not a TOML file (not UTF-8: {exc.reason})") from None


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


def command_line_options(
    parser: argparse.ArgumentParser, sub: argparse.ArgumentParser, argv: Sequence[str]
) -> dict[str, Any]:
    """The options `argv` gives, by dest, as the text typed (each list item too): parsed
    again with every default None and no type (argparse keeps a default where no flag is
    given, so a value that is not None was given)."""
    saved = [(a, a.default, a.type) for a in (*parser._actions, *sub._actions)]
    try:
        for action, _, _ in saved:
            if action.dest != "help" and action.default is not argparse.SUPPRESS:
                action.default = None
            if action in sub._actions:
                action.type = None
        again = parser.parse_args(argv)
    finally:
        for action, default, kind in saved:
            action.default, action.type = default, kind
    return {dest: value for dest, value in vars(again).items() if value is not None}


def to_toml(sub: argparse.ArgumentParser, options: dict[str, Any]) -> str:
    """The lines of a file that gives the `options` of `command_line_options`: each key once,
    in the order of the command's help, read back as the flags would give them."""
    lines = []
    for key, action in config_keys(sub).items():
        if action.dest not in options:
            continue
        value = options[action.dest]
        lines.append(f"{key} = {_toml_value(action, value)}")
    return "".join(line + "\n" for line in lines)


def _toml_value(action: argparse.Action, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(action, item) for item in value) + "]"
    # A number, as its flag's type reads it, is a TOML number (`trouble-turns = 50`, not "50");
    # a list of types kept by hand once missed the whole-number types of newer flags.
    converted = action.type(value) if callable(action.type) else value
    if isinstance(converted, int | float) and not isinstance(converted, bool):
        return repr(converted)
    return _toml_string(str(value))


def _toml_string(text: str) -> str:
    """A TOML basic string: quote and backslash escaped, control characters (C0, DEL and
    C1) as \\uXXXX, which TOML requires of C0 and DEL and keeps the file readable."""
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
