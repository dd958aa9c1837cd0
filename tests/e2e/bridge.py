"""`otel-bridge run` beside a real Copilot CLI, for the end-to-end tests that look at it while
the session runs: it follows a COPILOT_HOME's session-state, writes a traces file and serves
/metrics on a port it picks; the test waits for what it expects (`wait`, `until`, `expect`),
and may kill it and start it again from its checkpoints (`kill`, `restart`).
"""

from __future__ import annotations

import math
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests import processes
from tests.prometheus import Scrape, scrape_metrics

#: Seconds to wait for anything (a busy 2-core machine, a CLI starting): generous on purpose.
DEADLINE = 120.0
_SERVING = re.compile(r"serving http://127\.0\.0\.1:(\d+)/metrics")
_T = TypeVar("_T")


class Bridge:
    """`run` following `state`; its log, traces file and (with `checkpoints`) its checkpoints
    in `out`. `extra`: more flags of `run`."""

    def __init__(self, state: Path, out: Path, *extra: str, checkpoints: bool = False) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.log = out / "bridge.err"
        self.traces = out / "traces.jsonl"
        self._argv = [
            *("run", "--session-state", str(state), "--prometheus-port", "0"),
            *("--poll-interval", "0.1", "--rescan-interval", "0.3", "--idle-timeout", "600"),
            *("--traces-file", str(self.traces)),
            *(("--state-dir", str(out)) if checkpoints else ("--no-checkpoints",)),
            *extra,
        ]
        self._starts = 0
        self.restart()

    def restart(self) -> None:
        """Start `run` (again: its log appended, its checkpoints read); wait for its port."""
        self.process = processes.start_bridge(
            self._argv, log=self.log, stdout=self.out / "bridge.out", append=True
        )
        self._starts += 1
        ports = self.wait(
            "run serves /metrics",
            lambda: _SERVING.findall(self._log())[self._starts - 1 :],
        )
        self.port = int(ports[0])

    def kill(self) -> None:
        """SIGKILL: nothing flushed, nothing saved."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        processes.terminate(self.process, 20)

    def _log(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def scrape(self) -> Scrape:
        return scrape_metrics(self.target)

    def wait(self, what: str, check: Callable[[], _T | None], shown: Callable[[], str] = str) -> _T:
        """Wait until `check()` gives something true; that. Fails, saying `what` (and `shown()`
        and the bridge's log), after DEADLINE or when run exits."""
        deadline = time.monotonic() + DEADLINE
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"otel-bridge run exited:\n{self._log()[-3000:]}")
            found = check()
            if found:
                return found
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"never: {what}\n{shown()}\n--- bridge log:\n{self._log()[-3000:]}"
                )
            time.sleep(0.2)

    def until(self, what: str, check: Callable[[Scrape], bool]) -> Scrape:
        """Scrape until `check` holds; the scrape. Fails (saying `what`) after DEADLINE."""
        last: list[Scrape] = []

        def attempt() -> Scrape | None:
            try:
                scrape = self.scrape()
            except OSError:  # urllib's URLError too
                return None
            last[:] = [scrape]
            return scrape if check(scrape) else None

        return self.wait(what, attempt, lambda: last[0].lines() if last else "(no scrape)")

    def expect(self, what: str, want: dict[str, float]) -> Scrape:
        """Scrape until every series of `want` has its value (see `gauges`)."""
        return self.until(what, lambda scrape: gauges(scrape, want))


_SELECTOR = re.compile(r"^(\w+)(?:\{(.*)\})?$")


def value(scrape: Scrape, selector: str) -> float:
    """The value of `selector` (`name` or `name{label="value",...}`, summed over the series it
    matches); NaN when no series matches (never equal to anything)."""
    found = _SELECTOR.match(selector)
    assert found, selector
    labels = dict(re.findall(r'(\w+)="([^"]*)"', found.group(2) or ""))
    total = scrape.value(found.group(1), **labels)
    return math.nan if total is None else total


def gauges(scrape: Scrape, want: dict[str, float]) -> bool:
    """Every series of `want` (selector -> value) has its value in the scrape."""
    return all(value(scrape, selector) == expected for selector, expected in want.items())
