"""The examples of the help at any width: a comment that goes on over two lines of the source
is one comment, wrapped as one (at 80 columns run's used to leave "# the" on a line of its
own)."""

from __future__ import annotations

import itertools

import pytest

from otel_bridge.cli._parser import build_parser, command_parser

COMMANDS = [None, "replay", "run", "stats", "doctor", "install-service"]


def _examples(command: str | None) -> list[str]:
    parser = build_parser() if command is None else command_parser(build_parser(), command)
    return parser.format_help().rsplit("\nexamples:\n", 1)[1].splitlines()


@pytest.mark.parametrize("columns", [60, 80, 100])
@pytest.mark.parametrize("command", COMMANDS)
def test_an_example_s_comment_fills_its_lines(
    command: str | None, columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    width = min(columns, 100) - 2
    lines = _examples(command)
    for line, after in itertools.pairwise(lines):
        if line.lstrip().startswith("# ") and after.lstrip().startswith("# "):
            next_word = after.split()[1]
            # greedy: the next comment line's first word did not fit on this one
            assert len(line) + 1 + len(next_word) > width, (line, after)
    assert all(len(line) <= width or len(line.split()) <= 2 for line in lines), lines
