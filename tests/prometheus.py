"""A real Prometheus server for tests, started on 127.0.0.1 and stopped by its process id.

Why a real one: dashboards and alert rules are PromQL, and the only honest check that a query
works against what the bridge exposes is to scrape the bridge with Prometheus and run it. The
Debian package `prometheus` gives the server (`/usr/bin/prometheus`) and `promtool`; apt does not
start it for us (and we would not want the system service): each test run starts its own, with a
temporary TSDB directory, a generated configuration and a free port on 127.0.0.1.

Usage, in pytest (import the fixture into the test module, as conftest.py does for the OTLP
receiver)::

    from tests.prometheus import prometheus_factory  # noqa: F401

    def test_something(prometheus_factory):
        prom = prometheus_factory(["127.0.0.1:9464"], rule_files=[ALERTS])
        prom.wait_for("copilot_tasks_total", timeout=20)
        assert prom.query("up") ...

Nothing is skipped: when the binaries are missing the fixture fails and says how to install them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.processes import log_tail, terminate

__all__ = [
    "JOB",
    "Prometheus",
    "PrometheusQueryError",
    "core_expression",
    "find_binary",
    "free_port",
    "grafana_to_promql",
    "prometheus_factory",
    "promql_label_names",
    "promql_metric_names",
    "promql_selectors",
]

JOB = "otel-bridge"
_HOST = "127.0.0.1"
_INSTALL_HINT = (
    "it is installed by the Debian package `prometheus`: run `apt-get install -y prometheus` "
    "(apt does not start the service; the tests start their own on 127.0.0.1)"
)


class PrometheusQueryError(RuntimeError):
    """Prometheus refused a query (bad PromQL, or the server failed)."""


def find_binary(name: str) -> str:
    """The path of `prometheus` or `promtool`, or a test failure that says how to install it."""
    path = shutil.which(name) or (
        f"/usr/bin/{name}" if os.access(f"/usr/bin/{name}", os.X_OK) else None
    )
    if path is None:
        pytest.fail(f"`{name}` not found on PATH nor in /usr/bin: {_INSTALL_HINT}", pytrace=False)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _yaml_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"  # JSON strings are YAML


class Prometheus:
    """One Prometheus process scraping `targets` every second under job `otel-bridge`.

    Args:
        targets: `host:port` of each /metrics endpoint to scrape.
        workdir: an empty directory for the configuration, the TSDB and the log.
        rule_files: rule files to load (alerting and recording rules), absolute paths.
        binary: the prometheus executable.
    """

    def __init__(
        self,
        targets: Sequence[str],
        workdir: Path,
        rule_files: Sequence[Path | str] = (),
        binary: str = "/usr/bin/prometheus",
        scrape_interval: str = "1s",
    ) -> None:
        self.targets = list(targets)
        self.workdir = workdir
        self.rule_files = [str(Path(f).resolve()) for f in rule_files]
        self.binary = binary
        self.scrape_interval = scrape_interval
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.config_path = workdir / "prometheus.yml"
        self.log_path = workdir / "prometheus.log"

    # ------------------------------------------------------------------ lifecycle
    @property
    def url(self) -> str:
        return f"http://{_HOST}:{self.port}"

    def write_config(self) -> Path:
        lines = [
            "global:",
            f"  scrape_interval: {self.scrape_interval}",
            f"  evaluation_interval: {self.scrape_interval}",
            f"  scrape_timeout: {self.scrape_interval}",
        ]
        if self.rule_files:
            lines.append(f"rule_files: {_yaml_list(self.rule_files)}")
        lines += [
            "scrape_configs:",
            f"  - job_name: {JOB}",
            "    static_configs:",
            f"      - targets: {_yaml_list(self.targets)}",
        ]
        self.config_path.write_text("\n".join(lines) + "\n")
        return self.config_path

    def start(self, timeout: float = 20.0) -> Prometheus:
        """Start the server and wait until /-/ready answers 200."""
        self.write_config()
        tsdb = self.workdir / "tsdb"
        tsdb.mkdir(exist_ok=True)
        self.port = free_port()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    self.binary,
                    f"--config.file={self.config_path}",
                    f"--storage.tsdb.path={tsdb}",
                    f"--web.listen-address={_HOST}:{self.port}",
                    "--storage.tsdb.retention.time=1h",
                    "--log.level=warn",
                ],
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return self
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"prometheus not ready after {timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM the process we started (by its pid), SIGKILL it if it lingers."""
        process, self.process = self.process, None
        terminate(process)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ HTTP API
    def api(self, path: str, params: dict[str, str] | None = None) -> Any:
        """GET /api/v1/<path>; the `data` of a successful answer."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:  # 400/422/503 carry a JSON error body
            try:
                body = json.load(exc)
            except ValueError:
                raise PrometheusQueryError(f"{path}: HTTP {exc.code}") from exc
        if body.get("status") != "success":
            raise PrometheusQueryError(
                f"{params or path}: {body.get('errorType')}: {body.get('error')}"
            )
        return body["data"]

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """Run an instant query; the result as a list of {"metric": {...}, "value": [t, v]}
        (a scalar or string result becomes one entry with empty labels)."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self.api("query", params)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return list(data["result"])

    def wait_for(
        self,
        promql: str,
        timeout: float = 20.0,
        check: Callable[[list[dict[str, Any]]], bool] = bool,
    ) -> list[dict[str, Any]]:
        """Query until the result passes `check` (by default: is not empty); return it."""
        deadline = time.monotonic() + timeout
        result: list[dict[str, Any]] = []
        while True:
            result = self.query(promql)
            if check(result):
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"after {timeout}s {promql!r} still gives {result!r}; "
                    f"targets: {self.target_health()}\n{self.log_tail()}"
                )
            time.sleep(0.25)

    def target_health(self) -> list[tuple[str, str, str]]:
        """(scrape url, health, last error) of every active target."""
        data = self.api("targets")
        return [
            (t["scrapeUrl"], t["health"], t.get("lastError", "")) for t in data["activeTargets"]
        ]

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.api("alerts")["alerts"])


@pytest.fixture
def prometheus_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Prometheus]]:
    """Start real Prometheus servers on demand: `factory(targets, rule_files=())`.

    Every server started is stopped (by pid) at teardown."""
    binary = find_binary("prometheus")
    started: list[Prometheus] = []

    def start(targets: Sequence[str], rule_files: Sequence[Path | str] = ()) -> Prometheus:
        server = Prometheus(
            targets, tmp_path_factory.mktemp("prometheus"), rule_files, binary=binary
        )
        started.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in started:
            server.stop()


# ---------------------------------------------------------------------- PromQL text helpers
# Enough of PromQL's lexical structure to find metric and label names and top-level operators
# in the expressions of our own dashboards and rules (not a full parser).

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_IDENT = re.compile(r"(?<![\w.$:])([A-Za-z_:][\w:]*)\b(?!\s*\()")
_KEYWORDS = frozenset(
    {
        "and",
        "or",
        "unless",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "offset",
        "inf",
        "nan",
        "atan2",
        "start",
        "end",
    }
)
_GRAFANA_VARIABLE = re.compile(r"\$\{?(__rate_interval|__interval|__range)(?::\w+)?\}?")
#: a dashboard's own template variable (`$model`, `${repository}`, `${job:regex}`)
_TEMPLATE_VARIABLE = re.compile(r"\$\{?(?!__)(\w+)(?::\w+)?\}?")
_SET_OPERATOR = re.compile(r"\b(or|and|unless)\b")
_COMPARISON = re.compile(r"(==|!=|>=|<=|>|<)(\s*bool\b)?")


def grafana_to_promql(expr: str, window: str = "1m", all_value: str = ".*") -> str:
    """A dashboard query as Grafana sends it: the interval variables replaced by `window` and
    the dashboard's template variables by `all_value`, what they become with "All" selected
    (the dashboards' `allValue`; they are only used inside regex matchers, `label=~"$x"`)."""
    return _TEMPLATE_VARIABLE.sub(all_value, _GRAFANA_VARIABLE.sub(window, expr))


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _without_strings(expr: str) -> str:
    return _STRING.sub(_blank, expr)


def _names_only(expr: str) -> str:
    """`expr` with strings, matchers, ranges and grouping clauses blanked (same length)."""
    text = _without_strings(expr)
    for pattern in (_MATCHERS, _RANGE, _GROUPING):
        text = pattern.sub(_blank, text)
    return text


def promql_metric_names(expr: str) -> set[str]:
    """Names of the series an expression selects (`up`, `foo_total`, ...)."""
    return {name for name in _IDENT.findall(_names_only(expr)) if name.lower() not in _KEYWORDS}


def promql_selectors(expr: str) -> list[str]:
    """Every instant vector selector of an expression, with its matchers as written:
    `rate(foo_total{a="b"}[5m]) / up` -> `['foo_total{a="b"}', 'up']`."""
    blanked, plain = _names_only(expr), _without_strings(expr)
    selectors = []
    for match in _IDENT.finditer(blanked):
        if match.group(1).lower() in _KEYWORDS:
            continue
        after = match.end() + len(plain[match.end() :]) - len(plain[match.end() :].lstrip())
        if plain.startswith("{", after):
            selectors.append(match.group(1) + expr[after : plain.index("}", after) + 1])
        else:
            selectors.append(match.group(1))
    return selectors


def promql_label_names(expr: str) -> tuple[dict[str, set[str]], set[str]]:
    """Label names in matchers, per metric name (`''` for a bare `{...}`), and in grouping
    clauses (`by (...)`, `on (...)`, ...)."""
    text = _without_strings(_GRAFANA_VARIABLE.sub("1m", expr))
    matchers: dict[str, set[str]] = {}
    raw = _without_strings(expr)
    for match in re.finditer(r"([A-Za-z_:][\w:]*)?\s*\{([^{}]*)\}", raw):
        names = set(re.findall(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)", match.group(2)))
        matchers.setdefault(match.group(1) or "", set()).update(names)
    grouping: set[str] = set()
    for match in _GROUPING.finditer(text):
        grouping.update(n.strip() for n in match.group(2).split(",") if n.strip())
    return matchers, grouping


def _top_level(expr: str) -> list[bool]:
    """For each character: is it outside (), {}, [] and strings?"""
    depth = 0
    flags = []
    for char in _without_strings(expr):  # same length, strings blanked
        if char in "({[":
            depth += 1
        elif char in ")}]":
            depth -= 1
        flags.append(depth == 0 and char not in "({[)}]")
    return flags


def core_expression(expr: str) -> str:
    """The signal of an expression, without what may legitimately make it empty: the first
    operand of top-level `or`/`and`/`unless`, and of that the left side of a top-level
    comparison. `x > 0.5 and y >= 10` -> `x`; `sum(z) or vector(0)` -> `sum(z)`."""
    expr = expr.strip()
    flags = _top_level(expr)
    for match in _SET_OPERATOR.finditer(expr):
        if all(flags[match.start() : match.end()]):
            expr = expr[: match.start()].strip()
            break
    flags = _top_level(expr)
    for match in _COMPARISON.finditer(expr):
        if all(flags[match.start() : match.end()]):
            return expr[: match.start()].strip()
    return expr


@dataclass
class Scrape:
    """One /metrics answer of a bridge: (sample name, labels, value) of every sample, parsed by
    prometheus_client's own parser."""

    samples: list[tuple[str, dict[str, str], float]]
    text: str

    def _matching(self, name: str, labels: dict[str, str]) -> list[float]:
        return [
            value
            for sample, have, value in self.samples
            if sample == name and all(have.get(k) == v for k, v in labels.items())
        ]

    def value(self, name: str, **labels: str) -> float | None:
        """The sum of `name`'s samples whose labels include `labels`; None when none has."""
        found = self._matching(name, labels)
        return sum(found) if found else None

    def one(self, name: str, **labels: str) -> float | None:
        """The value of the one series of `name` whose labels include `labels`, or None."""
        found = self._matching(name, labels)
        assert len(found) <= 1, (name, labels, found)
        return found[0] if found else None

    def lines(self) -> str:
        """The running-now series, for a failure message."""
        shown = ("copilot_tasks_open", "copilot_tasks_waiting", "copilot_tasks_troubled")
        return "\n".join(line for line in self.text.splitlines() if line.startswith(shown))


def scrape_metrics(target: str, timeout: float = 10.0) -> Scrape:
    """GET http://`target`/metrics, parsed (raises OSError when nothing answers)."""
    with urllib.request.urlopen(f"http://{target}/metrics", timeout=timeout) as response:
        text = response.read().decode()
    samples = [
        (sample.name, dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]
    return Scrape(samples, text)
