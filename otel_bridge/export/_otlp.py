"""The SDK's OTLP exporters, made for the endpoint the bridge checked, and one empty export
through them: what `doctor` asks of a collector before a span is sent.

A module of its own, below the exporter table (`_table`) and the metric exporters that both
build them: the SDK's OTLP packages are imported only when an exporter is made, so that a
command that sends nothing over OTLP never loads them.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .. import _env as env
from ._common import OtlpEndpoint, otlp_endpoint
from ._requests import load_requests
from ._sdk_logs import build_otlp_exporter, capture_exporter_logs, http_session
from ._verdicts import ExportFailure, describe_exception, export_failure

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["otlp_metric_exporter", "otlp_span_exporter", "probe_otlp", "stdlib_transport"]

_Exporter = TypeVar("_Exporter")


def otlp_span_exporter(
    endpoint: OtlpEndpoint, environ: Mapping[str, str], timeout: float | None = None
) -> SpanExporter:
    """The SDK's exporter for the protocol, given the endpoint that was checked (the rest of
    its settings it reads from the environment; `timeout`, in seconds, instead of theirs).
    Its own retry messages are kept for the bridge's one warning instead of reaching the
    terminal (`quiet_exporter_logs`)."""

    def build() -> SpanExporter:
        if endpoint.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter(endpoint=endpoint.target, timeout=timeout)
        _before_the_sdk_http_modules()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpanExporter,
        )

        return _http_exporter(HttpSpanExporter, endpoint, environ, "traces", timeout)

    return build_otlp_exporter(endpoint, "trace", build)


def otlp_metric_exporter(
    environ: Mapping[str, str], timeout: float | None = None
) -> MetricExporter:
    """The SDK's OTLP metric exporter for the configured protocol and endpoint (the rest of
    its settings it reads from the environment; `timeout` in seconds instead of theirs)."""
    endpoint = otlp_endpoint(environ, "metrics")

    def build() -> MetricExporter:
        if endpoint.protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter,
            )

            return OTLPMetricExporter(endpoint=endpoint.target, timeout=timeout)
        _before_the_sdk_http_modules()
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
            OTLPMetricExporter as HttpMetricExporter,
        )

        return _http_exporter(HttpMetricExporter, endpoint, environ, "metrics", timeout)

    return build_otlp_exporter(endpoint, "metric", build)


_TRANSPORTS = "opentelemetry.exporter.http.transport"  # opentelemetry-exporter-http-transport


@functools.cache
def _has_transports() -> bool:
    """Whether opentelemetry-exporter-http-transport (SDK 1.45 and later) is installed."""
    try:
        return importlib.util.find_spec(_TRANSPORTS) is not None
    except ModuleNotFoundError:  # no opentelemetry.exporter.http either
        return False


def _before_the_sdk_http_modules() -> None:
    """An SDK before 1.45 imports requests with its OTLP/HTTP modules: load it first, without
    charset_normalizer (`_requests`). From 1.45 requests is imported only if the SDK's own
    transport is made (`_http_exporter`)."""
    if not _has_transports():
        load_requests()


def _http_exporter(
    exporter_class: Callable[..., _Exporter],
    endpoint: OtlpEndpoint,
    environ: Mapping[str, str],
    signal: str,
    timeout: float | None,
) -> _Exporter:
    """The SDK's OTLP/HTTP exporter of `signal`, on the standard library's transport where it
    can be (`stdlib_transport`), else on the SDK's requests session, which notes each answer
    (`http_session`)."""
    transport = stdlib_transport(exporter_class, endpoint, environ, signal)
    if transport is not None:
        return exporter_class(endpoint=endpoint.target, timeout=timeout, _transport=transport)
    load_requests()  # before requests is first imported: without charset_normalizer
    return exporter_class(
        endpoint=endpoint.target, session=http_session(environ, signal), timeout=timeout
    )


def stdlib_transport(
    exporter_class: Callable[..., object],
    endpoint: OtlpEndpoint,
    environ: Mapping[str, str],
    signal: str,
) -> Any | None:
    """The standard library's transport for an OTLP/HTTP exporter of `signal` (why:
    `_http_transport`), with the TLS files the SDK would read, in its order (the signal's
    variable, then the general one). None where the SDK's own requests session stays: an SDK
    before 1.45 (its exporters take no transport), a credential provider (it makes the
    session), or a route this transport does not speak (an https:// or SOCKS proxy)."""
    if environ.get(env.OTEL_PYTHON_HTTP_CREDENTIAL_PROVIDER) or environ.get(
        f"{env.OTEL_PYTHON_HTTP_PREFIX}{signal.upper()}_CREDENTIAL_PROVIDER"
    ):
        return None
    if not _has_transports() or "_transport" not in inspect.signature(exporter_class).parameters:
        return None
    from ._http_transport import StdlibTransport, route

    way = route(endpoint.target)
    if way is None:
        return None

    def setting(general: str, name: str) -> str | None:
        return environ.get(env.otlp_signal_variable(name, signal)) or environ.get(general)

    verify = setting(env.OTEL_EXPORTER_OTLP_CERTIFICATE, "CERTIFICATE") or True
    key = setting(env.OTEL_EXPORTER_OTLP_CLIENT_KEY, "CLIENT_KEY")
    certificate = setting(env.OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, "CLIENT_CERTIFICATE")
    cert = (certificate, key) if certificate and key else certificate
    return StdlibTransport(endpoint.target, way, verify, cert)


def probe_otlp(
    environ: Mapping[str, str], signal: str, timeout: float = 2.0
) -> ExportFailure | None:
    """Send one empty export of `signal` ("traces" or "metrics") through the SDK exporter the
    bridge would use (its endpoint, headers, TLS), and say how it failed; None when the
    collector took it. An empty request carries nothing: a collector answers it as any
    other, and a backend with no receiver for the signal refuses it (Jaeger: HTTP 404 at
    /v1/metrics), which a TCP connection alone cannot tell.

    Raises:
        ConfigError: the endpoint or another OTLP setting is unusable.
    """
    # The SDK's metrics, imported only here: a command that sends no metrics never loads them.
    from opentelemetry.sdk.metrics.export import MetricExportResult, MetricsData
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    exporter: SpanExporter | MetricExporter
    if signal == "traces":
        exporter = otlp_span_exporter(otlp_endpoint(environ, "traces"), environ, timeout=timeout)
    else:
        exporter = otlp_metric_exporter(environ, timeout=timeout)
    with capture_exporter_logs() as records:
        try:
            if isinstance(exporter, SpanExporter):
                ok = exporter.export([]) is SpanExportResult.SUCCESS
            else:
                empty = MetricsData(resource_metrics=[])
                ok = exporter.export(empty, timeout_millis=timeout * 1000) is (
                    MetricExportResult.SUCCESS
                )
        except Exception as exc:  # an exporter's bug is one more way to fail
            return ExportFailure(describe_exception(exc))
        finally:
            with contextlib.suppress(Exception):
                exporter.shutdown()
    return None if ok else export_failure(records)
