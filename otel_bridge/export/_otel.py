"""The one adapter between the bridge's span records and the OpenTelemetry SDK.

Records become SDK `ReadableSpan`s with their own (historical) timestamps and deterministic ids,
then go straight to `SpanExporter`s (`_sink.py`). No `TracerProvider` is involved: a provider
would stamp spans with the current time and random ids, which is exactly what the bridge must
not do.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from opentelemetry.sdk.resources import OsResourceDetector, Resource
from opentelemetry.sdk.trace import Event as SdkEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, TraceFlags
from opentelemetry.trace import SpanKind as SdkSpanKind
from opentelemetry.trace.status import Status
from opentelemetry.trace.status import StatusCode as SdkStatusCode

from .. import _env as env
from .. import semconv
from .._records import SpanKind, SpanRecord, StatusCode
from .._version import __version__
from ..files._safe_open import open_regular

__all__ = ["DEFAULT_SERVICE_NAME", "ResourceOptions", "build_resource", "to_readable_span"]


#: service.name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. The CLI's
#: own telemetry uses the same name, so both land under one service in a backend.
DEFAULT_SERVICE_NAME = "github-copilot"

_SCOPE = InstrumentationScope("otel_bridge", __version__, semconv.SCHEMA_URL)
_KINDS = {SpanKind.INTERNAL: SdkSpanKind.INTERNAL, SpanKind.CLIENT: SdkSpanKind.CLIENT}
_STATUS = {
    StatusCode.UNSET: SdkStatusCode.UNSET,
    StatusCode.OK: SdkStatusCode.OK,
    StatusCode.ERROR: SdkStatusCode.ERROR,
}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)  # without it exporters and processors drop the span


@dataclass(frozen=True, slots=True)
class ResourceOptions:
    """What the resource says of who and where, beyond what the machine tells.

    Attributes:
        enduser_id: `enduser.id` (the OS user's name, or an id the user gave: `--user`); None
            by default, since it is personal data (docs/attribution.md).
        instance_key: what tells this bridge apart from others on the same machine (its
            command, state directory and shard), hashed into `service.instance.id`.
    """

    enduser_id: str | None = None
    instance_key: str = ""


_MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def build_resource(environ: Mapping[str, str], options: ResourceOptions | None = None) -> Resource:
    """The resource of every span and metric: the SDK's (it reads OTEL_SERVICE_NAME and
    OTEL_RESOURCE_ATTRIBUTES, where a team or cost centre goes), with our defaults for what
    the user did not set: `service.name` (github-copilot), `service.version` (the bridge's),
    a stable `service.instance.id`, `host.name`, `os.type` and `os.version`, and `enduser.id`
    when asked for. A key in OTEL_RESOURCE_ATTRIBUTES wins over ours (on Kubernetes, the node's
    name as `host.name` from the downward API, say). The variables are read from `environ`
    (not only `os.environ`, which the SDK reads), so that a caller's mapping counts."""
    options = options or ResourceOptions()
    given = _given(environ)
    host = socket.gethostname()
    ours: dict[str, str] = {
        "otel_bridge.version": __version__,
        semconv.SERVICE_VERSION: __version__,
        semconv.SERVICE_INSTANCE_ID: instance_id(host, options.instance_key),
        semconv.HOST_NAME: host,
    }
    # os.type and os.version as the SDK's detector gives them (the convention's values)
    ours.update({k: str(v) for k, v in OsResourceDetector().detect().attributes.items()})
    if options.enduser_id:
        ours[semconv.ENDUSER_ID] = options.enduser_id
    ours[semconv.SERVICE_NAME] = DEFAULT_SERVICE_NAME
    attributes = {key: value for key, value in ours.items() if value}
    attributes.update(given)
    if environ.get(env.OTEL_SERVICE_NAME):
        attributes[semconv.SERVICE_NAME] = environ[env.OTEL_SERVICE_NAME]
    return Resource.create(attributes)


def _given(environ: Mapping[str, str]) -> dict[str, str]:
    """What OTEL_RESOURCE_ATTRIBUTES sets: `key=value,key=value`, values percent-decoded, as
    the SDK's OTELResourceDetector parses it."""
    given = {}
    for part in environ.get(env.OTEL_RESOURCE_ATTRIBUTES, "").split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            given[key.strip()] = unquote(value.strip())
    return given


def instance_id(host: str, key: str = "") -> str:
    """A `service.instance.id` that stays the same across restarts of the same bridge: a UUID
    version 5, in the namespace the service conventions name, of the machine's id (or, without
    one, its host name) and `key`. Hashed, since the conventions ask that the data under it be
    treated as confidential."""
    machine = host
    for path in _MACHINE_ID_FILES:
        try:  # a regular file only, opened without blocking, as every file the bridge reads
            with open_regular(path) as file:
                machine = file.read(64).decode("ascii", "replace").strip() or host
            break
        except OSError:
            continue
    namespace = uuid.UUID(semconv.SERVICE_INSTANCE_NAMESPACE)
    return str(uuid.uuid5(namespace, f"otel-bridge\x00{machine}\x00{host}\x00{key}"))


def to_readable_span(record: SpanRecord, resource: Resource) -> ReadableSpan:
    """Map one record to an SDK span, keeping its ids and timestamps."""
    context = SpanContext(record.trace_id, record.span_id, is_remote=False, trace_flags=_SAMPLED)
    parent = None
    if record.parent_span_id is not None:
        parent = SpanContext(
            record.trace_id, record.parent_span_id, is_remote=False, trace_flags=_SAMPLED
        )
    return ReadableSpan(
        name=record.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=dict(record.attributes),
        events=[SdkEvent(e.name, dict(e.attributes), e.timestamp_ns) for e in record.events],
        links=[
            Link(
                SpanContext(link.trace_id, link.span_id, is_remote=True, trace_flags=_SAMPLED),
                dict(link.attributes),
            )
            for link in record.links
        ],
        kind=_KINDS[record.kind],
        status=Status(
            _STATUS[record.status],
            record.status_message if record.status is StatusCode.ERROR else None,
        ),
        start_time=record.start_ns,
        end_time=record.end_ns,
        instrumentation_scope=_SCOPE,
    )
