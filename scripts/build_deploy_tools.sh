#!/usr/bin/env bash
# What the deployment tests (tests/integration/deploy/, tests/test_deploy_*.py) need beyond the
# Python test extras:
#   - systemd-analyze (Debian's systemd package, which apt does not start), to verify the user
#     unit that `otel-bridge install-service` writes
#     (tests/integration/deploy/test_deploy_service.py);
#   - kustomize, to build deploy/kubernetes (tests/integration/deploy/test_deploy_kubernetes.py).
# promtool, which tests/integration/deploy/test_deploy_compose.py also uses, comes with scripts/test.sh's
# prometheus. Needs root for apt-get, as scripts/test.sh. The image and the compose stack,
# built and run with podman (tests/podman.py), need what scripts/test.sh installs with apt
# (podman, runc, podman-compose, debootstrap) and nothing from here.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v systemd-analyze >/dev/null 2>&1; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd
fi

# kustomize, built from the Go module proxy into the user's cache (a rerun, even from a fresh
# clone, reuses it) and linked as .deploy-tools/bin/kustomize (git ignores it), for
# tests/integration/deploy/test_deploy_kubernetes.py's `kustomize build deploy/kubernetes`. About 1.5 minutes
# (45 CPU-seconds) the first time. v5.7.1: the newest, v5.8.3, needs Go 1.27.
KUSTOMIZE_VERSION=v5.7.1
cached="${XDG_CACHE_HOME:-$HOME/.cache}/otel-bridge/test-parts/kustomize-$KUSTOMIZE_VERSION"
if ! [ -x "$cached/kustomize" ]; then
    GOBIN="$cached" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
fi
mkdir -p .deploy-tools/bin
ln -sf "$cached/kustomize" .deploy-tools/bin/kustomize
