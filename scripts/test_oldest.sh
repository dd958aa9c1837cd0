#!/usr/bin/env bash
# The unit suite on the oldest dependency versions pyproject.toml accepts (constraints-oldest.txt),
# in its own virtual environment (.venv-oldest), so that the ranges apps rely on stay true.
# Left out, by marker (tests/conftest.py gives them): the end-to-end suite (`e2e`), which
# scripts/test.sh runs on current versions, and the tests that need a test-only extra: the Copilot
# SDK (`sdk`), Phoenix (`phoenix`), the Grafana SDK (`grafana`: the dashboards and what imports
# them) and import-linter (`import_linter`: the code's shape, not its dependencies). Left out by
# name: the tests that count the requests the 1.45 HTTP exporter makes inside one export call:
# 1.44's retries a 501 and ignores Retry-After there (1.45 retries only 429, 502, 503 and 504,
# honouring it); the bridge reads the last answer either way.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv-oldest
.venv-oldest/bin/python -m pip install --quiet --upgrade pip
.venv-oldest/bin/python -m pip install --quiet -c constraints-oldest.txt \
    -r <(grep -v '^#' constraints-oldest.txt | cut -d= -f1)
.venv-oldest/bin/python -m pip install --quiet --no-deps -e .
.venv-oldest/bin/python -m pip check
.venv-oldest/bin/python -m pytest -q -p no:phoenix \
    -m "not e2e and not sdk and not phoenix and not grafana and not import_linter and not kubernetes_validate" \
    --deselect "tests/integration/test_otlp_receiver.py::test_exporter_retries_after_hint[http-throttle]" \
    --deselect "tests/integration/test_export_failures.py::test_a_permanent_refusal_is_said_so_and_sent_once[not_implemented-endpoint-501-UNIMPLEMENTED-http/protobuf]" \
    --deselect "tests/integration/test_export_failures.py::test_a_transient_refusal_is_retried_and_carries_retry_after[throttle-http/protobuf]" \
    --deselect "tests/integration/test_export_failures.py::test_replay_to_an_endpoint_that_takes_no_traces_asks_once_and_says_what_to_check[not_implemented-http/protobuf]" \
    "$@"
