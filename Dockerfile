# otel-bridge as a container: `otel-bridge run` as a non-root user, on a read-only root file
# system, with its checkpoints on a volume (docs/deploy.md says how to build and run it).
#
#   docker build --build-arg VERSION="$(python -m setuptools_scm)" -t otel-bridge .
#   docker run --read-only --tmpfs /tmp -v otel-bridge-state:/var/lib/otel-bridge \
#       -v ~/.copilot:/copilot:ro otel-bridge
#
#   podman build --format docker -t otel-bridge .   # OCI images drop the HEALTHCHECK
#
# VERSION: the package's version, which comes from the git tag (pyproject.toml), but the build
# context has no .git (.dockerignore): say it, e.g. `python -m setuptools_scm` in the checkout
# (pip install setuptools-scm), or 1.2.3 at the tag v1.2.3. Unset, the image is version 0.0.
# BASE_IMAGE: any Debian-like image with python3 (3.11+) and its venv module, e.g. one made with
# debootstrap and `docker import` where no registry is reachable (tests/podman.py).
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
# A CA bundle for pip behind a proxy that re-signs TLS, mounted for the build only (podman
# build -v; docs/deploy.md); unset, pip uses its own.
ARG PIP_CERT
ARG VERSION
WORKDIR /src
# Only what the package needs (.dockerignore keeps the rest out of the context).
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY otel_bridge ./otel_bridge
# The versions CI tests with (constraints.txt); the venv is copied whole to the final stage.
# The version is setuptools-scm's pretended one for this distribution only (a global
# SETUPTOOLS_SCM_PRETEND_VERSION would be that of any dependency pip builds from source too);
# empty, it is ignored.
RUN python3 -m venv /opt/otel-bridge \
    && SETUPTOOLS_SCM_PRETEND_VERSION_FOR_OTEL_BRIDGE="$VERSION" \
        /opt/otel-bridge/bin/pip install --no-cache-dir --disable-pip-version-check \
        -c constraints.txt . \
    && /opt/otel-bridge/bin/python -m compileall -q /opt/otel-bridge

FROM ${BASE_IMAGE}
# A fixed uid, so that Kubernetes' runAsNonRoot can check it; group 0 owns the state directory
# (and may write it) so that an arbitrary uid given at run time (compose's OTEL_BRIDGE_UID, so
# that it can read a ~/.copilot of mode 0700) works too, as on OpenShift.
RUN useradd --system --uid 10001 --gid 0 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin otel-bridge \
    && mkdir -p /var/lib/otel-bridge /copilot \
    && chown 10001:0 /var/lib/otel-bridge \
    && chmod 0770 /var/lib/otel-bridge
COPY --from=build /opt/otel-bridge /opt/otel-bridge
# The bytecode is compiled above: nothing is written to the read-only root file system.
# OTEL_BRIDGE_STATE_DIR: run's default --state-dir; COPILOT_HOME: where the CLI's state is mounted.
ENV PATH=/opt/otel-bridge/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    OTEL_BRIDGE_STATE_DIR=/var/lib/otel-bridge \
    COPILOT_HOME=/copilot
VOLUME ["/var/lib/otel-bridge"]
USER 10001:0
# /metrics, /healthz and /readyz. 0.0.0.0 is the container's own network namespace (in
# Kubernetes the pod's): the kubelet's probes and Prometheus reach it at the pod's address; it
# is never the node's unless the pod asks for hostNetwork (none of deploy/ does).
EXPOSE 9464
# Liveness, as Kubernetes' livenessProbe: /healthz is 200 while the process serves and its
# main loop turns (503 once it has been stuck for --stuck-after). The interpreter is the
# image's own; no curl or wget is needed.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=4)"]
ENTRYPOINT ["otel-bridge"]
# SIGTERM (docker stop, a pod's end) flushes queued spans for up to --export-timeout seconds:
# keep it below the stop timeout (docker stop -t, terminationGracePeriodSeconds).
# Flags, not a file: they are the image's whole set-up, and no configuration file of yours is
# in it. With one, mount it and replace this command with
# `run --config /etc/otel-bridge/otel-bridge.toml`, as deploy/compose and deploy/kubernetes do.
CMD ["run", "--session-state", "/copilot/session-state", "--prometheus-host", "0.0.0.0", \
     "--prometheus-port", "9464", "--export-timeout", "20"]
