"""Every object the Helm chart renders, in each mode with every optional object on, validated
against the Kubernetes API's own schemas for the oldest and the newest minor version the chart
claims (Chart.yaml's kubeVersion), strictly (an unknown field is an error), with
kubernetes-validate (a test extra: the OpenAPI schemas of each Kubernetes release). The
prometheus-operator's objects (ServiceMonitor, PodMonitor, PrometheusRule) are validated
against the openAPIV3Schema of their CRDs, which scripts/build_kube_parts.sh copies out of the
operator's Go module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from tests.integration.deploy.helm_chart import EVERYTHING, MODES, chart_crds, kube_versions, render

CRD_GROUP = "monitoring.coreos.com"
PERSISTENT = {"daemonset": {"checkpoints": {"type": "persistentVolumeClaim"}}}


def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the openAPIV3Schema of each served version of the CRDs."""
    schemas = {}
    for crd in chart_crds():
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schemas[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return schemas


def validator(schema: dict[str, Any]) -> jsonschema.Draft7Validator:
    """A validator of an openAPIV3Schema (a JSON-schema dialect close to draft 7), the schema
    itself not checked: its patterns are Go's (RE2), which Python's re may not compile (only
    the patterns of fields the chart sets are ever used)."""
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("version", kube_versions())
@pytest.mark.parametrize("mode", MODES)
def test_every_rendered_object_is_valid_for_the_claimed_kubernetes_versions(
    tmp_path: Path, mode: str, version: str
) -> None:
    kinds = set()
    for values in ({"mode": mode, **EVERYTHING}, {"mode": mode, **PERSISTENT}):
        for item in render(tmp_path, values, kube_version=version):
            if item["apiVersion"].startswith(CRD_GROUP):
                continue  # not Kubernetes' own: below
            kinds.add(item["kind"])
            try:
                kubernetes_validate.validate(item, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                raise AssertionError(
                    f"{item['kind']} {item['metadata']['name']} (mode {mode}) is not valid "
                    f"for Kubernetes {version}: {exc.message} at {list(exc.path)}"
                ) from None
    workload = "DaemonSet" if mode == "daemonset" else "Deployment"
    assert {workload, "ConfigMap", "Secret", "Service"} <= kinds


def test_a_wrong_object_is_refused_by_the_validation() -> None:
    """The validation above can fail: a container with a field the API does not have."""
    oldest, _ = kube_versions()
    bad = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x"},
        "spec": {"containers": [{"name": "x", "image": "x", "restartPolicyy": "Always"}]},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, oldest, strict=True)


@pytest.mark.parametrize("mode", MODES)
def test_the_prometheus_operator_objects_fit_their_crds(tmp_path: Path, mode: str) -> None:
    schemas = crd_schemas()
    found = set()
    for item in render(tmp_path, {"mode": mode, **EVERYTHING}):
        if not item["apiVersion"].startswith(CRD_GROUP):
            continue
        errors = list(validator(schemas[(item["apiVersion"], item["kind"])]).iter_errors(item))
        assert not errors, [f"{item['kind']}: {e.message} at {list(e.path)}" for e in errors]
        found.add(item["kind"])
    assert found == {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
    # ...and a field the CRD does not know is refused (its schemas are not open)
    monitor = next(i for i in render(tmp_path, EVERYTHING) if i["kind"] == "ServiceMonitor")
    monitor["spec"]["endpoints"][0]["interval"] = 15
    errors = validator(schemas[(monitor["apiVersion"], "ServiceMonitor")]).iter_errors(monitor)
    assert [list(e.path) for e in errors] == [["spec", "endpoints", 0, "interval"]]
