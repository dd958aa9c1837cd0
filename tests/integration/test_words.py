"""Words people read (`_words.py`): a count says its noun in the singular for one, wherever the
bridge prints one, and a name shortened to fit still tells it apart."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from otel_bridge._words import outcome_word, plural, short_count, shortened
from otel_bridge.decode._lines import JsonLinesDecoder
from tests import paths

FIXTURES = paths.FIXTURES


def test_plural() -> None:
    assert plural(1, "trace") == "1 trace"
    assert plural(0, "log") == "0 logs"
    assert plural(2, "session log") == "2 session logs"
    assert plural(1, "entry", "entries") == "1 entry"
    assert plural(3, "entry", "entries") == "3 entries"


def test_the_replay_summary_says_1_log_and_1_trace() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "otel_bridge", "replay", str(FIXTURES / "abort"), "--no-progress"],
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = [line for line in result.stderr.splitlines() if "replayed" in line]
    assert re.search(r"replayed 1 log: \d+ events; 4 spans exported in 1 trace$", line), line


def test_one_line_that_is_no_event_is_said_in_the_singular() -> None:
    decoder = JsonLinesDecoder("x")
    decoder.feed(b"hello\n")
    assert decoder.without_events() == "0 of 1 line is an event (line 1: not JSON)"


def test_no_count_of_one_is_printed_with_a_plural_noun(capsys, caplog) -> None:
    """What a replay and stats of one log (one task) print and log."""
    from otel_bridge.cli import main

    caplog.set_level("INFO")
    for argv in (
        ["replay", str(FIXTURES / "abort"), "--no-progress", "--console-format", "summary"],
        ["stats", str(FIXTURES / "abort")],
    ):
        assert main(argv) == 0
    text = capsys.readouterr().out + "\n".join(r.getMessage() for r in caplog.records)
    assert "replayed 1 log:" in text and "read 1 log:" in text and "in 1 trace" in text
    assert not re.search(r"\b1 (logs|traces|spans|events|tools|sub-agents|tasks)\b", text)


@pytest.mark.parametrize(
    ("outcome", "incomplete", "word"),
    [
        ("no_signal", False, "done"),
        ("no_signal", True, "unfinished"),
        ("completed", False, "completed"),
        ("failed", False, "failed"),
        ("error", False, "error"),
        ("aborted", False, "aborted"),
        (None, False, "unfinished"),
    ],
)
def test_outcome_words(outcome: str | None, incomplete: bool, word: str) -> None:
    assert outcome_word(outcome, incomplete=incomplete) == word


def test_short_counts_take_four_characters_at_most() -> None:
    assert [short_count(n) for n in (0, 999, 1000, 8949, 12_345, 456_700, 999_500, 45_000_000)] == [
        "0",
        "999",
        "1.0k",
        "8.9k",
        "12k",
        "457k",
        "1.0M",
        "45M",
    ]
    assert all(len(short_count(10**n + 7)) <= 4 for n in range(13))


def test_shortened_names_keep_what_tells_them_apart() -> None:
    names = ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "claude-sonnet-4.5", "claude-haiku-4.5"]
    for width in (10, 7):
        cut = [shortened(name, width) for name in names]
        assert all(len(name) <= width for name in cut)
        assert len(set(cut)) == len(names), cut
    assert shortened("gpt-4.1", 10) == "gpt-4.1"
    assert shortened("gpt-4.1-mini", 10) == "g-4.1-mini"
    assert len(shortened("x" * 40, 8)) == 8
