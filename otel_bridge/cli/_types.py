"""Types of the command line's options: each turns a flag's text into a value, or says what
was expected.

Each raises ArgumentTypeError for every bad input (never ValueError, which argparse reports as
"invalid ratio value", naming the function instead of what was expected):
"argument --sample-ratio: 'abc' is not a number between 0 and 1", exit status 2.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from ..assembler import check_root_name
from ..metrics._recorder import OPTIONAL_LABELS

__all__ = [
    "metric_labels",
    "metrics_interval",
    "non_negative_float",
    "non_negative_int",
    "path",
    "poll_interval",
    "port",
    "positive_float",
    "positive_int",
    "queue_size",
    "ratio",
    "root_name",
    "unusable_path",
]

#: Longest duration accepted: waits beyond threading.TIMEOUT_MAX (about 9.2e9 s) raise
#: OverflowError deep inside the exporters and the poll loop.
_MAX_SECONDS = 1e9


def _whole(text: str, low: int, high: int | None, expected: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{text!r} is not {expected}")
    return value


def _number(text: str, ok: Callable[[float], bool], expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not ok(value):  # nan and inf, too, make no duration
        raise argparse.ArgumentTypeError(f"{text!r} is not {expected}")
    return value


def positive_int(text: str) -> int:
    return _whole(text, 1, None, "a whole number of 1 or more")


#: Most spans --queue-size takes: each holds about 2 KiB while queued, so a million is some 2
#: GiB per exporter, more than a host should give a telemetry bridge; a larger number is a
#: typo (or 1e20), and would only show as memory exhausted while a collector is down.
MAX_QUEUE_SPANS = 1_000_000


def queue_size(text: str) -> int:
    return _whole(
        text, 1, MAX_QUEUE_SPANS, f"a whole number of spans from 1 to {MAX_QUEUE_SPANS:,}"
    )


def non_negative_int(text: str) -> int:
    return _whole(text, 0, None, "a whole number of 0 or more")


def port(text: str) -> int:
    return _whole(text, 0, 65535, "a port number from 0 to 65535 (0: any free port)")


def positive_float(text: str) -> float:
    return _number(
        text,
        lambda v: 0 < v <= _MAX_SECONDS,
        f"a number greater than 0 and at most {_MAX_SECONDS:.0f}",
    )


def poll_interval(text: str) -> float:
    # A stop (SIGTERM, Ctrl-C) is noticed at the end of a wait: an hour's wait would ignore it.
    return _number(text, lambda v: 0 < v <= 60, "a number greater than 0 and at most 60")


def metrics_interval(text: str) -> float:
    # The SDK's reader takes whole milliseconds and refuses 0.
    return _number(
        text, lambda v: 0.001 <= v <= _MAX_SECONDS, f"a number from 0.001 to {_MAX_SECONDS:.0f}"
    )


def ratio(text: str) -> float:
    return _number(text, lambda v: 0 <= v <= 1, "a number between 0 and 1")


def non_negative_float(text: str) -> float:
    return _number(text, lambda v: 0 <= v <= _MAX_SECONDS, f"a number from 0 to {_MAX_SECONDS:.0f}")


def root_name(text: str) -> str:
    """`--root-name`: a template of the task root's name (`assembler._root_name`)."""
    try:
        return check_root_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def metric_labels(text: str) -> tuple[str, ...]:
    """`branch,client`: the attribute keys of those optional metric labels
    (`_metrics.OPTIONAL_LABELS`), in the order given, each once."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in OPTIONAL_LABELS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of optional metric labels: "
            f"comma-separated, from {', '.join(OPTIONAL_LABELS)}"
        )
    return tuple(dict.fromkeys(OPTIONAL_LABELS[name] for name in names))


#: $NAME or ${NAME}, as a shell reads them (a `$` followed by anything else stays as it is).
_VARIABLE = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")


class PathProblem(argparse.ArgumentTypeError):
    """A path that cannot be used as given: said on one line that names it, without the
    usage (`_errors.Parser.error`), since the path is the whole problem."""


def path(text: str) -> Path:
    """A path flag's (or configuration key's) value, expanded as a shell expands it: a
    leading `~` or `~user`, then `$NAME` and `${NAME}`. The shell does this for a word it
    sees, but not for `--config=~/x.toml`, a quoted value, a TOML file or a systemd unit's
    arguments; taken literally, `~/x` made a directory named `~` in the working directory.

    Raises:
        PathProblem: a variable it names is not set (a shell would make it empty, and
            `$STATE/x` would become `/x`), or `~user` names no user.
    """
    return Path(expand_path(text, os.environ))


def expand_path(text: str, environ: Mapping[str, str]) -> str:
    """`text` with `~` and its variables expanded from `environ` (see `path`); an error
    names `text` as given."""
    head, tail = "", text
    if text.startswith("~"):
        user, slash, rest = text[1:].partition("/")
        home = environ.get("HOME") if not user else _home_of(user)
        if not home:
            raise unusable_path(text, f"~{user}: no such user" if user else "$HOME is not set")
        head, tail = (home.rstrip("/") + slash, rest) if slash else (home, "")

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if not environ.get(name):
            raise unusable_path(text, f"${name} is not set (or is empty)")
        return environ[name]

    return head + _VARIABLE.sub(value, tail)  # a home's own `$` is not a variable


def _home_of(user: str) -> str | None:
    try:
        import pwd
    except ImportError:  # pragma: no cover - not on Windows, where ~user is not said
        return None
    try:
        return pwd.getpwnam(user).pw_dir
    except KeyError:
        return None


def unusable_path(text: str, why: str) -> PathProblem:
    """The one-line error of a path that cannot be used: "'$STATE/x': $STATE is not set"."""
    return PathProblem(f"{text!r}: {why}")
