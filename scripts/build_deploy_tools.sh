#!/usr/bin/env bash
# What the deployment tests (tests/test_deploy_*.py) need beyond the Python test extras:
#   - systemd-analyze (Debian's systemd package, which apt does not start), to verify the user
#     unit that `otel-bridge install-service` writes (tests/test_deploy_service.py).
# promtool, which tests/test_deploy_compose.py also uses, comes with scripts/test.sh's
# prometheus. Needs root for apt-get, as scripts/test.sh. The real image build is opt-in
# (OTEL_BRIDGE_TEST_DOCKER=1, docs/deploy.md) and needs nothing from here.
set -euo pipefail

if ! command -v systemd-analyze >/dev/null 2>&1; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd
fi
