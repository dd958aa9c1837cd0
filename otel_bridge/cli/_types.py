"""Types of the command line's options: each turns a flag's text into a value, or says what
was expected.

Each raises ArgumentTypeError for every bad input (never ValueError, which argparse reports as
"invalid ratio value", naming the function instead of what was expected):
"argument --sample-ratio: 'abc' is not a number between 0 and 1", exit status 2.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from .._metrics import OPTIONAL_LABELS
from ..assembler import check_root_name

__all__ = [
    "metric_labels",
    "metrics_interval",
    "non_negative_float",
    "non_negative_int",
    "poll_interval",
    "port",
    "positive_float",
    "positive_int",
    "queue_size",
    "ratio",
    "root_name",
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
