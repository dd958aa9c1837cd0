"""Running helm v4 (scripts/build_kube_parts.sh builds it) on deploy/helm/otel-bridge for the
chart's tests: a helm whose configuration, cache and data are in a directory of the test (the
user's are never read), the chart rendered with given values, and what the rendered objects
are made of."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests import goparts, paths

CHART = paths.REPO / "deploy" / "helm" / "otel-bridge"
ALERTS = paths.REPO / "deploy" / "prometheus" / "alerts.yml"
CONFIG_FILE = "/etc/otel-bridge/otel-bridge.toml"
RELEASE = "bridge"
#: The values that turn on every optional object.
EVERYTHING: dict[str, Any] = {
    "serviceMonitor": {"enabled": True},
    "podMonitor": {"enabled": True},
    "prometheusRule": {"enabled": True},
    "dashboards": {"enabled": True},
}
MODES = ("daemonset", "sidecar")
#: The prometheus-operator CRDs (files of scripts/build_kube_parts.sh's copy) of the chart's kinds.
CRD_FILES = ("servicemonitors", "podmonitors", "prometheusrules")


class _CRDLoader(yaml.SafeLoader):
    """PyYAML's safe loader, which also reads a plain `=` (YAML 1.1's value tag, an enum
    member in the CRDs) as the string it is."""


_CRDLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: node.value)


def chart_crds() -> list[dict[str, Any]]:
    """The CustomResourceDefinitions of the ServiceMonitor, PodMonitor and PrometheusRule."""
    return [
        yaml.load(path.read_text(), Loader=_CRDLoader)
        for path in goparts.prometheus_operator_crds()
        if path.stem.endswith(CRD_FILES)
    ]


def kube_versions() -> tuple[str, str]:
    """The oldest and newest minor the chart claims (Chart.yaml's kubeVersion), as x.y.0."""
    claim = yaml.safe_load((CHART / "Chart.yaml").read_text())["kubeVersion"]
    match = re.fullmatch(r">=1\.(\d+)\.0-0 <1\.(\d+)\.0-0", claim)
    assert match, claim
    return f"1.{match[1]}.0", f"1.{int(match[2]) - 1}.0"


def helm_env(home: Path, kubeconfig: Path | None = None) -> dict[str, str]:
    """helm's environment: its homes under `home`, and a kubeconfig only when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELM_", "KUBE"))}
    env.update(
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
        KUBECONFIG=str(kubeconfig or home / "no-kubeconfig"),
    )
    return env


def helm(
    home: Path, *args: str, kubeconfig: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`helm ARGS...`, its output captured; never checked (the caller asserts)."""
    return subprocess.run(
        [str(goparts.helm_binary()), *args],
        env=helm_env(home, kubeconfig),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def values_file(home: Path, values: Mapping[str, Any]) -> Path:
    """The values as a file for --values (JSON is YAML)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / f"values-{len(list(home.glob('values-*')))}.yaml"
    path.write_text(json.dumps(values))
    return path


def template(
    home: Path,
    values: Mapping[str, Any] | None = None,
    *,
    kube_version: str | None = None,
    extra: Sequence[str] = (),
    chart: Path = CHART,
) -> subprocess.CompletedProcess[str]:
    args = ["template", RELEASE, str(chart), "--namespace", "agents"]
    if values:
        args += ["--values", str(values_file(home, values))]
    if kube_version:
        args += ["--kube-version", kube_version]
    return helm(home, *args, *extra)


def render(
    home: Path,
    values: Mapping[str, Any] | None = None,
    *,
    kube_version: str | None = None,
    chart: Path = CHART,
) -> list[dict[str, Any]]:
    """The objects `helm template` makes with these values."""
    done = template(home, values, kube_version=kube_version, chart=chart)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def by_kind(objects: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: Sequence[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(objects, kind)
    assert len(found) == 1, f"{len(found)} {kind}s"
    return found[0]


def pod_spec(workload: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def long_running(spec: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The containers that run as long as the pod: containers and native sidecars."""
    yield from spec["containers"]
    yield from (c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always")


def bridge(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The one container of the workload that runs `otel-bridge run`."""
    (found,) = [c for c in long_running(pod_spec(workload)) if c.get("args", [])[:1] == ["run"]]
    return found


def volume(spec: Mapping[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(v for v in spec["volumes"] if v["name"] == name)
    return found


def mount(container: Mapping[str, Any], path: str) -> dict[str, Any]:
    found: dict[str, Any] = next(m for m in container["volumeMounts"] if m["mountPath"] == path)
    return found


def config_text(objects: Sequence[dict[str, Any]], workload: Mapping[str, Any]) -> str:
    """otel-bridge.toml as the workload's bridge reads it: from the ConfigMap it mounts."""
    container = bridge(workload)
    source = volume(pod_spec(workload), mount(container, "/etc/otel-bridge")["name"])
    name = source["configMap"]["name"]
    (config_map,) = [o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == name]
    text: str = config_map["data"]["otel-bridge.toml"]
    return text
