"""The Helm chart (deploy/helm/otel-bridge) through helm v4 itself: `helm lint --strict`,
`helm template` of the default values and of each mode, what the rendered objects promise
(docs/deploy.md), the values schema refusing bad input at install time with a message that
names the value, the kubeVersion range, and `helm package`.

helm is built from the Go module proxy by scripts/build_kube_parts.sh (scripts/test.sh runs
it); without it these tests skip saying how to build it (and fail under CI).
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_bridge.cli._checks import prometheus_wanted
from otel_bridge.cli._config_file import tomllib  # the standard library's, or tomli on 3.10
from tests import paths
from tests.integration.deploy.helm_chart import (
    ALERTS,
    CHART,
    CONFIG_FILE,
    EVERYTHING,
    MODES,
    RELEASE,
    bridge,
    by_kind,
    config_text,
    helm,
    kube_versions,
    mount,
    one,
    pod_spec,
    render,
    template,
    volume,
)
from tests.integration.deploy.test_deploy_docker import bridge_args

METRICS_PORT = 9464


def run_args(objects: list[dict[str, Any]], workload: dict[str, Any], tmp: Path) -> Any:
    """The options the workload's bridge runs with, read by the CLI's own code from the
    command line and the ConfigMap's otel-bridge.toml."""
    container = bridge(workload)
    assert "command" not in container, "keep the image's ENTRYPOINT (otel-bridge)"
    config = tmp / f"otel-bridge-{len(list(tmp.glob('otel-bridge-*')))}.toml"
    config.write_text(config_text(objects, workload))
    return bridge_args(container["args"], {CONFIG_FILE: config})


def workload_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (workload,) = by_kind(objects, "DaemonSet") + by_kind(objects, "Deployment")
    return workload


# ---------------------------------------------------------------------- lint and package
@pytest.mark.parametrize("mode", MODES)
def test_helm_lint_strict_passes_for_each_mode_with_everything_on(
    tmp_path: Path, mode: str
) -> None:
    for values in ({"mode": mode}, {"mode": mode, **EVERYTHING}):
        path = tmp_path / f"{mode}-{len(values)}.json"
        path.write_text(json.dumps(values))
        for version in kube_versions():
            done = helm(
                tmp_path, "lint", "--strict", str(CHART), "--values", str(path),
                "--kube-version", version,
            )  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
            assert "0 chart(s) failed" in done.stdout


def test_helm_package_builds_the_chart_archive(tmp_path: Path) -> None:
    done = helm(tmp_path, "package", str(CHART), "--destination", str(tmp_path))
    assert done.returncode == 0, done.stderr
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    archive = tmp_path / f"otel-bridge-{chart['version']}.tgz"
    assert archive.is_file(), done.stdout
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    for name in ("Chart.yaml", "values.yaml", "values.schema.json", "README.md",
                 "templates/NOTES.txt", "templates/_helpers.tpl", "files/alerts.yml"):  # fmt: skip
        assert f"otel-bridge/{name}" in names, name
    assert any(n.startswith("otel-bridge/files/dashboards/") for n in names)
    # the archive renders as the directory does
    assert render(tmp_path, chart=archive) == render(tmp_path)


# ---------------------------------------------------------------------- the default values
def test_the_defaults_are_a_daemonset_with_its_config_secret_and_service(tmp_path: Path) -> None:
    objects = render(tmp_path)
    assert sorted(o["kind"] for o in objects) == [
        "ConfigMap", "DaemonSet", "Secret", "Service",
    ]  # fmt: skip
    for item in objects:
        labels = item["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/part-of"] == "otel-bridge"
    daemonset = one(objects, "DaemonSet")
    selector = daemonset["spec"]["selector"]["matchLabels"]
    assert selector.items() <= daemonset["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize("mode", MODES)
def test_every_bridge_runs_with_the_chart_config_read_by_the_cli(tmp_path: Path, mode: str) -> None:
    objects = render(tmp_path, {"mode": mode, "config": {"catch-up-minutes": 5, "shard": "1/2"}})
    workload = workload_of(objects)
    args = run_args(objects, workload, tmp_path)
    assert args.command == "run"
    assert args.session_state == [Path("/copilot/session-state")]
    assert args.state_dir == Path("/var/lib/otel-bridge") and not args.no_checkpoints
    assert (args.prometheus_host, args.prometheus_port) == ("0.0.0.0", METRICS_PORT)
    assert prometheus_wanted(args)
    assert args.export_timeout == 20 and args.catch_up_minutes == 5
    assert (args.shard.index, args.shard.count) == (1, 2)
    spec = pod_spec(workload)
    # the flush at SIGTERM fits in the grace period
    assert spec["terminationGracePeriodSeconds"] >= args.export_timeout + 10
    container = bridge(workload)
    assert mount(container, "/copilot")["readOnly"] is True
    assert mount(container, "/etc/otel-bridge")["readOnly"] is True
    assert not mount(container, "/var/lib/otel-bridge").get("readOnly", False)
    assert not spec.get("hostNetwork")
    assert all("hostPort" not in port for port in container["ports"])


@pytest.mark.parametrize("mode", MODES)
def test_a_changed_config_changes_the_pods_checksum(tmp_path: Path, mode: str) -> None:
    """The pods carry the config's checksum: `helm upgrade` with another config rolls them
    (the bridge reads its file at start only)."""

    def checksum_and_text(values: dict[str, Any]) -> tuple[str, str]:
        objects = render(tmp_path, {"mode": mode, **values})
        workload = workload_of(objects)
        annotations = workload["spec"]["template"]["metadata"]["annotations"]
        return annotations["checksum/config"], config_text(objects, workload)

    before, text = checksum_and_text({})
    assert before == hashlib.sha256(text.rstrip("\n").encode()).hexdigest()
    after, edited = checksum_and_text({"config": {"export-timeout": 25}})
    assert "export-timeout = 25" in edited and after != before
    # ...and the grace period follows export-timeout
    objects = render(tmp_path, {"mode": mode, "config": {"export-timeout": 90}})
    assert pod_spec(workload_of(objects))["terminationGracePeriodSeconds"] == 110


@pytest.mark.parametrize("mode", MODES)
def test_otlp_endpoint_and_headers_come_from_a_secret_only(tmp_path: Path, mode: str) -> None:
    token = "authorization=Bearer s3cr3t-t0ken"
    objects = render(tmp_path, {"mode": mode, "otlp": {"headers": token}})
    secret = one(objects, "Secret")
    assert secret["stringData"] == {"endpoint": "http://otel-collector:4318", "headers": token}
    workload = workload_of(objects)
    env = {e["name"]: e for e in bridge(workload)["env"]}
    for name, key in (("OTEL_EXPORTER_OTLP_ENDPOINT", "endpoint"),
                      ("OTEL_EXPORTER_OTLP_HEADERS", "headers")):  # fmt: skip
        assert "value" not in env[name]
        assert env[name]["valueFrom"]["secretKeyRef"] == {
            "name": secret["metadata"]["name"], "key": key, "optional": True,
        }  # fmt: skip
    # the token is nowhere but in the Secret
    others = [o for o in objects if o["kind"] != "Secret"]
    assert "s3cr3t" not in json.dumps(others)
    # a Secret of the user's instead
    objects = render(tmp_path, {"mode": mode, "otlp": {"existingSecret": "mine"}})
    assert not by_kind(objects, "Secret")
    env = {e["name"]: e for e in bridge(workload_of(objects))["env"]}
    assert env["OTEL_EXPORTER_OTLP_HEADERS"]["valueFrom"]["secretKeyRef"]["name"] == "mine"


@pytest.mark.parametrize("mode", MODES)
def test_the_node_name_is_on_every_span_and_series(tmp_path: Path, mode: str) -> None:
    objects = render(
        tmp_path, {"mode": mode, "resourceAttributes": {"deployment.environment": "prod"}}
    )
    env = bridge(workload_of(objects))["env"]
    names = [e["name"] for e in env]
    node = env[names.index("K8S_NODE_NAME")]
    assert node["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    attributes = env[names.index("OTEL_RESOURCE_ATTRIBUTES")]["value"]
    pairs = dict(pair.split("=", 1) for pair in attributes.split(","))
    assert pairs["k8s.node.name"] == "$(K8S_NODE_NAME)"
    assert pairs["deployment.environment"] == "prod"
    # $(VAR) refers only to variables set before it (Kubernetes' rule)
    defined: set[str] = set()
    for variable in env:
        for name in re.findall(r"\$\((\w+)\)", variable.get("value", "")):
            assert name in defined, f"{variable['name']} uses $({name}) before it is set"
        defined.add(variable["name"])


@pytest.mark.parametrize("mode", MODES)
def test_probes_resources_and_a_locked_down_security_context(tmp_path: Path, mode: str) -> None:
    objects = render(tmp_path, {"mode": mode})
    workload = workload_of(objects)
    spec = pod_spec(workload)
    container = bridge(workload)
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": 9464}
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert int(spec["securityContext"]["runAsUser"]) >= 1000
    assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert spec["automountServiceAccountToken"] is False
    for item in spec["containers"] + spec.get("initContainers", []):
        context = item["securityContext"]
        assert context["readOnlyRootFilesystem"] is True, item["name"]
        assert context["allowPrivilegeEscalation"] is False, item["name"]
        assert context["capabilities"]["drop"] == ["ALL"], item["name"]
        assert {"requests", "limits"} <= item["resources"].keys(), item["name"]
        if item["name"] == "state-dir-owner":  # one-shot: may chown the node's directory
            assert context["capabilities"]["add"] == ["CHOWN"]
        else:
            assert context["runAsNonRoot"] is True and not context["capabilities"].get("add")


def test_scheduling_values_reach_the_pods(tmp_path: Path) -> None:
    scheduling = {
        "priorityClassName": "system-node-critical",
        "tolerations": [{"operator": "Exists"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "agents", "operator": "In", "values": ["yes"]}]}]}}},
    }  # fmt: skip
    for mode in MODES:
        spec = pod_spec(workload_of(render(tmp_path, {"mode": mode, **scheduling})))
        for key, value in scheduling.items():
            assert spec[key] == value, (mode, key)
    assert "priorityClassName" not in pod_spec(workload_of(render(tmp_path)))


# ---------------------------------------------------------------------- DaemonSet mode
def test_the_daemonset_reads_a_host_path_and_keeps_checkpoints_on_the_node(
    tmp_path: Path,
) -> None:
    objects = render(tmp_path, {"daemonset": {"copilotHome": "/srv/copilot"}})
    daemonset = one(objects, "DaemonSet")
    spec, container = pod_spec(daemonset), bridge(daemonset)
    logs = volume(spec, mount(container, "/copilot")["name"])
    assert logs["hostPath"] == {"path": "/srv/copilot", "type": "Directory"}
    state = volume(spec, mount(container, "/var/lib/otel-bridge")["name"])
    assert state["hostPath"]["path"] == "/var/lib/otel-bridge"
    (owner,) = spec["initContainers"]
    assert mount(owner, "/var/lib/otel-bridge")["name"] == state["name"]
    assert str(spec["securityContext"]["runAsUser"]) in owner["command"][-1]
    assert not by_kind(objects, "PodDisruptionBudget")  # a drain leaves DaemonSet pods alone


def test_the_daemonset_can_keep_checkpoints_on_a_claim_one_directory_per_node(
    tmp_path: Path,
) -> None:
    values = {"daemonset": {"checkpoints": {"type": "persistentVolumeClaim", "size": "2Gi"}}}
    objects = render(tmp_path, values)
    claim = one(objects, "PersistentVolumeClaim")
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "2Gi"
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    daemonset = one(objects, "DaemonSet")
    spec, container = pod_spec(daemonset), bridge(daemonset)
    state = mount(container, "/var/lib/otel-bridge")
    assert state["subPathExpr"] == "$(K8S_NODE_NAME)"
    assert (
        volume(spec, state["name"])["persistentVolumeClaim"]["claimName"]
        == (claim["metadata"]["name"])
    )
    assert "initContainers" not in spec
    existing = {"daemonset": {"checkpoints": {"type": "persistentVolumeClaim",
                                              "existingClaim": "mine"}}}  # fmt: skip
    objects = render(tmp_path, existing)
    assert not by_kind(objects, "PersistentVolumeClaim")
    spec = pod_spec(one(objects, "DaemonSet"))
    assert volume(spec, "otel-bridge-state")["persistentVolumeClaim"]["claimName"] == "mine"


# ---------------------------------------------------------------------- sidecar mode
def test_the_sidecar_example_is_a_native_sidecar_sharing_copilot_home_read_only(
    tmp_path: Path,
) -> None:
    objects = render(tmp_path, {"mode": "sidecar"})
    assert not by_kind(objects, "DaemonSet")
    deployment = one(objects, "Deployment")
    spec = pod_spec(deployment)
    container = bridge(deployment)
    assert container in spec["initContainers"] and container["restartPolicy"] == "Always"
    (agent,) = spec["containers"]
    assert {"name": "COPILOT_HOME", "value": "/copilot"} in agent["env"]
    shared = mount(container, "/copilot")
    assert shared["readOnly"] is True
    assert mount(agent, "/copilot")["name"] == shared["name"]
    assert not mount(agent, "/copilot").get("readOnly", False)
    assert "emptyDir" in volume(spec, shared["name"])
    pdb = one(objects, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    # no example: the ConfigMap, the Secret and the Service for the user's own pods
    objects = render(tmp_path, {"mode": "sidecar", "sidecarExample": {"enabled": False}})
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "Secret", "Service"]


def test_the_sidecar_template_is_usable_from_another_chart(tmp_path: Path) -> None:
    """A chart that has this one as a dependency includes otel-bridge.sidecar in its own pod
    spec (README.md: the sidecar in your own chart)."""
    parent = tmp_path / "agent-chart"
    (parent / "templates").mkdir(parents=True)
    (parent / "charts").mkdir()
    (parent / "Chart.yaml").write_text(
        "apiVersion: v2\nname: agent-chart\nversion: 1.0.0\ndependencies:\n"
        "  - name: otel-bridge\n    version: 0.1.0\n"
    )
    (parent / "values.yaml").write_text(
        "otel-bridge:\n  mode: sidecar\n  sidecarExample:\n    enabled: false\n"
    )
    done = helm(tmp_path, "package", str(CHART), "--destination", str(parent / "charts"))
    assert done.returncode == 0, done.stderr
    (parent / "templates" / "agent.yaml").write_text(
        """\
{{- $chart := dict "Name" "otel-bridge" "AppVersion" "0.1.0" }}
{{- $bridge := dict "Values" (index .Values "otel-bridge") "Release" .Release "Chart" $chart }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels:
        app: agent
        {{- include "otel-bridge.sidecarPodLabels" $bridge | nindent 8 }}
    spec:
      initContainers:
        {{- include "otel-bridge.sidecar" $bridge | nindent 8 }}
      containers:
        - name: agent
          image: agent
          volumeMounts: [{name: copilot-home, mountPath: /copilot}]
      volumes:
        - name: copilot-home
          emptyDir: {}
        {{- include "otel-bridge.sidecarVolumes" $bridge | nindent 8 }}
"""
    )
    objects = render(tmp_path, chart=parent)
    deployment = next(o for o in by_kind(objects, "Deployment") if o["metadata"]["name"] == "agent")
    sidecar = bridge(deployment)
    assert sidecar["restartPolicy"] == "Always"
    config = volume(pod_spec(deployment), "otel-bridge-config")["configMap"]["name"]
    assert config in {o["metadata"]["name"] for o in by_kind(objects, "ConfigMap")}
    service = one(objects, "Service")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()


# ---------------------------------------------------------------------- monitoring objects
@pytest.mark.parametrize("mode", MODES)
def test_monitoring_objects_scrape_every_bridge_as_job_otel_bridge(
    tmp_path: Path, mode: str
) -> None:
    objects = render(tmp_path, {"mode": mode, **EVERYTHING, "serviceMonitor": {
        "enabled": True, "labels": {"release": "kube-prometheus"}}})  # fmt: skip
    service, monitor = one(objects, "Service"), one(objects, "ServiceMonitor")
    pod_monitor = one(objects, "PodMonitor")
    labels = workload_of(objects)["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    # the job is the value of the label jobLabel names: "otel-bridge", what alerts.yml expects
    assert service["metadata"]["labels"][monitor["spec"]["jobLabel"]] == "otel-bridge"
    assert labels[pod_monitor["spec"]["jobLabel"]] == "otel-bridge"
    assert 'up{job="otel-bridge"}' in ALERTS.read_text()
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert pod_monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert pod_monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def test_the_prometheus_rule_is_alerts_yml(tmp_path: Path) -> None:
    rule = one(render(tmp_path, {"prometheusRule": {"enabled": True}}), "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    # alerts.yml's {{ $labels }} templates reach Prometheus as they are, not through helm
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
    assert not by_kind(render(tmp_path), "PrometheusRule")


def test_the_dashboards_are_config_maps_for_the_grafana_sidecar(tmp_path: Path) -> None:
    objects = render(tmp_path, {"dashboards": {"enabled": True}})
    dashboards = [
        o for o in by_kind(objects, "ConfigMap") if "grafana_dashboard" in o["metadata"]["labels"]
    ]
    sources = sorted((paths.REPO / "dashboards").glob("*.json"))
    assert len(dashboards) == len(sources) > 0
    data = {key: value for d in dashboards for key, value in d["data"].items()}
    assert {d["metadata"]["labels"]["grafana_dashboard"] for d in dashboards} == {"1"}
    for source in sources:
        assert json.loads(data[source.name]) == json.loads(source.read_text())


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"metricsPort": "nine"}, ["metricsPort", "integer"]),
        ({"mode": "deployment"}, ["mode", "daemonset", "sidecar"]),
        ({"replicas": 3}, ["replicas", "additional properties"]),
        ({"daemonset": {"copilotHome": "relative/path"}}, ["copilotHome"]),
        ({"config": {"no-such-option": 1}}, ["config", "no-such-option"]),
        ({"config": {"export-timeout": "soon"}}, ["export-timeout", "number"]),
        ({"config": {"state-dir": "/elsewhere"}}, ["config", "state-dir"]),
        ({"otlp": {"endpoint": "collector:4318"}}, ["endpoint"]),
    ],
)
def test_wrong_values_are_refused_at_install_with_a_clear_message(
    tmp_path: Path, values: dict[str, Any], words: list[str]
) -> None:
    done = template(tmp_path, values)
    assert done.returncode != 0, done.stdout
    assert "values don't meet the specifications of the schema" in done.stderr, done.stderr
    for word in words:
        assert word.lower() in done.stderr.lower(), (word, done.stderr)


def test_the_kube_version_range_is_enforced(tmp_path: Path) -> None:
    oldest, newest = kube_versions()
    for version in (oldest, newest):
        assert template(tmp_path, kube_version=version).returncode == 0
    major, minor, _ = oldest.split(".")
    too_old = f"{major}.{int(minor) - 1}.0"
    major, minor, _ = newest.split(".")
    too_new = f"{major}.{int(minor) + 1}.0"
    for version in (too_old, too_new):
        done = template(tmp_path, kube_version=version)
        assert done.returncode != 0
        assert "kubeVersion" in done.stderr and "incompatible" in done.stderr, done.stderr


# ---------------------------------------------------------------------- the kustomize files
def test_the_kustomize_files_agree_with_the_chart(tmp_path: Path) -> None:
    """deploy/kubernetes stays beside the chart for users without Helm: the same options of
    run, probes, security context, grace period and (for the DaemonSet) resources as the
    chart's defaults, so that neither drifts from the other unnoticed."""
    kustomize = paths.REPO / "deploy" / "kubernetes"
    toml = tomllib.loads((kustomize / "otel-bridge.toml").read_text())
    for mode, manifest in (("daemonset", "daemonset.yaml"), ("sidecar", "sidecar.yaml")):
        objects = render(tmp_path, {"mode": mode})
        chart = workload_of(objects)
        theirs = yaml.safe_load((kustomize / manifest).read_text())
        assert tomllib.loads(config_text(objects, chart)) == toml, mode
        mine, other = bridge(chart), bridge(theirs)
        for key in ("args", "livenessProbe", "readinessProbe", "securityContext"):
            assert mine[key] == other[key], (mode, key)
        if mode == "daemonset":
            assert mine["resources"] == other["resources"]
        spec, their_spec = pod_spec(chart), pod_spec(theirs)
        for key in ("runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile"):
            assert spec["securityContext"][key] == their_spec["securityContext"][key], key
        assert spec["automountServiceAccountToken"] is their_spec["automountServiceAccountToken"]
    daemonset = yaml.safe_load((kustomize / "daemonset.yaml").read_text())
    grace = pod_spec(workload_of(render(tmp_path)))["terminationGracePeriodSeconds"]
    assert grace == pod_spec(daemonset)["terminationGracePeriodSeconds"]
