"""Podman for the tests that build and run the shipped images for real.

No image registry is reachable where the suite runs, so the base of every image is made here:
Debian bookworm with python3 and its venv module (debootstrap, from Debian's mirror or
$DEBIAN_MIRROR), trimmed as the slim images are, kept as a tarball in the test-parts cache
beside the Go parts (tests/goparts.py) and imported under the name the Dockerfile's default
base has, `python:3.11-slim-bookworm`: the Dockerfile is then built as users build it, with
one build argument, VERSION, the checkout's version (the build context has no .git to take it
from the tag). A base made once is reused by every later run.

Podman runs with a configuration and a storage of its own in that cache (CONTAINERS_CONF,
CONTAINERS_STORAGE_CONF: the machine's are never touched), with what works in a container or
a small VM without cgroup delegation: the vfs storage driver, runc (crun needs cgroups it
cannot have there), the cgroupfs manager, and ulimits below what such a sandbox allows.

Podman, runc and debootstrap come from Debian (scripts/test.sh installs them). Without them a
test skips saying so, but under scripts/test.sh or CI (OTEL_BRIDGE_TEST_SH=1, CI=true) it
fails instead: there they are installed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.goparts import cache_dir
from tests.releases import checkout_version

__all__ = [
    "BASE",
    "BRIDGE",
    "ULIMITS",
    "base_image",
    "bridge_build_args",
    "bridge_image",
    "podman",
    "podman_env",
    "require_podman",
    "wrap",
]

ROOT = Path(__file__).resolve().parent.parent

#: The Dockerfile's default base; the local base is tagged with its fully qualified name.
BASE = "docker.io/library/python:3.11-slim-bookworm"
#: The bridge's image, under the name deploy/compose/compose.yaml gives it.
BRIDGE = "localhost/otel-bridge:local"
#: Ulimits a sandbox allows (podman's defaults, taken from the host's hard limits, may not be).
ULIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096")
_TRIM = ("var/cache/apt", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
         "usr/share/info", "usr/share/locale")  # fmt: skip


def home() -> Path:
    """Podman's configuration, storage and the base tarball, in the test-parts cache."""
    return cache_dir() / "podman"


def podman_env() -> dict[str, str]:
    """The environment that points podman (and podman-compose) at the tests' configuration."""
    root = home()
    root.mkdir(parents=True, exist_ok=True)
    storage = root / "storage.conf"
    storage.write_text(
        f'[storage]\ndriver = "vfs"\ngraphroot = "{root / "storage"}"\nrunroot = "{root / "run"}"\n'
    )
    containers = root / "containers.conf"
    containers.write_text(
        "[containers]\n"
        'default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n'
        "[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
        "[network]\n"  # the networks compose makes, here rather than in /etc/containers
        f'network_config_dir = "{root / "networks"}"\n'
    )
    registries = root / "registries.conf"
    registries.write_text("unqualified-search-registries = []\n")  # local images only
    return {
        **os.environ,
        "CONTAINERS_CONF": str(containers),
        "CONTAINERS_STORAGE_CONF": str(storage),
        "CONTAINERS_REGISTRIES_CONF": str(registries),
    }


def require_podman() -> None:
    """Skip (or fail, where the tools are installed for the suite) without podman and runc."""
    absent = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    if not absent:
        return
    message = f"{', '.join(absent)} not installed (apt-get install podman runc debootstrap)"
    if os.environ.get("CI") == "true" or os.environ.get("OTEL_BRIDGE_TEST_SH") == "1":
        pytest.fail(f"{message}: scripts/test.sh installs them", pytrace=False)
    pytest.skip(message)


def podman(
    *args: str, timeout: float = 600, check: bool = True, quiet: bool = False
) -> subprocess.CompletedProcess[str]:
    """`podman ARGS...` with the tests' configuration; a failure fails the test with stderr."""
    done = subprocess.run(
        ["podman", *args],
        env=podman_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if check and done.returncode != 0:
        tail = "" if quiet else done.stderr[-4000:]
        pytest.fail(f"podman {shlex.join(args)}: exit {done.returncode}\n{tail}", pytrace=False)
    return done


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One maker of the base at a time (tests may run in parallel processes)."""
    with (home() / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _debootstrap(tarball: Path) -> None:
    rootfs = tarball.with_suffix(".rootfs")
    shutil.rmtree(rootfs, ignore_errors=True)
    mirror = [os.environ["DEBIAN_MIRROR"]] if os.environ.get("DEBIAN_MIRROR") else []
    done = subprocess.run(
        ["debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates",
         "bookworm", str(rootfs), *mirror],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"debootstrap: exit {done.returncode}\n{done.stdout[-3000:]}", pytrace=False)
    for path in _TRIM:  # what slim images leave out too: nothing the bridge reads
        shutil.rmtree(rootfs / path, ignore_errors=True)
    partial = tarball.with_suffix(".partial")
    subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True)
    partial.rename(tarball)  # whole or absent: an interrupted run makes it again
    shutil.rmtree(rootfs, ignore_errors=True)


def base_image() -> str:
    """The local stand-in for python:3.11-slim-bookworm, made once and cached (about 80 s of
    debootstrap when cold)."""
    require_podman()
    home().mkdir(parents=True, exist_ok=True)
    with _locked():
        if podman("image", "exists", BASE, check=False).returncode == 0:
            return BASE
        tarball = home() / "bookworm-python3.tar"
        if not tarball.is_file():
            started = time.monotonic()
            _debootstrap(tarball)
            print(f"podman base: debootstrap took {time.monotonic() - started:.0f}s")
        # The slim image's own entry point is python3; HOME and PATH as in a Debian image.
        podman(
            "import", "--change", 'CMD ["python3"]',
            "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            str(tarball), BASE,
        )  # fmt: skip
    return BASE


def build(tag: str, context: Path, *extra: str, file: Path | None = None) -> float:
    """`podman build` as users do, with the host's CA certificates mounted for pip (a proxy
    that re-signs TLS needs them; elsewhere they change nothing); the seconds it took."""
    started = time.monotonic()
    dockerfile: Sequence[str] = ("-f", str(file)) if file is not None else ()
    podman(
        # docker format: OCI images have no HEALTHCHECK, and podman drops it from them
        "build", "--format=docker", "--pull=never", "--layers=false", *ULIMITS,
        "-v", "/etc/ssl/certs:/etc/ssl/certs:ro", *dockerfile, *extra,
        "-t", tag, str(context), timeout=1800,
    )  # fmt: skip
    return time.monotonic() - started


def bridge_build_args(version: str | None = None) -> list[str]:
    """The build arguments of the bridge's image: the version (the checkout's by default),
    which the Dockerfile cannot take from a tag."""
    return ["--build-arg", f"VERSION={checkout_version() if version is None else version}"]


_built: dict[str, float] = {}  # images built by this run of the suite: seconds each took


def bridge_image() -> tuple[str, float]:
    """The Dockerfile built once per run of the suite (a previous run's copy is replaced), and
    the seconds the build took. Its version is the checkout's, as setuptools-scm gives it."""
    if BRIDGE not in _built:
        base_image()
        _built[BRIDGE] = build(BRIDGE, ROOT, *bridge_build_args())
        podman("image", "prune", "-f", check=False)  # the previous build, now untagged
    return BRIDGE, _built[BRIDGE]


def wrap(
    tag: str,
    binary: Path,
    entrypoint: Sequence[str],
    command: Sequence[str] = (),
    lines: Sequence[str] = (),
) -> str:
    """An image of `binary` on the local base, as `tag`: how a program from the Go module
    proxy or from Debian stands in for its official image. Rebuilt only when the binary
    changed (a label holds its size and time)."""
    base_image()
    stamp = f"{binary.stat().st_size}-{binary.stat().st_mtime_ns}"
    done = podman(
        "image", "inspect", "--format", '{{index .Labels "otel-bridge-test.source"}}', tag,
        check=False,
    )  # fmt: skip
    if done.returncode == 0 and done.stdout.strip() == stamp:
        return tag
    with tempfile.TemporaryDirectory(dir=home()) as context:
        shutil.copy2(binary, Path(context) / binary.name)
        (Path(context) / "Containerfile").write_text(
            f"FROM {BASE}\n"
            f"LABEL otel-bridge-test.source={stamp}\n"
            f"COPY {binary.name} /usr/local/bin/{binary.name}\n"
            + "".join(f"{line}\n" for line in lines)
            + f"ENTRYPOINT {json.dumps(list(entrypoint))}\n"
            + (f"CMD {json.dumps(list(command))}\n" if command else "")
        )
        build(tag, Path(context))
    podman("image", "prune", "-f", check=False)
    return tag
