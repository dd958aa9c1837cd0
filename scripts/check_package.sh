#!/usr/bin/env bash
# The package as a user installs it: `python -m build` makes a wheel and an sdist, each is
# installed with `pipx install` into a home of its own (a new virtual environment, the
# dependencies from the package index, as a user gets them), and its `otel-bridge --version`
# must say the version of otel_bridge/_version.py, the one a release tag v<version> names
# (tests/unit/repo/test_changelog.py checks the tag, the version and CHANGELOG.md agree).
# Nothing is left in the checkout: the build and the installs go to a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet -c constraints.txt build pipx
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
version="$(python -c 'import runpy; print(runpy.run_path("otel_bridge/_version.py")["__version__"])')"
python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || {
    cat "$work/build.log"
    exit 1
}
wheel="$(ls "$work"/dist/otel_bridge-"$version"-py3-none-any.whl)"
sdist="$(ls "$work"/dist/otel_bridge-"$version".tar.gz)"
for artifact in "$wheel" "$sdist"; do
    name="$(basename "$artifact")"
    export PIPX_HOME="$work/pipx-$name" PIPX_BIN_DIR="$work/bin-$name"
    python -m pipx install --quiet "$artifact" >"$work/pipx.log" 2>&1 || {
        cat "$work/pipx.log"
        exit 1
    }
    said="$("$PIPX_BIN_DIR/otel-bridge" --version)"
    if [ "$said" != "otel-bridge $version" ]; then
        echo "$name: otel-bridge --version says '$said', not 'otel-bridge $version'" >&2
        exit 1
    fi
    "$PIPX_BIN_DIR/otel-bridge" stats "$PWD/tests/fixtures/mcp_tools/events.jsonl" >/dev/null
    echo "$name: installs with pipx; otel-bridge $version"
done
