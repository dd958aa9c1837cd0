"""The Kubernetes manifests (deploy/kubernetes/): what they promise, checked on the YAML.

No cluster (nor kustomize or kubeconform) is at hand, so each promise of docs/deploy.md is
checked on the parsed manifests, after the Kubernetes API reference
(https://kubernetes.io/docs/reference/kubernetes-api/): the kustomization names every manifest;
the sidecar is a native one (an init container with restartPolicy: Always, KEP-753) that
shares COPILOT_HOME read-only; the DaemonSet keeps its checkpoints on the node; the probes
are on /healthz and /readyz; the security context is locked down; the resources hold what the
benchmarks measured (bench/results-after.json); the Service, ServiceMonitor and
PrometheusRule fit together and the PrometheusRule is alerts.yml; and every `otel-bridge`
command line is one the CLI accepts, with the options of the configuration file it reads from
the ConfigMap that kustomize generates (otel-bridge.toml), read by the CLI's own code.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_bridge.cli._checks import prometheus_wanted
from tests import paths
from tests.integration.deploy.test_deploy_docker import bridge_args
from tests.releases import deployed_version

ROOT = paths.REPO
K8S = ROOT / "deploy" / "kubernetes"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
BENCH = ROOT / "bench" / "results-after.json"
METRICS_PORT = 9464
BRIDGE_IMAGE = "otel-bridge"
KUSTOMIZE = ROOT / ".deploy-tools" / "bin" / "kustomize"  # scripts/build_deploy_tools.sh
CONFIG_FILE = "/etc/otel-bridge/otel-bridge.toml"
#: What both manifests gave `run` as flags before its options moved to otel-bridge.toml: each
#: must still be set, through the file or the command line.
FORMER_FLAGS = {
    "session_state": [Path("/copilot/session-state")],
    "state_dir": Path("/var/lib/otel-bridge"),
    "prometheus_host": "0.0.0.0",
    "prometheus_port": METRICS_PORT,
    "export_timeout": 20.0,
}


# ---------------------------------------------------------------------- helpers
@functools.cache
def kustomization() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return loaded


@functools.cache
def documents() -> list[tuple[str, dict[str, Any]]]:
    """(file name, object) of every manifest the kustomization lists."""
    found = []
    for name in kustomization()["resources"]:
        for document in yaml.safe_load_all((K8S / name).read_text()):
            if document is not None:
                found.append((name, document))
    return found


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in documents() if doc["kind"] == kind]


def one(kind: str) -> dict[str, Any]:
    objects = by_kind(kind)
    assert len(objects) == 1, f"{len(objects)} {kind}s"
    return objects[0]


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def long_running(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The containers that run as long as the pod: containers and native sidecars."""
    yield from spec["containers"]
    yield from (c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always")


def bridge_containers() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod spec, container) of every container that runs `otel-bridge run`."""
    for kind in ("Deployment", "DaemonSet"):
        for workload in by_kind(kind):
            spec = pod_spec(workload)
            for container in long_running(spec):
                if container["image"] == BRIDGE_IMAGE:
                    yield spec, container


def bridge_of(kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod spec, bridge container) of the one workload of this kind."""
    spec = pod_spec(one(kind))
    (container,) = [c for c in long_running(spec) if c["image"] == BRIDGE_IMAGE]
    return spec, container


def generated_files() -> dict[str, list[tuple[str, Path]]]:
    """ConfigMap name -> (key, repository file) of each file of kustomization.yaml's
    configMapGenerator (a file is listed as PATH or KEY=PATH; the key defaults to its name)."""
    found: dict[str, list[tuple[str, Path]]] = {}
    for generator in kustomization().get("configMapGenerator", []):
        for entry in generator.get("files", []):
            key, _, path = entry.rpartition("=")
            found.setdefault(generator["name"], []).append((key or Path(path).name, K8S / path))
    return found


def config_files(spec: dict[str, Any], container: dict[str, Any]) -> dict[str, Path]:
    """Path in the container -> the repository file there, for every ConfigMap it mounts."""
    found = {}
    for mount in container.get("volumeMounts", []):
        source = volume(spec, mount["name"]).get("configMap")
        if source is None:
            continue
        assert source["name"] in generated_files(), f"ConfigMap {source['name']} is not generated"
        assert mount.get("readOnly") is True, f"{container['name']} mounts its config writable"
        for key, path in generated_files()[source["name"]]:
            found[f"{mount['mountPath']}/{key}"] = path
    return found


def run_args(spec: dict[str, Any], container: dict[str, Any]) -> Any:
    """The options the container's bridge runs with: its command line (the image's ENTRYPOINT
    is otel-bridge; args replace its CMD) and the file of its --config, from its ConfigMap,
    as the CLI reads them."""
    assert "command" not in container, "keep the image's ENTRYPOINT (otel-bridge)"
    return bridge_args(container["args"], config_files(spec, container))


def mounts(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """mountPath -> the volumeMount."""
    return {mount["mountPath"]: mount for mount in container.get("volumeMounts", [])}


def volume(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in spec["volumes"] if v["name"] == name)


def mount_of(container: dict[str, Any], path: Path) -> dict[str, Any]:
    """The volumeMount that holds `path` in the container (the longest mountPath above it)."""
    holding = [
        mount
        for mount in container.get("volumeMounts", [])
        if path == Path(mount["mountPath"]) or Path(mount["mountPath"]) in path.parents
    ]
    assert holding, f"{path} is on no volume of {container['name']}"
    return max(holding, key=lambda mount: len(mount["mountPath"]))


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6, "G": 10**9}


def cpu_cores(quantity: str | int | float) -> float:
    """A Kubernetes CPU quantity in cores ("100m" -> 0.1, "1" -> 1.0)."""
    text = str(quantity)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def memory_mb(quantity: str | int) -> float:
    """A Kubernetes memory quantity in MB (10**6 bytes, as the bench reports RSS)."""
    match = re.fullmatch(r"(\d+)([KMG]i?|k)?", str(quantity))
    assert match, f"memory quantity {quantity!r}"
    number, unit = match.groups()
    return int(number) * _UNITS.get(unit or "", 1) / 1e6


def bench() -> dict[str, Any]:
    sections: dict[str, Any] = json.loads(BENCH.read_text())["sections"]
    return sections


# ---------------------------------------------------------------------- the kustomization
def test_every_manifest_parses_and_the_kustomization_lists_them_all() -> None:
    assert kustomization()["kind"] == "Kustomization"
    listed = set(kustomization()["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk, f"not listed: {on_disk - listed}; missing: {listed - on_disk}"
    generated = {path for files in generated_files().values() for _, path in files}
    assert generated == set(K8S.glob("*.toml")), "configMapGenerator lists every .toml"
    assert all(path.is_file() for path in generated)
    for name in on_disk:
        for document in yaml.safe_load_all((K8S / name).read_text()):
            assert {"apiVersion", "kind", "metadata"} <= document.keys(), name
    kinds = sorted(doc["kind"] for _, doc in documents())
    assert kinds == ["DaemonSet", "Deployment", "PrometheusRule", "Service", "ServiceMonitor"]
    images = {image["name"] for image in kustomization()["images"]}
    used = {
        c["image"]
        for kind in ("Deployment", "DaemonSet")
        for w in by_kind(kind)
        for c in pod_spec(w)["containers"] + pod_spec(w).get("initContainers", [])
    }
    assert BRIDGE_IMAGE in images and BRIDGE_IMAGE in used


def kustomize() -> str | None:
    found = shutil.which("kustomize")
    return found or (str(KUSTOMIZE) if KUSTOMIZE.is_file() else None)


def kustomize_build(directory: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(kustomize()), "build", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def config_map_volumes(doc: dict[str, Any]) -> set[str]:
    """The ConfigMaps a built workload's pods mount."""
    volumes = doc["spec"]["template"]["spec"]["volumes"]
    return {v["configMap"]["name"] for v in volumes if "configMap" in v}


needs_kustomize = pytest.mark.skipif(
    kustomize() is None, reason="kustomize not built: bash scripts/build_deploy_tools.sh"
)


@needs_kustomize
def test_kustomize_builds_the_manifests_into_one_namespace() -> None:
    built = kustomize_build(K8S)
    assert sorted(doc["kind"] for doc in built) == sorted(
        [doc["kind"] for _, doc in documents()] + ["ConfigMap"] * len(generated_files())
    )
    (config_map,) = [doc for doc in built if doc["kind"] == "ConfigMap"]
    # otel-bridge.toml itself, under a name with its hash, which the workloads' volumes use
    (files,) = generated_files().values()
    assert config_map["data"] == {key: path.read_text() for key, path in files}
    assert re.fullmatch(r"otel-bridge-[a-z0-9]{10}", config_map["metadata"]["name"])
    for doc in built:
        assert doc["metadata"]["namespace"] == "otel-bridge", doc["kind"]
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "otel-bridge"
        if doc["kind"] == "PrometheusRule":
            assert doc["spec"] == yaml.safe_load(ALERTS.read_text())
        if doc["kind"] in ("Deployment", "DaemonSet"):
            spec = doc["spec"]["template"]["spec"]
            images = {c["image"] for c in spec["containers"] + spec.get("initContainers", [])}
            assert f"{BRIDGE_IMAGE}:{deployed_version()}" in images, images
            # selectors are left alone (includeSelectors: false), so they still match
            selector = doc["spec"]["selector"]["matchLabels"]
            assert selector.items() <= doc["spec"]["template"]["metadata"]["labels"].items()
            assert config_map_volumes(doc) == {config_map["metadata"]["name"]}


@needs_kustomize
def test_a_change_of_the_config_file_rolls_the_pods(tmp_path: Path) -> None:
    """The ConfigMap's name carries the file's hash: an edited otel-bridge.toml gives a new
    name in the pod templates, so that applying it rolls the pods (the bridge reads the file
    at start only)."""
    copy = tmp_path / "kubernetes"
    shutil.copytree(K8S, copy)
    before = {
        doc["kind"]: config_map_volumes(doc)
        for doc in kustomize_build(copy)
        if doc["kind"] in ("Deployment", "DaemonSet")
    }
    config = copy / "otel-bridge.toml"
    edited = config.read_text().replace("export-timeout = 20", "export-timeout = 25")
    assert edited != config.read_text()
    config.write_text(edited)
    after = {
        doc["kind"]: config_map_volumes(doc)
        for doc in kustomize_build(copy)
        if doc["kind"] in ("Deployment", "DaemonSet")
    }
    assert before.keys() == after.keys() == {"Deployment", "DaemonSet"}
    for kind in before:
        assert before[kind] and after[kind] and before[kind].isdisjoint(after[kind]), kind


def test_the_prometheus_rule_is_alerts_yml() -> None:
    rule = one("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
    generator = K8S / "gen_prometheusrule.py"
    spec = importlib.util.spec_from_file_location("gen_prometheusrule", generator)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (K8S / "prometheusrule.yaml").read_text() == module.render(ALERTS.read_text()), (
        "prometheusrule.yaml is out of date: python deploy/kubernetes/gen_prometheusrule.py"
    )


def test_the_service_and_service_monitor_reach_every_bridge_as_job_otel_bridge() -> None:
    service, monitor = one("Service"), one("ServiceMonitor")
    # The scrape job is named after the Service; the alert rules expect job="otel-bridge".
    assert service["metadata"]["name"] == "otel-bridge"
    assert 'up{job="otel-bridge"}' in ALERTS.read_text()
    assert "jobLabel" not in monitor["spec"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    port = service["spec"]["ports"][0]
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [port["name"]]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    for kind in ("Deployment", "DaemonSet"):
        for workload in by_kind(kind):
            labels = workload["spec"]["template"]["metadata"]["labels"]
            assert service["spec"]["selector"].items() <= labels.items(), kind
    for _, container in bridge_containers():
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports[port["targetPort"]] == port["port"] == METRICS_PORT


# ---------------------------------------------------------------------- the bridge containers
def test_every_bridge_command_line_exists_in_the_cli() -> None:
    containers = list(bridge_containers())
    assert len(containers) == 2  # the sidecar and the DaemonSet's
    for spec, container in containers:
        args = run_args(spec, container)
        assert args.command == "run"
        # reachable by the kubelet's probes and Prometheus at the pod's address, never the
        # node's: no host network, no host port
        assert args.prometheus_host == "0.0.0.0"
        assert args.prometheus_port == METRICS_PORT
        assert not spec.get("hostNetwork")
        assert all("hostPort" not in port for port in container["ports"])
        assert args.state_dir is not None and not args.no_checkpoints
        # env references $(VAR) only to variables defined before them (Kubernetes' rule)
        defined: set[str] = set()
        for variable in container.get("env", []):
            for name in re.findall(r"\$\((\w+)\)", variable.get("value", "")):
                assert name in defined, f"{variable['name']} uses $({name}) before it is set"
            defined.add(variable["name"])


def test_the_bridges_take_their_options_from_the_config_map_and_otlp_from_env() -> None:
    """run's options are in otel-bridge.toml, mounted read-only from the generated ConfigMap;
    every option the manifests gave as a flag before is still set; where spans go stays in
    the environment, the OTLP headers (a token) from a Secret."""
    for spec, container in bridge_containers():
        assert container["args"] == ["run", "--config", CONFIG_FILE]
        assert config_files(spec, container) == {CONFIG_FILE: K8S / "otel-bridge.toml"}
        args = run_args(spec, container)
        for dest, value in FORMER_FLAGS.items():
            assert getattr(args, dest) == value, (container["name"], dest)
        # a port set in the file counts as a flag of it: Prometheus is served whatever
        # OTEL_METRICS_EXPORTER says, as it was with --prometheus-port
        assert prometheus_wanted(args)
        env = {variable["name"]: variable for variable in container["env"]}
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"]["value"].startswith("http")
        headers = env["OTEL_EXPORTER_OTLP_HEADERS"]
        assert "value" not in headers and headers["valueFrom"]["secretKeyRef"]["optional"]


def test_probes_are_healthz_for_liveness_and_readyz_for_readiness() -> None:
    for _, container in bridge_containers():
        liveness, readiness = container["livenessProbe"], container["readinessProbe"]
        assert liveness["httpGet"] == {"path": "/healthz", "port": "metrics"}
        assert readiness["httpGet"] == {"path": "/readyz", "port": "metrics"}


def test_every_container_is_locked_down() -> None:
    for kind in ("Deployment", "DaemonSet"):
        for workload in by_kind(kind):
            spec = pod_spec(workload)
            assert spec["securityContext"]["runAsNonRoot"] is True
            assert int(spec["securityContext"]["runAsUser"]) >= 1000
            assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
            assert spec["automountServiceAccountToken"] is False
            for container in spec["containers"] + spec.get("initContainers", []):
                where = f"{kind} {container['name']}"
                context = container["securityContext"]
                assert context["readOnlyRootFilesystem"] is True, where
                assert context["allowPrivilegeEscalation"] is False, where
                assert context.get("privileged", False) is False, where
                assert context["capabilities"]["drop"] == ["ALL"], where
                if container in list(long_running(spec)):
                    assert context["runAsNonRoot"] is True, where
                    assert "runAsUser" not in context or context["runAsUser"] != 0, where
                    assert not context["capabilities"].get("add"), where
                else:  # a one-shot init container may chown the node's directory, nothing else
                    assert context["capabilities"].get("add", []) in ([], ["CHOWN"]), where
                assert {"requests", "limits"} <= container["resources"].keys(), where


def test_the_sidecar_is_native_and_shares_copilot_home_read_only() -> None:
    spec, bridge = bridge_of("Deployment")
    assert bridge in spec["initContainers"]
    # native sidecar: started before the agent's containers, stopped after them
    assert bridge["restartPolicy"] == "Always"
    assert BRIDGE_IMAGE not in {c["image"] for c in spec["containers"]}
    (agent,) = spec["containers"]
    copilot_home = next(v["value"] for v in agent["env"] if v["name"] == "COPILOT_HOME")
    args = run_args(spec, bridge)
    (session_state,) = args.session_state
    assert session_state == Path(copilot_home) / "session-state"
    shared = mount_of(bridge, session_state)
    assert shared["readOnly"] is True, "the bridge mounts COPILOT_HOME read-only"
    agent_mount = mount_of(agent, Path(copilot_home))
    assert agent_mount["name"] == shared["name"] and not agent_mount.get("readOnly", False)
    assert "emptyDir" in volume(spec, shared["name"])
    state = mount_of(bridge, args.state_dir)
    assert not state.get("readOnly", False)
    assert state["name"] not in {m["name"] for m in agent["volumeMounts"]}
    # the flush at SIGTERM fits in the grace period, with time left for the agent's own stop
    assert spec["terminationGracePeriodSeconds"] >= args.export_timeout + 30


def test_the_daemonset_keeps_checkpoints_on_the_node() -> None:
    spec, bridge = bridge_of("DaemonSet")
    args = run_args(spec, bridge)
    state = mount_of(bridge, args.state_dir)
    assert volume(spec, state["name"])["hostPath"]["path"] == str(args.state_dir)
    assert not state.get("readOnly", False)
    (session_state,) = args.session_state
    logs = mount_of(bridge, session_state)
    assert logs["readOnly"] is True
    assert "hostPath" in volume(spec, logs["name"])
    # the init container hands the node's state directory to the bridge's uid
    (owner,) = spec["initContainers"]
    assert mounts(owner)[str(args.state_dir)]["name"] == state["name"]
    assert str(spec["securityContext"]["runAsUser"]) in owner["command"][-1]
    assert spec["terminationGracePeriodSeconds"] >= args.export_timeout + 10


def test_resources_hold_what_the_benchmarks_measured() -> None:
    """docs/deploy.md: the DaemonSet's requests hold the steady state at 10,000 session
    directories (idle RSS, the soak's last RSS, its CPU per line at 100 lines a second), its
    limits twice the highest RSS seen and a core for the catch-up at start; the sidecar (one
    agent's sessions) the same at 1,000 directories and 10 lines a second."""
    figures = bench()
    idle, soak, ready = figures["idle"], figures["soak"], figures["ready"]
    soak_lines_per_s = soak["lines"] / (soak["minutes"] * 60)
    cpu_per_line = soak["cpu_pct"] / 100 / soak_lines_per_s  # core-seconds per line
    highest_rss = max(idle["10000_ckpt_rss_mb"], soak["rss_mb_max"], ready["restart_rss_mb"])
    daemonset = bridge_of("DaemonSet")[1]["resources"]
    sidecar = bridge_of("Deployment")[1]["resources"]
    assert memory_mb(daemonset["requests"]["memory"]) >= highest_rss
    assert memory_mb(daemonset["limits"]["memory"]) >= 2 * highest_rss
    assert cpu_cores(daemonset["requests"]["cpu"]) >= 100 * cpu_per_line
    assert cpu_cores(daemonset["limits"]["cpu"]) >= 1
    assert memory_mb(sidecar["requests"]["memory"]) >= idle["1000_ckpt_rss_mb"]
    assert memory_mb(sidecar["limits"]["memory"]) >= 2 * idle["1000_ckpt_rss_mb"]
    assert cpu_cores(sidecar["requests"]["cpu"]) >= 10 * cpu_per_line
    for limits in (daemonset, sidecar):
        assert cpu_cores(limits["requests"]["cpu"]) <= cpu_cores(limits["limits"]["cpu"])
        assert memory_mb(limits["requests"]["memory"]) <= memory_mb(limits["limits"]["memory"])


def test_quantities_are_read_as_kubernetes_reads_them() -> None:
    assert cpu_cores("100m") == pytest.approx(0.1) and cpu_cores("1") == 1 and cpu_cores(2) == 2
    assert memory_mb("128Mi") == pytest.approx(134.2, abs=0.1)
    assert memory_mb("1G") == 1000
    with pytest.raises(AssertionError):
        memory_mb("12 MB")
