"""The Helm chart's pods run for real: `helm template`, then `podman kube play` of the
rendered ConfigMap and pod, with the image the tests build from the Dockerfile
(tests/podman.py) and an OTLP receiver on the host.

(a) The sidecar example: an agent container writes a recorded session line by line into the
    shared COPILOT_HOME while the bridge follows it read-only: every span reaches the
    receiver, /readyz turns 200; then, with a second task open and its finished spans queued
    (the receiver refusing), stopping the pod (SIGTERM, as `podman kube down` and the kubelet
    do) delivers them before the bridge exits 0.
(b) The DaemonSet's pod: a hostPath session-state root (read-only) and a hostPath state
    directory (handed to uid 10001 by the init container): a session that appears on the host
    is exported, and after the pod is replaced (`podman kube down`, `podman kube play`) the
    next one is, and nothing is exported twice.

podman 4.3 runs Kubernetes YAML with limits, each handled in `podman_pods` below; what it
leaves out (DaemonSet scheduling, native-sidecar ordering, the Secret, probes, field refs)
is checked on the API server and the rendered objects (test_deploy_helm*.py).
"""

from __future__ import annotations

import copy
import re
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import podman
from tests.integration.deploy.helm_chart import by_kind, render
from tests.integration.deploy.test_deploy_docker import FIXTURE, FIXTURE_SPANS, SESSION_IDS
from tests.otlp_receiver import OtlpReceiver
from tests.prometheus import free_port

NODE = "podman-node"
NAMESPACE = "agents"
#: The fixture's lines up to the end of the second task's first turn: its chat, tool and turn
#: spans are finished, the task (invoke_agent) is still open.
OPEN_TASK_LINES, OPEN_TASK_SPANS = 10, 3

#: The agent of the sidecar example: writes the fixture into COPILOT_HOME line by line, one
#: session whole, then (once the test creates `go`) the first lines of a second one, and
#: waits to be stopped. Arguments, not code, carry the paths.
AGENT = """\
import os, sys, time
fixture, go, first, second, lines = sys.argv[1:6]
def write(session, count):
    os.makedirs(f"/copilot/session-state/{session}", exist_ok=True)
    with open(fixture) as src, open(f"/copilot/session-state/{session}/events.jsonl", "a") as out:
        for line in list(src)[:count]:
            out.write(line)
            out.flush()
            time.sleep(0.2)
write(first, 1_000_000)
while not os.path.exists(go):
    time.sleep(0.2)
write(second, int(lines))
time.sleep(3600)
"""


# ---------------------------------------------------------------------- podman 4.3's limits
def _expand(value: str, env: dict[str, str]) -> str:
    """$(VAR) as the kubelet expands it, from the variables set before."""
    return re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), value)


def _literal_env(container: dict[str, Any], secrets: dict[str, dict[str, str]], pod: str) -> None:
    """podman 4.3 refuses `fieldRef: spec.nodeName` and metadata.namespace, reads secretKeyRef
    from its own secret store (not from a Secret in the YAML), and does not expand $(VAR):
    the values the kubelet would give, written in."""
    fields = {"spec.nodeName": NODE, "metadata.namespace": NAMESPACE, "metadata.name": pod}
    done: dict[str, str] = {}
    env = []
    for variable in container.get("env", []):
        source = variable.get("valueFrom", {})
        if "fieldRef" in source and source["fieldRef"]["fieldPath"] in fields:
            value = fields[source["fieldRef"]["fieldPath"]]
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            if ref["key"] not in secrets.get(ref["name"], {}):
                assert ref.get("optional"), ref
                continue
            value = secrets[ref["name"]][ref["key"]]
        else:
            value = _expand(variable["value"], done)
        done[variable["name"]] = value
        env.append({"name": variable["name"], "value": value})
    container["env"] = env


def podman_pods(objects: list[dict[str, Any]], name: str, scratch: Path) -> list[dict[str, Any]]:
    """The rendered ConfigMaps and workload as podman 4.3 can play them: the workload's pod
    template as a Pod (it refuses DaemonSet; a Deployment would work, but one pod is what is
    run here either way), native sidecars moved into `containers` (it ignores
    `restartPolicy: Always` on an init container and waits for it to exit: the pod would
    hang), restartPolicy OnFailure (it applies the pod's policy to init containers, and would
    restart a one-shot one for ever), no annotations (it holds their values to the 63
    characters of a label: the config checksum is longer), host network with no port list (it
    refuses ports there) so that the receiver on the host is 127.0.0.1, literal env
    (_literal_env), and each emptyDir as a directory under `scratch` that anyone may write
    (it makes an emptyDir root's and ignores fsGroup: uid 10001 could not write it). Probes
    are ignored by podman: the tests ask /healthz and /readyz."""
    secrets = {s["metadata"]["name"]: s.get("stringData", {}) for s in by_kind(objects, "Secret")}
    (workload,) = by_kind(objects, "DaemonSet") + by_kind(objects, "Deployment")
    template = copy.deepcopy(workload["spec"]["template"])
    spec = template["spec"]
    sidecars = [c for c in spec.get("initContainers", []) if c.pop("restartPolicy", None)]
    spec["initContainers"] = [c for c in spec.get("initContainers", []) if c not in sidecars]
    if not spec["initContainers"]:
        del spec["initContainers"]
    spec["containers"] = sidecars + spec["containers"]
    spec.update(hostNetwork=True, restartPolicy="OnFailure")
    for container in spec["containers"] + spec.get("initContainers", []):
        container.pop("ports", None)
        _literal_env(container, secrets, name)
    for volume in spec["volumes"]:
        if "emptyDir" in volume:
            directory = scratch / f"{name}-{volume['name']}"
            directory.mkdir(parents=True)
            directory.chmod(0o1777)
            volume.pop("emptyDir")
            volume["hostPath"] = {"path": str(directory), "type": "Directory"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": template["metadata"]["labels"]},
        "spec": spec,
    }
    return [*by_kind(objects, "ConfigMap"), pod]


# ---------------------------------------------------------------------- helpers
def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code
    except OSError:
        return 0


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def _logs(container: str) -> str:
    done = podman.podman("logs", container, check=False)
    return (done.stdout + done.stderr)[-4000:]


def _wait(what: str, done: Callable[[], bool], container: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f}s\n{_logs(container)}")
        time.sleep(0.3)


def _spans(receiver: OtlpReceiver, count: int, *containers: str) -> list[dict[str, Any]]:
    """The spans once `count` have arrived, or a failure with the containers' logs."""
    try:
        return receiver.wait_for_spans(count, timeout=60)
    except AssertionError as exc:
        logs = "\n".join(f"--- {name}\n{_logs(name)}" for name in containers)
        pytest.fail(f"{exc}\n{logs}")


def _values(port: int, receiver: OtlpReceiver, image: str, **more: Any) -> dict[str, Any]:
    repository, tag = image.rsplit(":", 1)
    return {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "metricsPort": port,
        "otlp": {"endpoint": receiver.http_endpoint},
        "config": {"export-timeout": 20, "poll-interval": 0.2},
        **more,
    }


@pytest.fixture(scope="module")
def image() -> str:
    """The bridge's image, built from the Dockerfile by tests/podman.py."""
    podman.require_podman()
    built, _ = podman.bridge_image()
    return built


@pytest.fixture
def play(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], Path]]:
    """`podman kube play` of objects; every file played is taken down at the end."""
    played: list[Path] = []

    def run(objects: list[dict[str, Any]]) -> Path:
        path = tmp_path / f"play-{len(played)}.yaml"
        path.write_text(yaml.safe_dump_all(objects))
        played.append(path)
        podman.podman("kube", "play", str(path))
        return path

    yield run
    for path in played:
        podman.podman("kube", "down", str(path), check=False)


def _node_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    path.chmod(0o755)
    return path


# ---------------------------------------------------------------------- (a) the sidecar
def test_the_sidecar_follows_an_agent_and_delivers_at_sigterm(
    image: str,
    otlp_receiver: OtlpReceiver,
    tmp_path: Path,
    play: Callable[[list[dict[str, Any]]], Path],
) -> None:
    port = free_port()
    fixture = _node_dir(tmp_path / "fixture")
    (fixture / "events.jsonl").write_bytes(FIXTURE.read_bytes())
    (fixture / "events.jsonl").chmod(0o644)
    go = "/fixture/go"
    first, second = SESSION_IDS[0], SESSION_IDS[1]
    values = _values(
        port, otlp_receiver, image, mode="sidecar",
        sidecarExample={"agentImage": image, "agentCommand": [
            "python3", "-c", AGENT, "/fixture/events.jsonl", go, first, second,
            str(OPEN_TASK_LINES)]},
    )  # fmt: skip
    objects = render(tmp_path, values)
    pod_name = f"agent-{uuid.uuid4().hex[:8]}"
    pods = podman_pods(objects, pod_name, tmp_path)
    spec = pods[-1]["spec"]
    (agent,) = [c for c in spec["containers"] if c["name"] == "agent"]
    agent["volumeMounts"].append({"name": "fixture", "mountPath": "/fixture", "readOnly": True})
    spec["volumes"].append({"name": "fixture", "hostPath": {"path": str(fixture)}})
    play(pods)
    bridge = f"{pod_name}-otel-bridge"
    base = f"http://127.0.0.1:{port}"
    _wait("/readyz 200", lambda: _status(f"{base}/readyz") == 200, bridge)
    assert _status(f"{base}/healthz") == 200
    spans = _spans(otlp_receiver, FIXTURE_SPANS, bridge, f"{pod_name}-agent")
    assert len(spans) == FIXTURE_SPANS
    resource = spans[0]["resource"]
    assert resource["k8s.node.name"] == NODE and resource["k8s.pod.name"] == pod_name

    # The second task, open, its finished spans queued while the receiver refuses them
    otlp_receiver.mode = "unavailable"
    (fixture / "go").write_text("")
    _wait(
        "a failed export of the open task's spans",
        lambda: "otel_bridge_export_failures_total{" in _get(f"{base}/metrics"),
        bridge,
    )
    assert len(otlp_receiver.spans()) == FIXTURE_SPANS
    stop = subprocess.Popen(
        ["podman", "pod", "stop", "-t", "40", pod_name], env=podman.podman_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(1)  # SIGTERM is on its way; the collector comes back meanwhile
    otlp_receiver.mode = "ok"
    assert stop.wait(timeout=90) == 0
    code = podman.podman("inspect", "--format", "{{.State.ExitCode}}", bridge).stdout.strip()
    assert code == "0", _logs(bridge)
    assert "received SIGTERM; delivering" in _logs(bridge)
    span_ids = [span["span_id"] for span in otlp_receiver.spans()]
    assert len(span_ids) == FIXTURE_SPANS + OPEN_TASK_SPANS == len(set(span_ids))


# ---------------------------------------------------------------------- (b) the DaemonSet
def _add_session(copilot: Path, session_id: str) -> None:
    session = copilot / "session-state" / session_id
    session.mkdir(parents=True)
    (session / "events.jsonl").write_bytes(FIXTURE.read_bytes())
    session.chmod(0o755)
    (session / "events.jsonl").chmod(0o644)


def test_the_daemonset_pod_exports_host_sessions_once_across_a_replacement(
    image: str,
    otlp_receiver: OtlpReceiver,
    tmp_path: Path,
    play: Callable[[list[dict[str, Any]]], Path],
) -> None:
    port = free_port()
    copilot = _node_dir(tmp_path / "node" / "copilot")
    _node_dir(copilot / "session-state")
    state = _node_dir(tmp_path / "node" / "otel-bridge")  # root's, as kubelet makes it
    values = _values(
        port, otlp_receiver, image,
        daemonset={"copilotHome": str(copilot), "checkpoints": {"hostPath": str(state)}},
    )  # fmt: skip
    objects = render(tmp_path, values)
    pod_name = f"bridge-{uuid.uuid4().hex[:8]}"
    pods = podman_pods(objects, pod_name, tmp_path)
    bridge = f"{pod_name}-otel-bridge"
    base = f"http://127.0.0.1:{port}"

    first = play(pods)
    _wait("/readyz 200", lambda: _status(f"{base}/readyz") == 200, bridge)
    _add_session(copilot, SESSION_IDS[0])
    spans = _spans(otlp_receiver, FIXTURE_SPANS, bridge)
    assert {span["resource"]["k8s.node.name"] for span in spans} == {NODE}
    assert state.stat().st_uid == 10001  # the init container handed it over
    written = podman.podman(
        "exec", bridge, "python3", "-c",
        "import os\ntry: open('/copilot/session-state/x', 'w')\n"
        "except OSError as e: print(e.errno)",
    ).stdout.split()  # fmt: skip
    assert written == ["30"], written  # EROFS: the host's sessions are mounted read-only

    # The pod replaced: taken down (SIGTERM), a session written meanwhile, played again
    podman.podman("kube", "down", str(first))
    _add_session(copilot, SESSION_IDS[1])
    play(pods)
    _wait("/readyz 200 after the replacement", lambda: _status(f"{base}/readyz") == 200, bridge)
    _spans(otlp_receiver, 2 * FIXTURE_SPANS, bridge)
    time.sleep(2)  # what a repeat would send comes with the catch-up, before /readyz's 200
    span_ids = [span["span_id"] for span in otlp_receiver.spans()]
    assert len(span_ids) == 2 * FIXTURE_SPANS == len(set(span_ids))
    assert "checkpoints.jsonl" in {p.name for p in state.iterdir()}
