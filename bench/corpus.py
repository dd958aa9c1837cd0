"""Realistic corpora grown from the real Copilot CLI logs under tests/fixtures.

Why: the bridge must be measured on what it will really read, at the sizes it will really see
(thousands of session directories). Copying one fixture 10,000 times would not do: the bridge
derives span ids from the session id and deduplicates events by event id, so every copy gets
fresh UUIDs everywhere (directory name, sessionId, event ids, parent ids, interaction ids...),
mapped consistently within the copy so that the log still hangs together, and its times shifted
so that it looks as recent or as old as the measurement needs.

A fixture is parsed once into a template: per line, literal text interleaved with UUID slots and
timestamp slots. Rendering a copy is then a join, fast enough for 10,000 sessions.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

__all__ = [
    "FIXTURES",
    "LIVE_FIXTURES",
    "SessionCopy",
    "Template",
    "add_big_outputs",
    "build_corpus",
    "count_events",
    "load_templates",
]

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
#: Logs whose every interaction ends in the log itself (no background work left waiting, no
#: open turn): the live, soak and kill sections use them, so that every span is exported soon
#: after its last line and a clean replay gives the same spans.
LIVE_FIXTURES = (
    "run1_cli_prompt_basic",
    "subagent_parallel",
    "parallel_tools",
    "subagent_nested",
    "resume",
    "abort",
    "provider_error",
    "autopilot_nudge",
    "sdk1_two_user_messages",
    "crash_resume",
)
_SLOTS = re.compile(
    r"(?P<uuid>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
    r"|(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"
)


def _parse_ms(text: str) -> int:
    moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return round(moment.timestamp() * 1000)


def _format_ms(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@dataclass(frozen=True)
class Line:
    """One log line as literal parts and slots: str (literal), ("u", uuid) or ("t", ms)."""

    parts: tuple[str | tuple[str, str] | tuple[str, int], ...]
    time_ms: int  # the event's own timestamp


@dataclass(frozen=True)
class Template:
    """A fixture log, ready to be rendered as many times as needed with fresh ids."""

    name: str
    session_id: str
    lines: tuple[Line, ...]
    uuids: tuple[str, ...]

    @property
    def first_ms(self) -> int:
        return self.lines[0].time_ms

    @property
    def last_ms(self) -> int:
        return max(line.time_ms for line in self.lines)


def _template(path: Path) -> Template:
    lines: list[Line] = []
    uuids: dict[str, None] = {}
    session_id = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not raw.strip():
            continue
        event = json.loads(raw)
        if event.get("type") == "session.start":
            session_id = event["data"]["sessionId"]
        parts: list[str | tuple[str, str] | tuple[str, int]] = []
        last = 0
        for match in _SLOTS.finditer(raw):
            parts.append(raw[last : match.start()])
            if match.group("uuid"):
                parts.append(("u", match.group("uuid")))
                uuids[match.group("uuid")] = None
            else:
                parts.append(("t", _parse_ms(match.group("ts"))))
            last = match.end()
        parts.append(raw[last:] + "\n")
        lines.append(Line(tuple(parts), _parse_ms(event["timestamp"])))
    if not session_id:
        session_id = path.parent.name
    return Template(path.parent.name, session_id, tuple(lines), tuple(uuids))


def load_templates(names: Sequence[str] | None = None) -> list[Template]:
    """Templates of the named fixtures (all fixtures with a log when None), in name order."""
    paths = sorted(FIXTURES.glob("*/events.jsonl"))
    if names is not None:
        paths = [FIXTURES / name / "events.jsonl" for name in names]
    return [_template(path) for path in paths]


def _fresh_uuid(rng: random.Random) -> str:
    value = f"{rng.getrandbits(128):032x}"
    return f"{value[:8]}-{value[8:12]}-4{value[13:16]}-a{value[17:20]}-{value[20:]}"


class SessionCopy:
    """One copy of a template: fresh ids, and times shifted by `shift_ms` unless a line is
    rendered with its own time (live writing stamps each line with the moment it is written)."""

    def __init__(self, template: Template, rng: random.Random, shift_ms: int = 0) -> None:
        self.template = template
        self.mapping = {old: _fresh_uuid(rng) for old in template.uuids}
        self.session_id = self.mapping.get(template.session_id, _fresh_uuid(rng))
        self.shift_ms = shift_ms

    def render_line(self, index: int, at_ms: int | None = None) -> str:
        """Line `index`; with `at_ms`, its event time is exactly `at_ms` (and every other time
        in the line moves with it)."""
        line = self.template.lines[index]
        shift = self.shift_ms if at_ms is None else at_ms - line.time_ms
        out: list[str] = []
        for part in line.parts:
            if isinstance(part, str):
                out.append(part)
            elif part[0] == "u":
                out.append(self.mapping[str(part[1])])
            else:
                out.append(_format_ms(int(part[1]) + shift))
        return "".join(out)

    def render(self) -> str:
        return "".join(self.render_line(i) for i in range(len(self.template.lines)))

    @property
    def last_ms(self) -> int:
        return self.template.last_ms + self.shift_ms

    def __len__(self) -> int:
        return len(self.template.lines)


def copies(
    templates: Sequence[Template], n: int, seed: int, end_ms: int, spread_ms: int
) -> Iterator[SessionCopy]:
    """`n` copies round-robin over `templates`, each ending at a random time within
    `spread_ms` before `end_ms`."""
    rng = random.Random(seed)
    for index in range(n):
        template = templates[index % len(templates)]
        last = end_ms - rng.randrange(max(spread_ms, 1))
        yield SessionCopy(template, rng, last - template.last_ms)


def build_corpus(
    cache: Path, n: int, *, age_s: float, seed: int = 1, names: Sequence[str] | None = None
) -> tuple[Path, float]:
    """A session-state directory of `n` sessions whose logs ended about `age_s` seconds ago
    (file times included), cached under `cache`; returns it and the seconds spent building
    it (0 when it came from the cache)."""
    key = f"state-{n}-age{int(age_s)}-seed{seed}-{len(names) if names else 'all'}"
    root = cache / key
    marker = cache / f"{key}.complete"  # beside it: the bridge watches the root
    if marker.exists():
        return root, 0.0
    started = time.perf_counter()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    templates = load_templates(names)
    end_ms = round((time.time() - age_s) * 1000)
    for copy in copies(templates, n, seed, end_ms, spread_ms=600_000):
        directory = root / copy.session_id
        directory.mkdir()
        log = directory / "events.jsonl"
        log.write_text(copy.render(), encoding="utf-8")
        os.utime(log, (copy.last_ms / 1000, copy.last_ms / 1000))
    marker.write_text("ok\n")
    return root, time.perf_counter() - started


def count_events(root: Path) -> tuple[int, int]:
    """Lines and bytes of every events.jsonl under `root`."""
    lines = size = 0
    for log in root.glob("*/events.jsonl"):
        data = log.read_bytes()
        lines += data.count(b"\n")
        size += len(data)
    return lines, size


def _big_output(line: str, size: int) -> str | None:
    """`line` with its tool result grown to about `size` bytes, or None when it is not the
    completion of a tool with a text result."""
    if '"tool.execution_complete"' not in line:
        return None
    event = json.loads(line)
    result = event.get("data", {}).get("result")
    if not isinstance(result, dict) or not isinstance(result.get("content"), str):
        return None
    half = max(size // 2, 1)
    filler = "".join(
        f"{k:07d}  build output, nothing of note on this line\n" for k in range(half // 50)
    )
    result["content"] += "\n" + filler
    result["detailedContent"] = result["content"]  # the CLI keeps the output twice
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n"


def add_big_outputs(root: Path, every: int, size: int) -> int:
    """Grow one tool result to about `size` bytes (a line of that length: a build log, a big
    file read) in one session of every `every` under `root`, spread evenly, file times kept;
    returns how many. The fixtures' longest line is 45 KB, real sessions have lines of 1-2 MB,
    and what the bridge holds of a line read in several polls only shows with them."""
    grown = 0
    for index, log in enumerate(sorted(root.glob("*/events.jsonl"))):
        if every <= 0 or grown * every > index:
            continue
        lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
        for number, line in enumerate(lines):
            big = _big_output(line, size)
            if big is not None:
                times = log.stat()
                lines[number] = big
                log.write_text("".join(lines), encoding="utf-8")
                os.utime(log, ns=(times.st_atime_ns, times.st_mtime_ns))
                grown += 1
                break
    return grown
