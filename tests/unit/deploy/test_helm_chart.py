"""The Helm chart's files (deploy/helm/otel-bridge), checked without helm: every value is
documented and the README's table is made from those comments; the copies of the alert rules
and dashboards are their sources; the schema is closed (an unknown key is refused) and its
`config` keys are exactly `otel-bridge run`'s options that the chart leaves to the user, with
their types; the versions of the Go-built parts agree between the build script and the tests.
helm itself runs in tests/integration/deploy/test_deploy_helm.py.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from otel_bridge.cli._config_file import config_keys
from otel_bridge.cli._parser import build_parser, command_parser
from tests import goparts, paths
from tests.releases import deployed_version

CHART = paths.REPO / "deploy" / "helm" / "otel-bridge"
VALUES = CHART / "values.yaml"
SCHEMA = CHART / "values.schema.json"
BUILD_SCRIPT = paths.REPO / "scripts" / "build_kube_parts.sh"
#: run's options that the chart writes itself into otel-bridge.toml (where the volumes are
#: mounted, where the probes ask): not for `config`.
CHART_KEYS = {"session-state", "state-dir", "prometheus-host", "prometheus-port"}
#: ...and options that would defeat the chart's design: no checkpoints on a DaemonSet that
#: resumes from them, no port for the probes.
REFUSED_KEYS = {"no-checkpoints", "no-prometheus"}


@functools.cache
def sync_files() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sync_files", CHART.parent / "sync_files.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA.read_text())
    return loaded


# ---------------------------------------------------------------------- Chart.yaml
def test_chart_yaml_is_v2_with_the_released_version_and_a_kube_version_range() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "otel-bridge"
    # the image's default tag: a released version (CHANGELOG.md), the package's being the tag's
    assert chart["appVersion"] == deployed_version()
    # native sidecars need 1.29; the bounds are what test_deploy_helm validates against
    assert re.fullmatch(r">=1\.(\d+)\.0-0 <1\.(\d+)\.0-0", chart["kubeVersion"])
    assert chart["kubeVersion"].startswith(">=1.29.0-0")
    for name in ("NOTES.txt", "_helpers.tpl"):
        assert (CHART / "templates" / name).is_file()


# ---------------------------------------------------------------------- values and README
def test_every_value_has_a_comment() -> None:
    documented = dict(sync_files().documented_values(VALUES.read_text()))
    values = yaml.safe_load(VALUES.read_text())

    def leaves(node: dict[str, Any], prefix: str = "") -> set[str]:
        """Every path of the values down to a documented one."""
        found = set()
        for key, value in node.items():
            path = prefix + key
            if path in documented:
                found.add(path)
            else:
                assert isinstance(value, dict), f"{path} is not documented"
                found |= leaves(value, path + ".")
        return found

    assert leaves(values) == documented.keys()
    assert all(len(text) > 10 for text in documented.values()), documented
    assert {"mode", "config", "otlp.endpoint", "daemonset.checkpoints.type"} <= documented.keys()


def test_an_undocumented_value_is_found() -> None:
    module = sync_files()
    with pytest.raises(module.UndocumentedValue, match=r"image\.tag"):
        module.documented_values("image:\n  # -- the name\n  repository: x\n  tag: y\n")
    # a section is not a value: its keys are
    assert module.documented_values("a:\n  # -- b's text\n  b: 1\n") == [("a.b", "b's text")]


def test_the_readme_table_is_made_from_values_yaml() -> None:
    readme = (CHART / "README.md").read_text()
    module = sync_files()
    assert readme == module.readme_with_table(readme, VALUES.read_text()), (
        "deploy/helm/otel-bridge/README.md is out of date: python deploy/helm/sync_files.py"
    )
    for path, _ in module.documented_values(VALUES.read_text()):
        assert f"| `{path}` |" in readme


def test_the_chart_files_are_copies_of_their_one_source() -> None:
    pairs = sync_files().sources()
    assert CHART / "files" / "alerts.yml" in pairs
    assert len([p for p in pairs if p.suffix == ".json"]) == len(
        list((paths.REPO / "dashboards").glob("*.json"))
    )
    on_disk = set((CHART / "files").rglob("*.*"))
    assert on_disk == set(pairs), "stale or missing copies: python deploy/helm/sync_files.py"
    for copy, source in pairs.items():
        assert copy.read_bytes() == source.read_bytes(), (
            f"{copy.relative_to(paths.REPO)} differs from {source.relative_to(paths.REPO)}: "
            "python deploy/helm/sync_files.py"
        )


# ---------------------------------------------------------------------- values.schema.json
def objects(node: Any, where: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema object that lists properties, with its path."""
    found = []
    if isinstance(node, dict):
        if "properties" in node:
            found.append((where, node))
        for key, value in node.items():
            found += objects(value, f"{where}/{key}")
    return found


def test_the_schema_is_closed_and_types_every_value() -> None:
    closed = objects(schema())
    assert len(closed) > 10
    for where, node in closed:
        assert node.get("additionalProperties") is False, f"{where} takes unknown keys"
        assert node["type"] == "object", where
    values = yaml.safe_load(VALUES.read_text())

    def walk(value: Any, node: dict[str, Any], path: str) -> None:
        assert "type" in node or "anyOf" in node, f"{path} has no type"
        if isinstance(value, dict) and "properties" in node:
            assert value.keys() <= node["properties"].keys(), path
            for key, item in value.items():
                walk(item, node["properties"][key], f"{path}.{key}")

    walk(values, schema(), "values")
    assert set(values) | {"global"} == set(schema()["properties"])


def run_parser() -> argparse.ArgumentParser:
    return command_parser(build_parser(), "run")


_NUMBERS = {"non_negative_float", "positive_float", "ratio", "metrics_interval", "poll_interval"}
_INTEGERS = {"non_negative_int", "positive_int", "queue_size", "port"}
_TYPES = {
    "_StoreTrueAction": {"boolean"},
    "_AppendAction": {"array"},
}


def test_the_config_keys_are_run_options_with_their_types() -> None:
    """`config` takes every option of otel-bridge.toml but the ones the chart owns, each with
    a type the CLI's own parser accepts: a wrong key or type fails at install, not in a pod."""
    properties = schema()["properties"]["config"]["properties"]
    keys = config_keys(run_parser())
    assert properties.keys() == keys.keys() - CHART_KEYS - REFUSED_KEYS
    for key, node in properties.items():
        action = keys[key]
        kind = type(action).__name__
        type_name = getattr(action.type, "__name__", None)
        if kind in _TYPES:
            assert node["type"] in _TYPES[kind], key
        elif action.choices:
            assert node["enum"] == list(action.choices), key
        elif type_name in _NUMBERS:
            assert node["type"] == "number", key
        elif type_name in _INTEGERS:
            assert node["type"] == "integer", key
        else:
            assert type_name in (None, "path", "root_name", "metric_labels", "shard", "user_id")
            assert node["type"] == "string", key
    assert yaml.safe_load(VALUES.read_text())["config"].keys() <= properties.keys()


# ---------------------------------------------------------------------- the Go-built parts
def test_the_build_script_builds_the_versions_the_tests_look_for() -> None:
    script = BUILD_SCRIPT.read_text()
    found = dict(re.findall(r"^([A-Z_]+_VERSION)=(\S+)$", script, re.M))
    assert found == {
        "HELM_VERSION": goparts.HELM_VERSION,
        "ETCD_VERSION": goparts.ETCD_VERSION,
        "KUBE_VERSION": goparts.KUBE_VERSION,
        "PROM_OPERATOR_VERSION": goparts.PROM_OPERATOR_VERSION,
    }
    assert "build_kube_parts.sh" in (paths.REPO / "scripts" / "test.sh").read_text()
    assert goparts.helm_binary.__doc__ and Path(goparts.KUBE_BUILD_SCRIPT) == BUILD_SCRIPT
