"""The command line's errors that are one line, not argparse's usage and a line.

A misspelt flag made argparse print the whole usage (25 lines for run) and, at its end,
"unrecognized arguments: --prometheus-prot 9"; the flag meant was nowhere said. A misspelt
flag or command is now one line that names the closest option ("unknown option
--prometheus-prot; did you mean --prometheus-port?"), as git and cargo say it, and a path
that cannot be used (`_types.PathProblem`) one line that names the path. An option's wrong
value keeps argparse's usage and line: there the usage shows what the option takes.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from ._types import PathProblem

__all__ = ["Parser", "closest", "unknown_option"]


class Parser(argparse.ArgumentParser):
    """argparse's parser, with the one-line errors above (its subcommands' parsers are of
    this class too: argparse makes them of their parent's class)."""

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = _command_parser(self, getattr(parsed, "command", None))
            self.exit(2, f"{command.prog}: error: {unknown_option(command, self, extras)}\n")
        return parsed

    def error(self, message: str) -> NoReturn:
        failure = sys.exc_info()[1]  # the ArgumentError argparse is reporting, if any
        if isinstance(failure, argparse.ArgumentError):
            if isinstance(failure.__context__, PathProblem):
                self.exit(2, f"{self.prog}: error: {message}\n")
            said = _unknown_command(failure.args[0], message)
            if said is not None:
                self.exit(2, f"{self.prog}: error: {said}\n")
        super().error(message)


def unknown_option(
    command: argparse.ArgumentParser, top: argparse.ArgumentParser, extras: Sequence[str]
) -> str:
    """What is wrong with the arguments no option took: the first that looks like an option,
    with the closest option of the command (or of the program), else the arguments."""
    flags = [word.split("=", 1)[0] for word in extras if word.startswith("-") and word != "-"]
    if not flags:
        return f"unexpected argument {extras[0]!r} ({command.prog} --help lists what it takes)"
    word = flags[0]
    options = [o for a in (*command._actions, *top._actions) for o in a.option_strings]
    match = closest(word, options)
    if match is None:
        return f"unknown option {word} ({command.prog} --help lists the options)"
    return f"unknown option {word}; did you mean {match}?"


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to `word`, when one is close enough to be what was meant."""
    found = difflib.get_close_matches(word, list(dict.fromkeys(candidates)), n=1, cutoff=0.6)
    return found[0] if found else None


def _unknown_command(action: object, message: str) -> str | None:
    """A command that is none of the program's, with the closest one; None for any other
    error."""
    typed = re.search(r"invalid choice: '([^']*)'", message)
    if not isinstance(action, argparse._SubParsersAction) or typed is None:
        return None
    word, names = typed.group(1), list(action.choices)
    match = closest(word, names)
    if match is None:
        return f"unknown command {word!r}: the commands are {', '.join(names)}"
    return f"unknown command {word!r}; did you mean {match}?"


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> Any:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser
