"""How the command line's help is laid out: wrapped to the terminal at word boundaries.

argparse's own formatters either leave descriptions and epilogs as written (lines cut by the
terminal wherever they reach its edge: "original t" / "imestamps") or join them into one
paragraph (examples and tables run together), and both wrap option help with textwrap's
defaults, which break a word longer than the column ("OTEL_I" / "NSTRUMENTATION") and break
after hyphens ("sub-" / "agents"). This formatter wraps description and epilog paragraph by
paragraph, keeps indented lines (examples, a table of variables) as lines, and never breaks a
word: a word longer than the column stands on its own line.
"""

from __future__ import annotations

import argparse
import re
import shutil
import textwrap

__all__ = ["NO_BREAK", "HelpFormatter"]

#: Prose is hard to read wider than this, however wide the terminal.
_MAX_WIDTH = 100
#: Continuation lines of an indented line (an example that does not fit) go this much deeper.
_HANGING = "    "
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")


#: Ties words that must stay on one line ("n/a\u00a0(BYOK)"): textwrap breaks only at ASCII
#: whitespace, and it is shown as a plain space.
NO_BREAK = "\u00a0"
_SPACES = re.compile(r"[ \t\n\r\f\v]+")


def _wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    lines = textwrap.wrap(
        text,
        max(width, 1),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace(NO_BREAK, " ") for line in lines]


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions and epilogs wrapped by paragraph (a blank line between paragraphs); in a
    paragraph, lines that start with a space are kept as lines (continued deeper if too long,
    or as a comment for a "# " line; a comment over several lines is one), the others joined
    and wrapped. Option help is wrapped
    the same way. No word is ever broken, at a hyphen or anywhere else; words joined by
    `NO_BREAK` stay on one line."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24) -> None:
        # argparse takes the width from $COLUMNS, else the terminal, and keeps 2 spare
        columns = shutil.get_terminal_size().columns
        super().__init__(
            prog,
            indent_increment=indent_increment,
            max_help_position=max_help_position,
            width=min(columns, _MAX_WIDTH) - 2,
        )

    def _split_lines(self, text: str, width: int) -> list[str]:
        return _wrap(_SPACES.sub(" ", text).strip(), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for paragraph in _PARAGRAPHS.split(text.strip("\n")):
            lines: list[str] = []
            prose: list[str] = []
            for line in _joined_comments(paragraph.splitlines()):
                if line[:1].isspace():
                    lines += _wrap(" ".join(prose), width, indent, indent) if prose else []
                    prose = []
                    lead = indent + line[: len(line) - len(line.lstrip())]
                    # a comment goes on as a comment; anything else, deeper
                    rest = lead + ("# " if line.lstrip().startswith("# ") else _HANGING)
                    lines += _wrap(line.strip(), width, lead, rest)
                else:
                    prose.append(line.strip())
            lines += _wrap(" ".join(prose), width, indent, indent) if prose else []
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


def _joined_comments(lines: list[str]) -> list[str]:
    """The lines, with a comment that goes on over several lines ("  # spans ... keeps the",
    "  # metrics on ...") as one: wrapped line by line, its first line's last word would
    stand alone on a line of its own at some width ("  # the")."""
    joined: list[str] = []
    for line in lines:
        text = line.lstrip()
        lead = line[: len(line) - len(text)]
        previous = joined[-1] if joined else ""
        if lead and text.startswith("# ") and previous.startswith(lead + "# "):
            joined[-1] = previous + " " + text[2:]
        else:
            joined.append(line)
    return joined
