"""The viewing stack (deploy/compose/): one `docker compose up` of the bridge, a Collector,
Jaeger, Prometheus and Grafana, checked on its files since no image can be pulled here.

After the Compose file reference (https://docs.docker.com/reference/compose-file/): every file
it mounts exists in the repository; the bridge reads ~/.copilot read-only and its options (its
command line and the file of its --config, mounted from deploy/compose/otel-bridge.toml) are
ones the CLI accepts; the Collector's pipeline goes from OTLP to Jaeger; Prometheus scrapes
the bridge as job "otel-bridge" and loads deploy/prometheus/alerts.yml itself (promtool checks
the configuration as the container sees it); Grafana gets Prometheus and Jaeger data sources
and its dashboard provider reads the repository's dashboards/.
tests/integration/deploy/test_deploy_compose_up.py starts the stack for real.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from otel_bridge.cli._checks import prometheus_wanted
from otel_bridge.cli._parser import build_parser
from tests import paths
from tests.integration.deploy.test_deploy_docker import bridge_args
from tests.integration.test_alert_rules import alert_rules
from tests.prometheus import find_binary
from tests.unit.deploy.test_dashboards import DASHBOARD_FILES, load_dashboard

ROOT = paths.REPO
COMPOSE_DIR = ROOT / "deploy" / "compose"
COMPOSE = COMPOSE_DIR / "compose.yaml"
SERVICES = {"otel-bridge", "otel-collector", "jaeger", "prometheus", "grafana"}
CONFIG_FILE = "/etc/otel-bridge/otel-bridge.toml"


@functools.cache
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def service(name: str) -> dict[str, Any]:
    found: dict[str, Any] = compose()["services"][name]
    return found


def binds(name: str) -> dict[str, tuple[str, str]]:
    """container path -> (host source, mode) of a service's short-syntax volumes."""
    found = {}
    for entry in service(name).get("volumes", []):
        # SOURCE:TARGET[:MODE], SOURCE may be a ${VAR:-default} with a colon of its own
        split = entry.index("}") + 1 if entry.startswith("${") else entry.index(":")
        source, rest = entry[:split], entry[split + 1 :].split(":")
        found[rest[0]] = (source, rest[1] if len(rest) > 1 else "rw")
    return found


def repo_file(source: str) -> Path | None:
    """The repository path of a relative bind source, None for a named volume or a path
    outside the repository (~/.copilot)."""
    if not source.startswith("."):
        return None
    return (COMPOSE_DIR / source).resolve()


def in_container(name: str, container_path: str) -> Path:
    """The repository file a service sees at `container_path`, through its bind mounts."""
    path = PurePosixPath(container_path)
    for target, (source, _) in sorted(binds(name).items(), key=lambda item: -len(item[0])):
        if path == PurePosixPath(target) or PurePosixPath(target) in path.parents:
            host = repo_file(source)
            assert host is not None, f"{container_path} of {name} is not from the repository"
            return host / path.relative_to(target)
    raise AssertionError(f"{container_path} is mounted in no volume of {name}")


def bridge_options() -> Any:
    """The options the bridge runs with: its command line, and the file of its --config read
    from the repository file mounted there, as the CLI reads them."""
    command = service("otel-bridge")["command"]
    config = build_parser().parse_args(command).config
    files = {} if config is None else {str(config): in_container("otel-bridge", str(config))}
    return bridge_args(command, files)


def test_one_compose_file_starts_the_whole_stack() -> None:
    assert set(compose()["services"]) == SERVICES
    for name, spec in compose()["services"].items():
        if "image" in spec and "build" not in spec:
            image = spec["image"]
            assert re.search(r":[\w.-]+$", image) and not image.endswith(":latest"), (
                f"{name}: pin the image's version ({image})"
            )
        for port in spec.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert service("otel-collector")["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert service("jaeger")["image"].startswith("jaegertracing/jaeger:")
    build = service("otel-bridge")["build"]
    assert (COMPOSE_DIR / build["context"] / build["dockerfile"]).resolve() == ROOT / "Dockerfile"


def test_every_mounted_file_exists_in_the_repository() -> None:
    mounted = 0
    for name in SERVICES:
        for source, mode in binds(name).values():
            host = repo_file(source)
            if host is None:
                continue
            assert host.exists(), f"{name} mounts {source}, which is not in the repository"
            assert ROOT in host.parents, f"{name} mounts {source} from outside the repository"
            assert mode == "ro", f"{name} mounts {source} writable"
            mounted += 1
    assert mounted == 6  # the bridge's config, collector, prometheus (2), grafana (2)


def test_the_bridge_reads_copilot_home_read_only_and_exports_to_the_collector() -> None:
    bridge = service("otel-bridge")
    copilot = binds("otel-bridge")["/copilot"]
    assert copilot == ("${COPILOT_HOME:-~/.copilot}", "ro")
    state_source, state_mode = binds("otel-bridge")["/var/lib/otel-bridge"]
    assert state_source in compose()["volumes"] and state_mode == "rw"
    assert bridge["read_only"] is True
    assert bridge["user"].split(":")[0].startswith("${OTEL_BRIDGE_UID")
    args = bridge_options()
    assert args.command == "run"
    assert [str(p) for p in args.session_state] == ["/copilot/session-state"]
    assert args.prometheus_host == "0.0.0.0"
    grace = int(bridge["stop_grace_period"].rstrip("s"))
    assert grace > args.export_timeout
    environment = bridge["environment"]
    assert environment["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert environment["OTEL_METRICS_EXPORTER"] == "prometheus"


def test_the_bridge_takes_its_options_from_the_mounted_file() -> None:
    """run's options are in deploy/compose/otel-bridge.toml, mounted read-only; every option
    the command line gave before is still set, and the port counts as given (Prometheus
    served, as with --prometheus-port)."""
    assert service("otel-bridge")["command"] == ["run", "--config", CONFIG_FILE]
    assert in_container("otel-bridge", CONFIG_FILE) == COMPOSE_DIR / "otel-bridge.toml"
    assert binds("otel-bridge")[CONFIG_FILE][1] == "ro"
    args = bridge_options()
    former = {
        "session_state": [Path("/copilot/session-state")],
        "prometheus_host": "0.0.0.0",
        "prometheus_port": 9464,
        "export_timeout": 20.0,
    }
    assert {dest: getattr(args, dest) for dest in former} == former
    # the checkpoints in the state volume, named in the file rather than left to the image
    assert str(args.state_dir) in binds("otel-bridge") and not args.no_checkpoints
    assert prometheus_wanted(args)
    # what the host's loopback publishes is the port the file serves
    (published,) = service("otel-bridge")["ports"]
    assert published.rsplit(":", 1)[1] == str(args.prometheus_port)


def test_the_collector_takes_otlp_and_sends_traces_to_jaeger() -> None:
    collector = service("otel-collector")
    config_path = in_container("otel-collector", "/etc/otelcol-contrib/config.yaml")
    config = yaml.safe_load(config_path.read_text())
    receivers = config["receivers"]["otlp"]["protocols"]
    assert receivers["http"]["endpoint"] == "0.0.0.0:4318"  # what the bridge sends to
    assert receivers["grpc"]["endpoint"] == "0.0.0.0:4317"
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["receivers"] == ["otlp"]
    for kind in ("receivers", "processors", "exporters"):
        for component in pipeline.get(kind, []):
            assert component in config[kind], f"{component} is not configured"
    (exporter,) = pipeline["exporters"]
    assert exporter.split("/")[0] == "otlp_grpc"
    assert config["exporters"][exporter]["endpoint"] == "jaeger:4317"
    jaeger_command = " ".join(service("jaeger")["command"])
    assert "receivers.otlp.protocols.grpc.endpoint=0.0.0.0:4317" in jaeger_command
    assert "jaeger" in collector["depends_on"]


def test_prometheus_scrapes_the_bridge_and_loads_the_alert_rules(tmp_path: Path) -> None:
    command = service("prometheus")["command"]
    config_flag = next(flag for flag in command if flag.startswith("--config.file="))
    container_config = config_flag.split("=", 1)[1]
    config_file = in_container("prometheus", container_config)
    config = yaml.safe_load(config_file.read_text())
    (job,) = config["scrape_configs"]
    assert job["job_name"] == "otel-bridge"  # alerts.yml: up{job="otel-bridge"}
    args = bridge_options()
    assert job["static_configs"][0]["targets"] == [f"otel-bridge:{args.prometheus_port}"]
    (rule_file,) = config["rule_files"]
    rules_in_container = PurePosixPath(container_config).parent / rule_file
    assert in_container("prometheus", str(rules_in_container)) == (
        ROOT / "deploy" / "prometheus" / "alerts.yml"
    )
    # promtool, on the configuration laid out as the container sees it
    layout = tmp_path / "etc-prometheus"
    layout.mkdir()
    shutil.copy(config_file, layout / PurePosixPath(container_config).name)
    shutil.copy(ROOT / "deploy" / "prometheus" / "alerts.yml", layout / rule_file)
    done = subprocess.run(
        [find_binary("promtool"), "check", "config", str(layout / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(alert_rules())} rules found" in done.stdout + done.stderr


def test_grafana_provisions_both_data_sources_and_the_repository_dashboards() -> None:
    provisioning = in_container("grafana", "/etc/grafana/provisioning")
    sources = yaml.safe_load((provisioning / "datasources" / "datasources.yaml").read_text())
    by_type = {source["type"]: source for source in sources["datasources"]}
    assert by_type["prometheus"]["url"] == "http://prometheus:9090"
    assert by_type["prometheus"]["isDefault"] is True
    assert by_type["jaeger"]["url"] == "http://jaeger:16686"
    providers = yaml.safe_load((provisioning / "dashboards" / "dashboards.yaml").read_text())
    (provider,) = providers["providers"]
    assert provider["type"] == "file"
    dashboards = in_container("grafana", provider["options"]["path"])
    assert dashboards == ROOT / "dashboards"
    assert sorted(p.name for p in dashboards.glob("*.json")) == sorted(DASHBOARD_FILES)
    # the dashboards' variables find these data sources by type
    for name in DASHBOARD_FILES:
        variables = {v["name"]: v for v in load_dashboard(name)["templating"]["list"]}
        assert variables["datasource"]["query"] in by_type
        assert variables["jaeger_datasource"]["query"] in by_type


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_services_restart_and_start_in_order(name: str) -> None:
    spec = service(name)
    assert spec["restart"] == "unless-stopped"
    for dependency in spec.get("depends_on", []):
        assert dependency in SERVICES
