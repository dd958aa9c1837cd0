"""A metrics recorder for tests: keeps every observation the assembler makes, to compare with
what the raw log says (the MetricsRecorder protocol of otel_bridge._metrics)."""

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
