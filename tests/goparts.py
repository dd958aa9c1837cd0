"""The Go programs some tests run for real, and the servers they start from them.

Jaeger v2 (its all-in-one, github.com/jaegertracing/jaeger/cmd/jaeger) and an OpenTelemetry
Collector built with the Collector's builder from deploy/otelcol/builder-config.yaml have no
Python or Debian package: scripts/build_test_parts.sh (which scripts/test.sh runs, so CI has
them) builds them from the Go module proxy into a cache outside the repository. The functions
here find them at the same paths (or at $OTEL_BRIDGE_JAEGER / $OTEL_BRIDGE_OTELCOL), and a test
that needs one skips, saying how to build it, only when it is genuinely absent; under CI
(CI=true), where scripts/test.sh has built them, their absence fails instead.

helm v4, etcd and kube-apiserver (the Helm chart's tests: tests/integration/deploy/
test_deploy_helm*.py) and the prometheus-operator CRDs come from scripts/build_kube_parts.sh
(scripts/test.sh runs it too), into the same cache, found the same way ($OTEL_BRIDGE_HELM,
$OTEL_BRIDGE_ETCD, $OTEL_BRIDGE_KUBE_APISERVER override them).

Every server is started on 127.0.0.1 with free ports, in a session of its own, and stopped by
its process id (SIGTERM, then SIGKILL): never left running.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.processes import log_tail, terminate
from tests.prometheus import free_port

__all__ = [
    "COLLECTOR_VERSION",
    "ETCD_VERSION",
    "HELM_VERSION",
    "JAEGER_VERSION",
    "KUBE_VERSION",
    "PROM_OPERATOR_VERSION",
    "Collector",
    "Jaeger",
    "KubeAPIServer",
    "etcd_binary",
    "helm_binary",
    "jaeger_binary",
    "kube_apiserver_binary",
    "otelcol_binary",
    "prometheus_operator_crds",
]

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "deploy" / "otelcol" / "builder-config.yaml"
BUILD_SCRIPT = ROOT / "scripts" / "build_test_parts.sh"
KUBE_BUILD_SCRIPT = ROOT / "scripts" / "build_kube_parts.sh"
HOST = "127.0.0.1"

# Keep in step with scripts/build_test_parts.sh (tests/integration/test_gateway.py checks that
# they agree).
JAEGER_VERSION = "v1.76.0"
COLLECTOR_VERSION = "v0.161.0"

# Keep in step with scripts/build_kube_parts.sh (tests/unit/deploy/test_helm_chart.py checks
# that they agree).
HELM_VERSION = "v4.3.2"
ETCD_VERSION = "v3.6.16"
KUBE_VERSION = "v1.34.4"
PROM_OPERATOR_VERSION = "v0.85.0"

_BUILD_HINT = "build it with `bash scripts/build_test_parts.sh` (Go and the Go module proxy)"
_KUBE_HINT = "build it with `bash scripts/build_kube_parts.sh` (Go and the Go module proxy)"


# Read when this module is imported (at collection): tests/conftest.py strips every OTEL_*
# variable from the environment of each test, these included.
_OVERRIDES = {
    name: os.environ.get(name, "")
    for name in (
        "OTEL_BRIDGE_TEST_PARTS",
        "OTEL_BRIDGE_JAEGER",
        "OTEL_BRIDGE_OTELCOL",
        "OTEL_BRIDGE_HELM",
        "OTEL_BRIDGE_ETCD",
        "OTEL_BRIDGE_KUBE_APISERVER",
    )
}


def cache_dir() -> Path:
    """Where scripts/build_test_parts.sh puts what it builds."""
    explicit = _OVERRIDES["OTEL_BRIDGE_TEST_PARTS"]
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "otel-bridge" / "test-parts"


def _existing(env_name: str, default: Path, what: str, hint: str = _BUILD_HINT) -> Path:
    path = Path(_OVERRIDES.get(env_name) or default)
    if not os.access(path, os.X_OK):
        message = f"{what} is not built ({path} is missing): {hint}"
        if os.environ.get("CI") == "true":  # CI builds it (scripts/test.sh): never skip there
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


def jaeger_binary() -> Path:
    """Jaeger v2's all-in-one, or a skip that says how to build it."""
    default = cache_dir() / f"jaeger-{JAEGER_VERSION}" / "jaeger"
    return _existing("OTEL_BRIDGE_JAEGER", default, f"Jaeger {JAEGER_VERSION}")


def otelcol_binary() -> Path:
    """The Collector built from deploy/otelcol/builder-config.yaml (its directory is named after
    a hash of the manifest, as in the build script), or a skip that says how to build it."""
    digest = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()[:12]
    default = cache_dir() / f"otelcol-{COLLECTOR_VERSION}-{digest}" / "otelcol-bridge"
    return _existing("OTEL_BRIDGE_OTELCOL", default, f"The Collector ({COLLECTOR_VERSION})")


def helm_binary() -> Path:
    """helm v4, built by scripts/build_kube_parts.sh, or a skip that says how to build it."""
    default = cache_dir() / f"helm-{HELM_VERSION}" / "helm"
    return _existing("OTEL_BRIDGE_HELM", default, f"helm {HELM_VERSION}", _KUBE_HINT)


def etcd_binary() -> Path:
    """etcd for the API server, built by scripts/build_kube_parts.sh, or a skip."""
    default = cache_dir() / f"etcd-{ETCD_VERSION}" / "etcd"
    return _existing("OTEL_BRIDGE_ETCD", default, f"etcd {ETCD_VERSION}", _KUBE_HINT)


def kube_apiserver_binary() -> Path:
    """kube-apiserver, built by scripts/build_kube_parts.sh, or a skip."""
    default = cache_dir() / f"kube-apiserver-{KUBE_VERSION}" / "kube-apiserver"
    return _existing(
        "OTEL_BRIDGE_KUBE_APISERVER", default, f"kube-apiserver {KUBE_VERSION}", _KUBE_HINT
    )


def prometheus_operator_crds() -> list[Path]:
    """The prometheus-operator's CRD files, copied out of its Go module by
    scripts/build_kube_parts.sh, or a skip."""
    directory = cache_dir() / f"prometheus-operator-crd-{PROM_OPERATOR_VERSION}"
    if not (directory / ".done").is_file():
        message = f"the prometheus-operator CRDs are not there ({directory}): {_KUBE_HINT}"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return sorted(directory.glob("*.yaml"))


def _get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


class _Server:
    """A program started in a session of its own, its output in a log file."""

    name = "server"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.log_path = workdir / f"{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def _start(self, args: Sequence[str], env: Mapping[str, str], ready_url: str) -> None:
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                list(args),
                cwd=self.workdir,
                env=dict(env),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            self._wait_ready(ready_url, timeout=30.0)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, url: str, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                _get(url, timeout=1.0)
                return
            except (OSError, urllib.error.URLError):  # not listening, or not ready yet
                time.sleep(0.1)
        raise TimeoutError(f"{self.name} not ready after {timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM by process id (the process group it leads), then SIGKILL."""
        process, self.process = self.process, None
        terminate(process, 10, group=True)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)


class Jaeger(_Server):
    """Jaeger v2 all-in-one with in-memory storage: OTLP in, the query API out.

    Jaeger v2 is a Collector distribution that takes a Collector configuration; this one is
    cut down from cmd/jaeger/internal/all-in-one.yaml of jaeger v1.76.0: the OTLP receiver, the
    `jaeger_storage` extension with a `memory` backend, the `jaeger_storage_exporter`, and the
    `jaeger_query` extension (UI, /api/traces/{id} and /api/v3/traces/{id}) on `http`; every
    listener on 127.0.0.1 with a free port, no telemetry listener (metrics level none), and no
    traces of its own. `max_clock_skew_adjust: 0s` so that the API gives the times as sent.
    The UI is not in the Go module (its assets are embedded only in release builds: the
    binary built here serves a placeholder page), but its API is.
    """

    name = "jaeger"

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.otlp_grpc_port = free_port()
        self.otlp_http_port = free_port()
        self.query_port = free_port()
        self.query_grpc_port = free_port()

    @property
    def otlp_grpc(self) -> str:
        """host:port of the OTLP/gRPC receiver."""
        return f"{HOST}:{self.otlp_grpc_port}"

    @property
    def otlp_http_url(self) -> str:
        return f"http://{HOST}:{self.otlp_http_port}"

    @property
    def url(self) -> str:
        """The UI and the query API."""
        return f"http://{HOST}:{self.query_port}"

    def config(self) -> dict[str, Any]:
        return {
            "service": {
                "extensions": ["jaeger_storage", "jaeger_query"],
                "pipelines": {
                    "traces": {
                        "receivers": ["otlp"],
                        "processors": [],
                        "exporters": ["jaeger_storage_exporter"],
                    }
                },
                "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "info"}},
            },
            "extensions": {
                "jaeger_storage": {"backends": {"memstore": {"memory": {"max_traces": 100000}}}},
                "jaeger_query": {
                    "storage": {"traces": "memstore"},
                    "max_clock_skew_adjust": "0s",
                    # on by default in v2 (extension/jaegerquery/factory.go): Jaeger would send
                    # its own traces to the OTLP default, localhost:4317, someone else's port
                    "enable_tracing": False,
                    "http": {"endpoint": f"{HOST}:{self.query_port}"},
                    "grpc": {"endpoint": f"{HOST}:{self.query_grpc_port}"},
                },
            },
            "receivers": {
                "otlp": {
                    "protocols": {
                        "grpc": {"endpoint": self.otlp_grpc},
                        "http": {"endpoint": f"{HOST}:{self.otlp_http_port}"},
                    }
                }
            },
            "exporters": {"jaeger_storage_exporter": {"trace_storage": "memstore"}},
        }

    def start(self) -> Jaeger:
        binary = jaeger_binary()
        config = self.workdir / "jaeger.yaml"
        config.write_text(json.dumps(self.config(), indent=1))  # JSON is YAML
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        self._start([str(binary), "--config", f"file:{config}"], env, f"{self.url}/api/services")
        return self

    def __enter__(self) -> Jaeger:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def api(self, path: str) -> Any:
        """GET a query API path; its JSON, or None for a 404 (no such trace yet)."""
        try:
            return json.loads(_get(self.url + path))
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 404:
                return None
            raise

    def trace(self, trace_id: str) -> list[dict[str, Any]]:
        """The spans of one trace as the UI reads them: GET /api/traces/{id} (Jaeger's model:
        operationName, references, startTime and duration in microseconds, tags)."""
        answer = self.api(f"/api/traces/{trace_id}")
        if not answer or not answer.get("data"):
            return []
        return list(answer["data"][0]["spans"])

    def otlp_trace(self, trace_id: str) -> list[dict[str, Any]]:
        """The spans of one trace as OTLP JSON: GET /api/v3/traces/{id} (nanosecond times)."""
        answer = self.api(f"/api/v3/traces/{trace_id}")
        if not answer:
            return []
        spans: list[dict[str, Any]] = []
        for resource_spans in answer.get("result", {}).get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                spans += scope_spans.get("spans", [])
        return spans

    def wait_for_trace(
        self, trace_id: str, count: int, timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        """The trace's OTLP spans once it has `count` of them (Jaeger stores as they come)."""
        deadline = time.monotonic() + timeout
        spans: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            spans = self.otlp_trace(trace_id)
            if len(spans) >= count:
                return spans
            time.sleep(0.2)
        raise TimeoutError(
            f"trace {trace_id}: {len(spans)} of {count} spans in Jaeger after {timeout}s:\n"
            f"{self.log_tail()}"
        )


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


class Collector(_Server):
    """The Collector built from deploy/otelcol/builder-config.yaml, running one configuration.

    Args:
        config: the configuration file (a shipped one: its settings come from `env`).
        workdir: an empty directory for the log and the persistent queue.
        env: OTELCOL_* settings; OTELCOL_LISTEN_HOST, the ports, the storage directory are
            given here (127.0.0.1, free ports, under `workdir`).
    """

    def __init__(
        self, config: Path, workdir: Path, env: Mapping[str, str], name: str = "otelcol"
    ) -> None:
        self.name = name
        super().__init__(workdir)
        self.config = config
        self.grpc_port = free_port()
        self.http_port = free_port()
        self.health_port = free_port()
        self.metrics_port = free_port()
        storage = workdir / "storage"
        storage.mkdir(exist_ok=True)
        self.env = {
            "OTELCOL_LISTEN_HOST": HOST,
            "OTELCOL_OTLP_GRPC_PORT": str(self.grpc_port),
            "OTELCOL_OTLP_HTTP_PORT": str(self.http_port),
            "OTELCOL_HEALTH_PORT": str(self.health_port),
            "OTELCOL_METRICS_PORT": str(self.metrics_port),
            "OTELCOL_STORAGE_DIR": str(storage),
            **env,
        }

    @property
    def grpc_endpoint(self) -> str:
        return f"{HOST}:{self.grpc_port}"

    def start(self) -> Collector:
        binary = otelcol_binary()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OTELCOL_"))}
        env.update(self.env)
        # the health_check extension answers 200 on / once the pipelines are up
        self._start(
            [str(binary), "--config", str(self.config)], env, f"http://{HOST}:{self.health_port}/"
        )
        return self

    def metrics(self) -> dict[str, float]:
        """The Collector's own metrics (Prometheus text on OTELCOL_METRICS_PORT), each series
        summed over its labels: name -> value."""
        text = _get(f"http://{HOST}:{self.metrics_port}/metrics").decode()
        totals: dict[str, float] = {}
        for line in text.splitlines():
            match = _SAMPLE.match(line)
            if match:
                name, _labels, value = match.groups()
                totals[name] = totals.get(name, 0.0) + float(value)
        return totals

    def metric_series(self, prefix: str) -> dict[str, float]:
        """Every series whose name starts with `prefix`, by name and labels."""
        text = _get(f"http://{HOST}:{self.metrics_port}/metrics").decode()
        series: dict[str, float] = {}
        for line in text.splitlines():
            match = _SAMPLE.match(line)
            if match and match.group(1).startswith(prefix):
                series[match.group(1) + (match.group(2) or "")] = float(match.group(3))
        return series


def validate(config: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """`otelcol validate --config FILE`: parse and check a configuration without running it."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OTELCOL_"))}
    full.update(env)
    return subprocess.run(
        [str(otelcol_binary()), "validate", "--config", str(config)],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@contextmanager
def running(*servers: _Server) -> Iterator[None]:
    """Stop every server given (started or not) on the way out, the last first."""
    try:
        yield
    finally:
        for server in reversed(servers):
            server.stop()


class KubeAPIError(RuntimeError):
    """An API call answered with an error status (`code`)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class KubeAPIServer:
    """A Kubernetes API server without nodes: etcd and kube-apiserver (scripts/build_kube_parts.sh
    builds both from the Go module proxy) on free 127.0.0.1 ports, in `workdir`.

    kube-apiserver serves TLS with a self-signed certificate for 127.0.0.1 (openssl, which also
    makes the service-account signing key), authenticates one bearer token from a token file
    (user `admin` in group system:masters: every right) and keeps its objects in the etcd
    started beside it. No controller, scheduler or kubelet runs: objects are stored and
    validated, never acted on. `kubeconfig` is a file for helm (or kubectl) that trusts the
    certificate; `api()` asks the API with the token.
    """

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.etcd_port, self.peer_port, self.port = free_port(), free_port(), free_port()
        self.token = hashlib.sha256(os.urandom(16)).hexdigest()
        self.cert, self.key = workdir / "apiserver.crt", workdir / "apiserver.key"
        self.kubeconfig = workdir / "kubeconfig"
        self._processes: list[tuple[str, subprocess.Popen[bytes]]] = []

    @property
    def url(self) -> str:
        return f"https://{HOST}:{self.port}"

    def _spawn(self, name: str, args: Sequence[str]) -> None:
        with (self.workdir / f"{name}.log").open("wb") as log:
            process = subprocess.Popen(
                list(args),
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._processes.append((name, process))

    def log_tail(self, name: str, lines: int = 40) -> str:
        return log_tail(self.workdir / f"{name}.log", lines)

    def _wait(self, name: str, ready: Any, timeout: float = 60.0) -> None:
        process = dict(self._processes)[name]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with {process.returncode}:\n{self.log_tail(name)}"
                )
            try:
                if ready():
                    return
            except (OSError, urllib.error.URLError, KubeAPIError):  # not listening, not ready
                pass
            time.sleep(0.2)
        raise TimeoutError(f"{name} not ready after {timeout}s:\n{self.log_tail(name)}")

    def start(self) -> KubeAPIServer:
        etcd, apiserver = etcd_binary(), kube_apiserver_binary()
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", f"/CN={HOST}", "-addext", f"subjectAltName=IP:{HOST}",
             "-keyout", str(self.key), "-out", str(self.cert)],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        tokens = self.workdir / "tokens.csv"
        tokens.write_text(f'{self.token},admin,admin,"system:masters"\n')
        tokens.chmod(0o600)
        etcd_url = f"http://{HOST}:{self.etcd_port}"
        peer_url = f"http://{HOST}:{self.peer_port}"
        try:
            self._spawn("etcd", [
                str(etcd), "--name", "default", "--data-dir", str(self.workdir / "etcd"),
                "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                "--initial-cluster", f"default={peer_url}", "--log-level", "warn",
            ])  # fmt: skip
            self._wait("etcd", lambda: b"true" in _get(f"{etcd_url}/health", timeout=1.0))
            self._spawn("kube-apiserver", [
                str(apiserver), "--etcd-servers", etcd_url,
                "--bind-address", HOST, "--advertise-address", HOST,
                "--secure-port", str(self.port),
                "--tls-cert-file", str(self.cert), "--tls-private-key-file", str(self.key),
                "--token-auth-file", str(tokens), "--authorization-mode", "RBAC",
                "--service-account-issuer", "https://kubernetes.default.svc",
                "--service-account-key-file", str(self.key),
                "--service-account-signing-key-file", str(self.key),
                "--service-cluster-ip-range", "10.96.0.0/24",
                "--enable-priority-and-fairness=false",
            ])  # fmt: skip
            self._wait("kube-apiserver", lambda: self.api("GET", "/readyz") == "ok")
        except BaseException:
            self.stop()
            raise
        self.kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "test",
                    "clusters": [
                        {
                            "name": "test",
                            "cluster": {
                                "server": self.url,
                                "certificate-authority": str(self.cert),
                            },
                        }
                    ],
                    "users": [{"name": "admin", "user": {"token": self.token}}],
                    "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
                }
            )
        )
        self.kubeconfig.chmod(0o600)
        return self

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """One API call with the token: the answer's JSON (or text), None for a 404."""
        import ssl

        context = ssl.create_default_context(cafile=str(self.cert))
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode()
            exc.close()
            if exc.code == 404:
                return None
            raise KubeAPIError(exc.code, f"{method} {path}: {exc.code} {detail}") from None
        try:
            return json.loads(text)
        except ValueError:
            return text

    def stop(self) -> None:
        """SIGTERM to each process group by id, the API server first, then SIGKILL."""
        processes, self._processes = self._processes, []
        for _, process in reversed(processes):
            terminate(process, 10, group=True)

    def __enter__(self) -> KubeAPIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
