"""The Helm chart installed for real: `helm install` of each mode, with every optional object
on, into a real kube-apiserver (with its etcd; both built from the Go module proxy by
scripts/build_kube_parts.sh), the prometheus-operator CRDs applied first; then `helm upgrade`
with a changed config, and `helm uninstall`.

The server's own validation must accept every object: helm v4 applies them server-side, and
each object read back from the server holds every field the chart rendered (a field the API
does not know would be refused, or dropped and missed here). No pod runs (there is no
kubelet): tests/integration/deploy/test_deploy_helm_pods.py runs the rendered pods with podman.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import goparts
from tests.integration.deploy.helm_chart import (
    CHART,
    EVERYTHING,
    MODES,
    chart_crds,
    helm,
    values_file,
)

#: Where each kind lives in the API.
PATHS = {
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Service": "/api/v1/namespaces/{ns}/services",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "ServiceMonitor": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/servicemonitors",
    "PodMonitor": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/podmonitors",
    "PrometheusRule": "/apis/monitoring.coreos.com/v1/namespaces/{ns}/prometheusrules",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[goparts.KubeAPIServer]:
    """One API server for the module, with the prometheus-operator CRDs of the chart's kinds."""
    server = goparts.KubeAPIServer(tmp_path_factory.mktemp("kube"))
    with server:
        kinds = set()
        for crd in chart_crds():
            server.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            kinds.add(crd["spec"]["names"]["kind"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # established: the kinds are served
            served = server.api("GET", "/apis/monitoring.coreos.com/v1") or {"resources": []}
            if kinds <= {r["kind"] for r in served["resources"]}:
                break
            time.sleep(0.2)
        else:
            raise TimeoutError(f"CRDs not served: {kinds}")
        yield server


def helm_in(cluster: goparts.KubeAPIServer, home: Path, *args: str) -> tuple[int, str]:
    done = helm(home, *args, kubeconfig=cluster.kubeconfig)
    return done.returncode, done.stdout + done.stderr


def manifest(cluster: goparts.KubeAPIServer, home: Path, release: str, ns: str) -> list[Any]:
    code, out = helm_in(cluster, home, "get", "manifest", release, "--namespace", ns)
    assert code == 0, out
    return [doc for doc in yaml.safe_load_all(out) if doc]


def holds(stored: Any, sent: Any, where: str = "") -> list[str]:
    """Where the server's copy lacks or differs from what was sent (it may add defaults)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [where]
        return [m for k, v in sent.items() for m in holds(stored.get(k), v, f"{where}.{k}")]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [where]
        return [
            m
            for i, (a, b) in enumerate(zip(stored, sent, strict=True))
            for m in holds(a, b, f"{where}[{i}]")
        ]
    return (
        [] if stored == sent or str(stored) == str(sent) else [f"{where}: {stored!r} != {sent!r}"]
    )


def stored(cluster: goparts.KubeAPIServer, item: dict[str, Any], ns: str) -> Any:
    path = PATHS[item["kind"]].format(ns=ns) + "/" + item["metadata"]["name"]
    return cluster.api("GET", path)


@pytest.mark.parametrize("mode", MODES)
def test_helm_install_puts_every_object_in_the_api_server(
    cluster: goparts.KubeAPIServer, tmp_path: Path, mode: str
) -> None:
    ns = f"otel-bridge-{mode}"
    values = values_file(tmp_path, {"mode": mode, **EVERYTHING})
    code, out = helm_in(
        cluster, tmp_path, "install", "bridge", str(CHART), "--namespace", ns,
        "--create-namespace", "--values", str(values),
    )  # fmt: skip
    assert code == 0, out
    assert "STATUS: deployed" in out and f"Mode {mode}" in out  # NOTES.txt
    objects = manifest(cluster, tmp_path, "bridge", ns)
    kinds = sorted(item["kind"] for item in objects)
    workload = "DaemonSet" if mode == "daemonset" else "Deployment"
    assert {workload, "ConfigMap", "Secret", "Service", "ServiceMonitor", "PodMonitor",
            "PrometheusRule"} <= set(kinds)  # fmt: skip
    for item in objects:
        copy = stored(cluster, item, ns)
        assert copy is not None, f"{item['kind']} {item['metadata']['name']} is not stored"
        if item["kind"] == "Secret":  # stringData is written into data
            item = {k: v for k, v in item.items() if k != "stringData"}
        missing = holds(copy, item)
        assert not missing, f"{item['kind']}: the server's copy differs: {missing}"
    status = json.loads(helm_in(cluster, tmp_path, "status", "bridge", "-n", ns, "-o", "json")[1])
    assert status["info"]["status"] == "deployed"


def test_helm_upgrade_with_a_changed_config_rolls_the_pods(
    cluster: goparts.KubeAPIServer, tmp_path: Path
) -> None:
    ns = "otel-bridge-upgrade"
    args = ("--namespace", ns, "--create-namespace")
    code, out = helm_in(cluster, tmp_path, "install", "bridge", str(CHART), *args)
    assert code == 0, out
    path = "/apis/apps/v1/namespaces/otel-bridge-upgrade/daemonsets/bridge-otel-bridge"
    before = cluster.api("GET", path)
    values = values_file(tmp_path, {"config": {"export-timeout": 45}})
    code, out = helm_in(
        cluster, tmp_path, "upgrade", "bridge", str(CHART), *args, "--values", str(values)
    )
    assert code == 0, out
    after = cluster.api("GET", path)
    annotation = "checksum/config"
    old = before["spec"]["template"]["metadata"]["annotations"][annotation]
    new = after["spec"]["template"]["metadata"]["annotations"][annotation]
    assert old != new  # a new pod template: the DaemonSet controller replaces the pods
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert after["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 65
    config = cluster.api("GET", f"/api/v1/namespaces/{ns}/configmaps/bridge-otel-bridge")
    assert "export-timeout = 45" in config["data"]["otel-bridge.toml"]
    code, out = helm_in(cluster, tmp_path, "history", "bridge", "-n", ns, "-o", "json")
    assert [entry["revision"] for entry in json.loads(out)] == [1, 2]
    # an upgrade with a wrong value is refused by the schema, and nothing changes
    bad = values_file(tmp_path, {"config": {"export-timeout": "later"}})
    code, out = helm_in(
        cluster, tmp_path, "upgrade", "bridge", str(CHART), *args, "--values", str(bad)
    )
    assert code != 0 and "export-timeout" in out
    assert cluster.api("GET", path)["metadata"]["generation"] == after["metadata"]["generation"]
    # uninstall: the objects go
    code, out = helm_in(cluster, tmp_path, "uninstall", "bridge", "-n", ns)
    assert code == 0, out
    assert cluster.api("GET", path) is None
    assert cluster.api("GET", f"/api/v1/namespaces/{ns}/configmaps/bridge-otel-bridge") is None


def test_the_server_reports_a_version_the_chart_accepts(cluster: goparts.KubeAPIServer) -> None:
    """helm checks kubeVersion against the server's own version: the build stamps it."""
    version = cluster.api("GET", "/version")
    assert version["gitVersion"] == goparts.KUBE_VERSION
    claim = yaml.safe_load((CHART / "Chart.yaml").read_text())["kubeVersion"]
    assert claim.startswith(">=1.29.0-0") and int(version["minor"].rstrip("+")) >= 29


def test_the_server_validation_refuses_a_field_the_api_does_not_have(
    cluster: goparts.KubeAPIServer, tmp_path: Path
) -> None:
    """What the install above proves is real: an env entry with a field no EnvVar has gets
    through the values schema (extraEnv is a list of objects) but not the server."""
    values = values_file(tmp_path, {"extraEnv": [{"name": "A", "value": "b", "valeu": "c"}]})
    code, out = helm_in(
        cluster, tmp_path, "install", "bad", str(CHART), "--namespace", "otel-bridge-bad",
        "--create-namespace", "--values", str(values),
    )  # fmt: skip
    assert code != 0
    assert "valeu" in out and "not declared in schema" in out, out
