"""Words people read: how a task ended, in words a user recognises, counts with their noun,
names shortened to fit.

The metric label and span attribute `copilot.task.outcome` keep their values (`completed`,
`failed`, `error`, `aborted`, `no_signal`: dashboards, alerts and queries use them). What a
person reads (the console's lines, `stats`, docs/commands.md's table, dashboard legends) says the
same thing in plain words, from this one table, so that every output calls an outcome the
same. In interactive mode the CLI never asks the model for `task_complete`: almost every
healthy task there ends `no_signal`, which is "done", not a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from . import semconv as sc

__all__ = [
    "CONTINUED",
    "OUTCOMES",
    "UNFINISHED",
    "Outcome",
    "outcome_word",
    "plural",
    "short_count",
    "shortened",
    "task_title",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a task ended, for people.

    Attributes:
        value: the `copilot.task.outcome` value (metric label), or a console-only state.
        word: what people read (plain ASCII, one word).
        meaning: what it means, in a sentence (docs/commands.md's table, help texts).
    """

    value: str
    word: str
    meaning: str


#: The task outcomes, in the order people see them (most common first), with their words.
OUTCOMES: Final = (
    Outcome(
        sc.OUTCOME_NO_SIGNAL,
        "done",
        "the agent loop ended normally, without a completion signal: how almost every "
        "interactive task ends, since the CLI asks for task_complete only in autopilot",
    ),
    Outcome(
        sc.OUTCOME_COMPLETED,
        "completed",
        "the agent signalled that the task is complete (task_complete): autopilot, mostly",
    ),
    Outcome(
        sc.OUTCOME_FAILED,
        "failed",
        "the agent signalled that it could not complete the task (task_complete with "
        "success false, or blocked)",
    ),
    Outcome(
        sc.OUTCOME_ERROR,
        "error",
        "an error ended it (session.error: the model provider failed after its retries, say)",
    ),
    Outcome(sc.OUTCOME_ABORTED, "aborted", "the user stopped it (Esc, Ctrl-C)"),
)
#: A task whose end was not seen: the CLI was killed or shut down mid-task, its log ended
#: or went quiet, or the bridge stopped before it ended. Its metric outcome is `no_signal`
#: (with `copilot.incomplete=true` on its span); the console also says it of a task whose
#: last span never came.
UNFINISHED: Final = Outcome(
    "unfinished",
    "unfinished",
    "its end was not seen: the CLI was killed or shut down mid-task, or its log stopped",
)
#: Console only: work that came after its task was shown (a background shell or sub-agent
#: that reported after the task had ended), a line of its own.
CONTINUED: Final = Outcome(
    "continued", "continued", "late work of a task shown before (background work that reported)"
)
_WORDS = {outcome.value: outcome.word for outcome in OUTCOMES}
_PARTS = re.compile(r"([-_/ .:@]+)")  # what separates the words of a name


def outcome_word(outcome: object, *, incomplete: bool = False) -> str:
    """The word for a task's `copilot.task.outcome`; "unfinished" when its end was not seen
    (`copilot.incomplete`, which only a `no_signal` task has) or it has no outcome."""
    if outcome is None or (incomplete and outcome == sc.OUTCOME_NO_SIGNAL):
        return UNFINISHED.word
    return _WORDS.get(str(outcome), str(outcome))


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`count` and its noun: "1 trace", "2 traces", "0 logs" (`nouns` when adding an s is
    not the plural: "1 entry", "3 entries")."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def shortened(text: str, width: int) -> str:
    """`text` in at most `width` characters (at least 5), still told apart from its
    neighbours: names differ at their end as often as at their start (`gpt-4.1` and
    `gpt-4.1-mini`, `claude-sonnet-4.5` and `claude-haiku-4.5`), and their first words are
    the ones they share. So the words of letters but the last, from the first, become their
    first letter (`c-sonnet-4.5`, `c-s-4.5`, `g-4.1-mini`) until it fits; what is still too
    long is cut in its middle (`g-...ni`)."""
    width = max(width, 5)
    if len(text) <= width:
        return text
    parts = _PARTS.split(text)
    for index, part in enumerate(parts[:-1]):  # the last word is the one that tells apart
        if len(part) > 1 and part.isalpha():
            parts[index] = part[0]
            if len("".join(parts)) <= width:
                return "".join(parts)
    text = "".join(parts)
    if len(text) <= width:
        return text
    tail = (width - 3) // 2
    return text[: width - 3 - tail] + "..." + text[len(text) - tail :]


def short_count(n: int) -> str:
    """A count in at most 4 characters, 2 or 3 significant digits: 560, 8.9k, 457k, 1.2M
    (a glance: the spans and `stats --json` have the exact numbers)."""
    if n < 1000:
        return str(n)
    value = float(n)
    for unit in "kMGT":
        value /= 1000
        if value < 9.95:
            return f"{value:.1f}{unit}"
        if value < 999.5:
            return f"{value:.0f}{unit}"
    return f"{value:.0f}T"


def task_title(text: str) -> str:
    """The first words of a user's message, on one line: a name to tell tasks apart by in a
    list of traces (`copilot.task.title`; their span names are all `invoke_agent copilot`).
    Made by the assembler, and again by the scrubber from the redacted prompt (the title was
    cut before the secret's context that came later in the prompt could be seen).
    Whole words only, up to `TASK_TITLE_WORDS` of them while they fit in
    `TASK_TITLE_MAX_CHARS` (the first always): a word cut in two could be a secret cut where
    the scrubber's patterns no longer see it (they run on export, after this)."""
    words = text.split()
    title = words[0] if words else ""
    for word in words[1 : sc.TASK_TITLE_WORDS]:
        if len(title) + 1 + len(word) > sc.TASK_TITLE_MAX_CHARS:
            break
        title += " " + word
    return title
