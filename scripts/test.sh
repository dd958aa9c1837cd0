#!/usr/bin/env bash
# The README's test command: install everything the tests need on a fresh machine, then lint and
# run the suite. Extra arguments go to pytest (e.g. `bash scripts/test.sh tests/e2e -x`).
#   - Debian's prometheus: a real Prometheus and promtool, which the tests start on 127.0.0.1
#     (apt does not start it); needs root, or run the apt-get line with sudo first.
#   - the real Copilot CLI 1.0.102 from npm, into ./node_modules (no package.json is written).
#   - the package with its test extras (pytest, the OTLP protobufs, the Copilot SDK, Phoenix...).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null 2>&1; then
    apt-get update -q && apt-get install -y -q prometheus
fi
npm install --no-save --no-audit --no-fund --prefix . @github/copilot@1.0.102
python -m pip install -e ".[test]"
ruff check otel_bridge tests scripts bench
python -m pytest "$@"
