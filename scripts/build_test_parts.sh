#!/usr/bin/env bash
# Builds the Go programs some tests run for real, once, into a cache outside the repository:
#   - Jaeger v2 (all-in-one), github.com/jaegertracing/jaeger/cmd/jaeger at $JAEGER_VERSION, the
#     backend of tests/integration/test_jaeger.py and tests/integration/test_gateway.py;
#   - an OpenTelemetry Collector built with the Collector's builder ($COLLECTOR_VERSION) from
#     deploy/otelcol/builder-config.yaml: the gateway tier of tests/integration/test_gateway.py, and
#     the `validate` command that checks every shipped Collector configuration.
# Neither has a Python or Debian package; both come from the Go module proxy (nothing else is
# downloaded). The cache is $OTEL_BRIDGE_TEST_PARTS, by default
# ${XDG_CACHE_HOME:-~/.cache}/otel-bridge/test-parts: GOMODCACHE and GOCACHE live there too, and a
# part already built is not built again (the Collector's directory is named after a hash of its
# manifest, so editing the manifest builds a new one). tests/goparts.py finds the binaries there.
# Cold, on 2 cores: several minutes for each part; warm: nothing to do.
# Without `go` it says so and builds nothing: the tests that need these parts then skip, saying
# why.
set -euo pipefail
cd "$(dirname "$0")/.."

# Keep these in step with tests/goparts.py (tests/integration/test_gateway.py checks that they
# agree).
JAEGER_VERSION=v1.76.0
BUILDER_VERSION=v0.161.0 # the Collector release of every module in the manifest

cache="${OTEL_BRIDGE_TEST_PARTS:-${XDG_CACHE_HOME:-$HOME/.cache}/otel-bridge/test-parts}"
manifest=deploy/otelcol/builder-config.yaml

if ! command -v go >/dev/null 2>&1; then
    echo "build_test_parts: no Go toolchain: Jaeger and the Collector are not built" \
        "(the tests that need them will skip)" >&2
    exit 0
fi

mkdir -p "$cache"
export GOMODCACHE="$cache/gomodcache" GOCACHE="$cache/gocache"
export GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false"

# Jaeger: its go.mod has a replace directive, which `go install module@version` refuses, so the
# module's source is taken from the proxy and built in place, as its own main module.
jaeger_dir="$cache/jaeger-$JAEGER_VERSION"
if [ ! -x "$jaeger_dir/jaeger" ]; then
    echo "build_test_parts: building Jaeger $JAEGER_VERSION into $jaeger_dir"
    start=$SECONDS
    src=$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_VERSION" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
    rm -rf "$jaeger_dir/src"
    mkdir -p "$jaeger_dir"
    cp -r "$src" "$jaeger_dir/src"
    chmod -R u+w "$jaeger_dir/src"
    (cd "$jaeger_dir/src" && go build -trimpath -ldflags="-s -w" -o "$jaeger_dir/jaeger.tmp" ./cmd/jaeger)
    mv "$jaeger_dir/jaeger.tmp" "$jaeger_dir/jaeger"
    rm -rf "$jaeger_dir/src"
    echo "build_test_parts: Jaeger built in $((SECONDS - start)) s"
fi

# The Collector: the builder generates a main module from the manifest and compiles it.
digest=$(sha256sum "$manifest" | cut -c1-12)
otelcol_dir="$cache/otelcol-$BUILDER_VERSION-$digest"
if [ ! -x "$otelcol_dir/otelcol-bridge" ]; then
    echo "build_test_parts: building the Collector ($manifest, $BUILDER_VERSION) into $otelcol_dir"
    start=$SECONDS
    builder_dir="$cache/builder-$BUILDER_VERSION"
    if [ ! -x "$builder_dir/builder" ]; then
        GOBIN="$builder_dir" go install "go.opentelemetry.io/collector/cmd/builder@$BUILDER_VERSION"
    fi
    rm -rf "$otelcol_dir"
    mkdir -p "$otelcol_dir"
    # the manifest's output_path is relative: build from a copy, inside the cache
    cp "$manifest" "$otelcol_dir/builder-config.yaml"
    (cd "$otelcol_dir" && "$builder_dir/builder" --config builder-config.yaml --ldflags="-s -w")
    mv "$otelcol_dir/_build/otelcol-bridge" "$otelcol_dir/otelcol-bridge"
    rm -rf "$otelcol_dir/_build"
    echo "build_test_parts: Collector built in $((SECONDS - start)) s"
fi

echo "build_test_parts: $jaeger_dir/jaeger"
echo "build_test_parts: $otelcol_dir/otelcol-bridge"
