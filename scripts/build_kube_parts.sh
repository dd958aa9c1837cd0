#!/usr/bin/env bash
# Builds what the Helm chart's tests (tests/integration/deploy/test_deploy_helm*.py) run for
# real, once, into the cache of the other Go-built test parts (scripts/build_test_parts.sh):
#   - helm v4 ($HELM_VERSION), `go install helm.sh/helm/v4/cmd/helm`: lint, template, package,
#     install and upgrade of deploy/helm/otel-bridge;
#   - etcd ($ETCD_VERSION, go.etcd.io/etcd/server/v3) and kube-apiserver (k8s.io/kubernetes at
#     $KUBE_VERSION): a real API server, without a kubelet, that `helm install` talks to and
#     whose own validation must accept every object of the chart;
#   - the prometheus-operator CRDs ($PROM_OPERATOR_VERSION, example/prometheus-operator-crd/ of
#     its Go module), applied to that server so that the ServiceMonitor, PodMonitor and
#     PrometheusRule are checked against their schemas.
# Everything comes from the Go module proxy. The cache is $OTEL_BRIDGE_TEST_PARTS, by default
# ${XDG_CACHE_HOME:-~/.cache}/otel-bridge/test-parts (GOMODCACHE and GOCACHE there too); a part
# already built is not built again. tests/goparts.py finds them there. Cold, on 2 cores: helm
# about 3 minutes, etcd about 1, kube-apiserver about 5; warm: nothing to do.
# Without `go` it says so and builds nothing: the tests that need these parts then skip, saying
# why.
set -euo pipefail
cd "$(dirname "$0")/.."

# Keep these in step with tests/goparts.py (tests/unit/deploy/test_helm_parts.py checks that
# they agree).
HELM_VERSION=v4.3.2
ETCD_VERSION=v3.6.16
KUBE_VERSION=v1.34.4
PROM_OPERATOR_VERSION=v0.85.0

cache="${OTEL_BRIDGE_TEST_PARTS:-${XDG_CACHE_HOME:-$HOME/.cache}/otel-bridge/test-parts}"

# openssl makes the API server's self-signed certificate and signing key (tests/goparts.py);
# Debian's, as scripts/test.sh installs its other tools (needs root)
if ! command -v openssl >/dev/null 2>&1; then
    apt-get update -q && apt-get install -y -q openssl
fi

if ! command -v go >/dev/null 2>&1; then
    echo "build_kube_parts: no Go toolchain: helm, etcd and kube-apiserver are not built" \
        "(the tests that need them will skip)" >&2
    exit 0
fi

mkdir -p "$cache"
export GOMODCACHE="$cache/gomodcache" GOCACHE="$cache/gocache"
export GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false"

module_dir() { # the module's source, from the proxy, into GOMODCACHE (read-only there)
    go mod download -json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])'
}

# helm: a plain `go install` (no replace directive in its go.mod). The version variable is set
# as helm's Makefile does, so that `helm version` names it.
helm_dir="$cache/helm-$HELM_VERSION"
if [ ! -x "$helm_dir/helm" ]; then
    echo "build_kube_parts: building helm $HELM_VERSION into $helm_dir"
    start=$SECONDS
    GOBIN="$helm_dir" go install -trimpath \
        -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
        "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
    echo "build_kube_parts: helm built in $((SECONDS - start)) s"
fi

# etcd: server/v3's go.mod replaces its sibling modules with ../api etc., which
# `go install module@version` refuses: build a copy of the module with the replace lines
# dropped (the siblings then come from the proxy at the versions go.mod requires).
etcd_dir="$cache/etcd-$ETCD_VERSION"
if [ ! -x "$etcd_dir/etcd" ]; then
    echo "build_kube_parts: building etcd $ETCD_VERSION into $etcd_dir"
    start=$SECONDS
    src=$(module_dir "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
    rm -rf "$etcd_dir/src"
    mkdir -p "$etcd_dir"
    cp -r "$src" "$etcd_dir/src"
    chmod -R u+w "$etcd_dir/src"
    python3 - "$etcd_dir/src/go.mod" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
text = re.sub(r"^replace \($.*?^\)$", "", text, flags=re.S | re.M)
text = re.sub(r"^replace .*$", "", text, flags=re.M)
open(path, "w").write(text)
EOF
    (cd "$etcd_dir/src" && go build -trimpath -ldflags="-s -w" -o "$etcd_dir/etcd.tmp" .)
    mv "$etcd_dir/etcd.tmp" "$etcd_dir/etcd"
    rm -rf "$etcd_dir/src"
    echo "build_kube_parts: etcd built in $((SECONDS - start)) s"
fi

# kube-apiserver: k8s.io/kubernetes is built against its staging/ directory (go.work, vendor/
# and `replace k8s.io/X => ./staging/src/k8s.io/X`); the published k8s.io/X modules at the
# matching v0 version are the same code. The version is stamped as kubernetes' own build does,
# so that the server reports it and charts' kubeVersion checks work.
kube_dir="$cache/kube-apiserver-$KUBE_VERSION"
if [ ! -x "$kube_dir/kube-apiserver" ]; then
    echo "build_kube_parts: building kube-apiserver $KUBE_VERSION into $kube_dir"
    start=$SECONDS
    src=$(module_dir "k8s.io/kubernetes@$KUBE_VERSION")
    rm -rf "$kube_dir/src"
    mkdir -p "$kube_dir"
    cp -r "$src" "$kube_dir/src"
    chmod -R u+w "$kube_dir/src"
    rm -rf "$kube_dir/src/vendor" "$kube_dir/src/go.work" "$kube_dir/src/go.work.sum"
    python3 - "$kube_dir/src/go.mod" "v0.${KUBE_VERSION#v1.}" <<'EOF'
import re, sys
path, staging_version = sys.argv[1], sys.argv[2]
text = open(path).read()
modules = re.findall(r"^\s*(?:replace\s+)?(k8s\.io/\S+)\s+=>\s+\./staging/\S+\s*$", text, re.M)
text = re.sub(r"^\s*(?:replace\s+)?k8s\.io/\S+\s+=>\s+\./staging/\S+\s*$\n", "", text, flags=re.M)
text = re.sub(r"^replace \(\s*\)\s*$", "", text, flags=re.M)
for module in modules:
    text = re.sub(rf"^(\s*{re.escape(module)}) v\S+", rf"\1 {staging_version}", text, flags=re.M)
    if not re.search(rf"^\s*{re.escape(module)} ", text, re.M):
        text += f"\nrequire {module} {staging_version}\n"
open(path, "w").write(text)
EOF
    (cd "$kube_dir/src" && go build -trimpath \
        -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)" \
        -o "$kube_dir/kube-apiserver.tmp" ./cmd/kube-apiserver)
    mv "$kube_dir/kube-apiserver.tmp" "$kube_dir/kube-apiserver"
    rm -rf "$kube_dir/src"
    echo "build_kube_parts: kube-apiserver built in $((SECONDS - start)) s"
fi

# The prometheus-operator CRDs: YAML files of its module, copied out.
crd_dir="$cache/prometheus-operator-crd-$PROM_OPERATOR_VERSION"
if [ ! -f "$crd_dir/.done" ]; then
    echo "build_kube_parts: prometheus-operator $PROM_OPERATOR_VERSION CRDs into $crd_dir"
    src=$(module_dir "github.com/prometheus-operator/prometheus-operator@$PROM_OPERATOR_VERSION")
    rm -rf "$crd_dir"
    mkdir -p "$crd_dir"
    cp "$src"/example/prometheus-operator-crd/*.yaml "$crd_dir/"
    chmod u+w "$crd_dir"/*.yaml
    touch "$crd_dir/.done"
fi

echo "build_kube_parts: $helm_dir/helm"
echo "build_kube_parts: $etcd_dir/etcd"
echo "build_kube_parts: $kube_dir/kube-apiserver"
echo "build_kube_parts: $crd_dir"
