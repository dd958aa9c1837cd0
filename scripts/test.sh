#!/usr/bin/env bash
# The README's test command: install everything the tests need on a fresh machine, then check
# the repository, lint, type-check and run the suite. Extra arguments go to pytest
# (e.g. `bash scripts/test.sh tests/e2e -x`).
#   - Debian's prometheus: a real Prometheus and promtool, which the tests start on 127.0.0.1
#     (apt does not start it); needs root, or run the apt-get line with sudo first.
#   - Debian's podman, runc, podman-compose and debootstrap: the container image and the
#     compose stack built and run for real; Debian's tmux: the interactive CLI in a terminal.
#   - the real Copilot CLI 1.0.102 from npm, into ./node_modules (no package.json is written),
#     and the older CLIs of $OTEL_BRIDGE_OLDER_CLIS (default "1.0.81 1.0.92"; "" for none),
#     each into its own prefix .copilot-cli/<version>/ (git ignores it). After the whole suite,
#     the end-to-end tests run again against each of them (OTEL_BRIDGE_TEST_COPILOT=<version>;
#     about 1.5 min each): what differs between versions is in docs/cli-versions.md. With
#     pytest arguments only the suite asked for runs, against $OTEL_BRIDGE_TEST_COPILOT if set.
#   - the package with its test extras (pytest, mypy, the OTLP protobufs, the Copilot SDK,
#     Phoenix...), at the exact versions of constraints.txt; the package itself only asks for
#     ranges (pyproject.toml), so that apps can install it beside their own OpenTelemetry.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1; then
    apt-get update -q && apt-get install -y -q prometheus
fi
# podman (with runc: crun needs cgroups a container or small VM may not delegate),
# podman-compose and debootstrap: tests/integration/deploy/test_deploy_docker.py and
# tests/integration/deploy/test_deploy_compose_up.py build the images and run them for real, on a Debian base made
# once and cached beside the Go parts (tests/podman.py).
for tool in podman runc podman-compose debootstrap; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        apt-get update -q && apt-get install -y -q podman runc podman-compose debootstrap
        break
    fi
done
# tmux: the interactive CLI runs in it, so that a test can leave a prompt unanswered and answer
# it (tests/e2e/test_cli_running_now.py)
if ! command -v tmux >/dev/null 2>&1; then
    apt-get update -q && apt-get install -y -q tmux
fi
export OTEL_BRIDGE_TEST_SH=1 # what this script installs is there: a test that needs it never skips
bash scripts/build_test_parts.sh  # Jaeger and the Collector (Go), cached outside the repository
# helm, etcd and kube-apiserver (Go) and the prometheus-operator CRDs, for the Helm chart's tests
bash scripts/build_kube_parts.sh
npm install --no-save --no-audit --no-fund --prefix . @github/copilot@1.0.102
older_clis="${OTEL_BRIDGE_OLDER_CLIS-1.0.81 1.0.92}"
for version in $older_clis; do
    npm install --no-save --no-audit --no-fund --prefix ".copilot-cli/$version" \
        "@github/copilot@$version"
done
python -m pip install -c constraints.txt -e ".[test]"
bash scripts/build_deploy_tools.sh  # systemd-analyze (apt), kustomize (Go): the deployment tests

python scripts/check_repo.py  # no tracked file over 5 MiB, none that .gitignore excludes
ruff check otel_bridge tests scripts bench
ruff format --check otel_bridge tests scripts bench
mypy  # strict, on otel_bridge (configuration in pyproject.toml)
python -m pytest "$@"
if [ $# -eq 0 ]; then
    for version in $older_clis; do
        echo "--- the end-to-end tests against Copilot CLI $version"
        OTEL_BRIDGE_TEST_COPILOT="$version" python -m pytest tests/e2e
    done
fi
