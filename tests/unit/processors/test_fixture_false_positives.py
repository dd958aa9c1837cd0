"""Issue 32, item 1: redaction that generalises must not eat real work. The logs of
tests/fixtures (recorded from the real Copilot CLI) hold no secret, so every redaction made in
them is a false positive: they are counted, on what the bridge exports with content capture on
and on every string of every event, and the ordinary values in them (paths, git hashes, uuids,
session and call ids, base64 in code) must come through whole."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from otel_bridge import AssemblerConfig
from otel_bridge.processors import Scrubber
from tests import paths, spantree

FIXTURES = paths.REPO / "tests" / "fixtures"
_REDACTED = re.compile(r"\[REDACTED:(\w+)\]")


def _walk(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in (key, *_walk(value))]
    if isinstance(node, list):
        return [s for item in node for s in _walk(item)]
    return []


def _logs() -> list[Path]:
    return sorted(FIXTURES.rglob("*.jsonl"))


@cache
def exported() -> tuple[str, ...]:
    """Every string the bridge puts on spans from the fixtures, content capture on."""
    out: list[str] = []
    for path in _logs():
        for span in spantree.assemble(path, config=AssemblerConfig(capture_content=True)):
            out.append(span.name)
            out += [span.status_message] if span.status_message else []
            for attributes in (span.attributes, *(e.attributes for e in span.events)):
                out += [v for v in attributes.values() if isinstance(v, str)]
    return tuple(out)


@cache
def every_string() -> tuple[str, ...]:
    """Every string of every event of the fixtures' logs (system prompts, tool output...)."""
    out: list[str] = []
    for path in _logs():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out += _walk(json.loads(line))
            except ValueError:
                continue
    return tuple(out)


def redactions(strings: tuple[str, ...]) -> Counter[str]:
    scrubber = Scrubber()
    found: Counter[str] = Counter()
    for text in strings:
        found.update(_REDACTED.findall(scrubber.text(text)))
    return found


def test_the_fixtures_are_what_is_measured() -> None:
    """Not vacuous: the fixtures are many logs and much text, content capture on."""
    assert len(_logs()) >= 30
    assert len(exported()) > 4000 and sum(map(len, exported())) > 100_000
    assert len(every_string()) > 30_000 and sum(map(len, every_string())) > 2_000_000


@pytest.mark.parametrize("workload", [exported, every_string], ids=["exported", "every-string"])
def test_no_redaction_in_the_real_fixtures(workload: object) -> None:
    """0 of them, measured: before issue 32 the strings of the logs had 134 (the git trailer
    `Co-authored-by: Copilot` taken for an `auth` assignment, a SQL `key = 'current_phase'`)."""
    assert callable(workload)
    assert redactions(workload()) == Counter()


#: Ordinary values of each sort, found in the fixtures: at least this many of each.
SORTS = {
    "uuid": (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), 20),
    "git hash": (re.compile(r"\b[0-9a-f]{40}\b"), 1),
    "path": (re.compile(r"(?:/[\w.@+-]+){3,}"), 50),
    "call id": (re.compile(r"\b(?:toolu|call|tooluse)_[A-Za-z0-9_]{8,}\b"), 20),
    "long token": (re.compile(r"[A-Za-z0-9+/_=-]{32,}"), 10),
}


@pytest.mark.parametrize("sort", sorted(SORTS))
def test_ordinary_values_in_the_fixtures_survive(sort: str) -> None:
    pattern, least = SORTS[sort]
    values = {m.group(0) for text in every_string() for m in pattern.finditer(text)}
    assert len(values) >= least, values
    scrubber = Scrubber()
    eaten = [value for value in values if scrubber.text(f"see {value} here") != f"see {value} here"]
    assert not eaten, eaten[:10]


def test_base64_files_in_code_survive() -> None:
    """A file in base64 (an image in code, an archive in a tool's output, PEM certificates
    wrapped at 64) is data, not a key: the entropy check leaves it."""
    png = (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJ"
        "RU5ErkJggg=="
    )
    code = f'const PIXEL = "data:image/png;base64,{png}";'
    wrapped = "\n".join(
        [
            "UEsDBBQAAAAIAKt8VVkAAAAAAAAAAAAAAAAJAAAAbm90ZXMudHh0K0ktLlEozy/KSVEEAFBLAQIUABQAAAAI",
            "AKt8VVmUw3GrCgAAAAgAAAAJAAAAAAAAAAAAAAC2gQAAAABub3Rlcy50eHRQSwUGAAAAAAEAAQA3AAAAMQAA",
            "xq7Zp2LmR4vN8wJt5KcB0yHfT3sUa9QeXbDgW1oVrC6iEn+MlYhPAu/OdSjIzFk4GqTxw2Hv7eK1N0JpRsLm",
        ]
    )
    for text in (
        code,
        wrapped,
        "-----BEGIN CERTIFICATE-----\n" + wrapped + "\n-----END CERTIFICATE-----",
    ):
        assert Scrubber().text(text) == text
