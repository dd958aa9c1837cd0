"""Metrics recorders for tests: keep every observation the assembler or the tailer makes, to compare
with what the raw log says (the MetricsRecorder protocol of otel_bridge.metrics._recorder); and a
clock a test moves by hand."""

from __future__ import annotations


class Recorder:
    """Keeps every observation."""

    def __init__(self) -> None:
        self.points: list[tuple[str, str, float, dict, str]] = []

    def add(self, name, value, attributes, session_id) -> None:
        self.points.append(("add", name, value, dict(attributes), session_id))

    def record(self, name, value, attributes, session_id) -> None:
        self.points.append(("record", name, value, dict(attributes), session_id))

    def values(self, name: str, **match) -> list[float]:
        return [
            v
            for _, n, v, a, _ in self.points
            if n == name and all(a.get(k.replace("__", ".")) == m for k, m in match.items())
        ]


class Counting:
    """Keeps what was added (a tailer's counts), summed by `total` over exact attribute keys."""

    def __init__(self) -> None:
        self.added: list[tuple[str, float, dict]] = []

    def add(self, name, value, attributes, session_id) -> None:
        self.added.append((name, value, dict(attributes)))

    def record(self, name, value, attributes, session_id) -> None:
        pass

    def total(self, name: str, **attributes: str) -> float:
        return sum(
            v
            for n, v, a in self.added
            if n == name and all(a.get(k) == x for k, x in attributes.items())
        )


class Clock:
    """time.time for a test: `now` is what it says, moved by the test."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
