#!/usr/bin/env bash
# The package as a user installs it: `python -m build` makes a wheel and an sdist, each is
# installed with `pipx install` into a home of its own (a new virtual environment, the
# dependencies from the package index, as a user gets them), and its `otel-bridge --version`
# must say the version of the build. That version is the git tag's (setuptools-scm,
# pyproject.toml): at a release tag v<version> exactly <version> (tests/unit/repo/test_changelog.py
# checks the tag and CHANGELOG.md agree), elsewhere a development version after the last tag,
# never the fallback of a build that found no git metadata. The sdist holds the package and what
# its build reads, not the rest of the repository (MANIFEST.in).
# Nothing is left in the checkout: the build and the installs go to a temporary directory, and
# the version file the build writes into the package (otel_bridge/_scm_version.py) is removed
# unless it was there before (an editable install writes it too).
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet -c constraints.txt build pipx
work="$(mktemp -d)"
version_file=otel_bridge/_scm_version.py
if [ -e "$version_file" ]; then
    trap 'rm -rf "$work"' EXIT
else
    trap 'rm -rf "$work" "$version_file"' EXIT
fi
python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || {
    cat "$work/build.log"
    exit 1
}
wheels=("$work"/dist/otel_bridge-*-py3-none-any.whl)
if [ "${#wheels[@]}" -ne 1 ] || [ ! -e "${wheels[0]}" ]; then
    echo "not one wheel: $(ls "$work/dist")" >&2
    exit 1
fi
wheel="${wheels[0]}"
version="$(basename "$wheel")"
version="${version#otel_bridge-}"
version="${version%-py3-none-any.whl}"
sdist="$work/dist/otel_bridge-$version.tar.gz"
[ -e "$sdist" ] || {
    echo "no sdist of version $version: $(ls "$work/dist")" >&2
    exit 1
}

# The version a tag gives: at a tag v1.2.3 exactly 1.2.3; after it 1.2.4.devN+g<commit>[.d<date>
# when the tree has changes]; with no tag yet 0.1.devN+g<commit>. Never "0.0", pyproject's
# fallback_version: that build found no git metadata.
tags="$(git tag --list 'v*' --points-at HEAD)"
if [ -n "$tags" ] && git diff --quiet HEAD; then
    # packaging (build's own) compares as PEP 440 does: the tag v1.2.3-rc.1 is the version 1.2.3rc1
    python - "$version" $tags <<'PY' || exit 1
import sys
from packaging.version import Version

version, tags = sys.argv[1], sys.argv[2:]
if version not in {str(Version(tag[1:])) for tag in tags}:
    sys.exit(f"HEAD is tagged {' '.join(tags)} but the build is version {version}")
PY
elif ! [[ "$version" =~ ^[0-9]+(\.[0-9]+)*([a-z]+[0-9]+)?\.dev[0-9]+\+g[0-9a-f]+(\.d[0-9]{8})?$ ]]; then
    echo "version $version: not the development version setuptools-scm gives an untagged commit" >&2
    exit 1
fi

# The sdist: the package, its metadata and what its build reads; nothing else of the repository.
python - "$sdist" <<'PY'
import sys
import tarfile

with tarfile.open(sys.argv[1]) as sdist:
    names = [member.name.split("/", 1)[1] for member in sdist.getmembers() if member.isfile()]
top = {"PKG-INFO", "setup.cfg", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"}
stray = [n for n in names if n not in top and n.split("/")[0] not in {"otel_bridge", "otel_bridge.egg-info"}]
stray += [n for n in names if n.startswith("otel_bridge/") and not n.endswith((".py", "py.typed"))]
if stray or "otel_bridge/_scm_version.py" not in names:
    sys.exit(f"the sdist holds more than the package, or no version file: {stray}")
PY

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
