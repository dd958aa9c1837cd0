"""The SDK exporters' own logging, kept off the user's terminal while the bridge exports, and
kept for the reason of a failure (`_verdicts` reads the records).

The SDK's OTLP exporters retry inside each export call and log every attempt (and urllib3
may add its own lines): a collector that is down for a minute fills the terminal. The
bridge's queue already retries, logs one warning when an exporter starts failing (with the
reason, taken from these records) and one line when it recovers, and counts failures in
otel_bridge.export.failures. So while one of the bridge's own exports runs, on that thread,
the SDK's records are kept for the reason and not shown, unless the bridge logs at DEBUG.
Records from any other thread (an application's own exporters, next to LiveBridge) pass.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import email.utils
import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from .. import _env as env
from .._exceptions import ConfigError
from ._common import OtlpEndpoint, query_problem, without_credentials

__all__ = [
    "build_otlp_exporter",
    "capture_exporter_logs",
    "http_session",
    "note_answer",
    "note_failure",
    "quiet_exporter_logs",
]

_SDK_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.metric_exporter",
    "urllib3.connectionpool",
    "urllib3.connection",
    "urllib3.util.retry",
)
_SDK_PREFIXES = ("opentelemetry.exporter.", "urllib3")
_MAX_RETRY_AFTER = 3600.0  # the longest Retry-After honoured, in seconds
_MAX_KEPT = 20  # records kept per export call: the first ones say what went wrong
_MAX_SETTINGS = 16  # request settings whose environment is kept (one per endpoint URL)
_local = threading.local()
_install_lock = threading.Lock()
_bridge_logger = logging.getLogger("otel_bridge")


class _ExportChatter(logging.Filter):
    """Keeps SDK records emitted during the bridge's exports, and hides them below DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        kept: list[logging.LogRecord] | None = getattr(_local, "records", None)
        if kept is None:
            return True
        if len(kept) < _MAX_KEPT:
            # a copy: a handler's CredentialFilter may put the scrubbed text in place of the
            # arguments (a gRPC status, an exception) that `_verdicts` reads the failure from
            kept.append(copy.copy(record))
        if record.levelno >= logging.WARNING:
            _trouble()
        return _bridge_logger.isEnabledFor(logging.DEBUG)


def _trouble() -> None:
    """The export on this thread has met a failure (a refused connection, an error answer)
    while the SDK may go on retrying inside the call for its whole timeout: tell whoever
    asked (`capture_exporter_logs`' `on_trouble`) now, not when the call returns."""
    on_trouble: Callable[[], None] | None = getattr(_local, "on_trouble", None)
    if on_trouble is not None:
        on_trouble()


_CHATTER = _ExportChatter()


_Exporter = TypeVar("_Exporter")


def build_otlp_exporter(
    endpoint: OtlpEndpoint, what: str, build: Callable[[], _Exporter]
) -> _Exporter:
    """Run `build` (which makes the SDK's OTLP exporter for `endpoint`; `what`: "trace" or
    "metric"), turning the SDK's own errors about its settings into a ConfigError, and keep its
    retry messages off the terminal (`quiet_exporter_logs`)."""
    try:
        exporter = build()
    except (ValueError, TypeError, RuntimeError, OSError) as exc:  # e.g. a timeout not a number
        raise ConfigError(
            f"cannot set up the OTLP {what} exporter ({endpoint.describe()}): "
            f"{without_credentials(str(exc))}; check the OTEL_EXPORTER_OTLP_* variables"
        ) from exc
    quiet_exporter_logs()
    problem = query_problem(endpoint, "traces" if what == "trace" else "metrics")
    if problem is not None:
        _bridge_logger.warning("%s", problem)
    return exporter


def quiet_exporter_logs() -> None:
    """Put the filter on the SDK exporters' and urllib3's loggers (a logger's filter sees only
    what that very logger emits, hence one per logger). Idempotent; call once the exporter
    modules are imported, so that their loggers exist."""
    with _install_lock:
        names = set(_SDK_LOGGERS)
        names.update(
            name
            for name, item in list(logging.Logger.manager.loggerDict.items())
            if name.startswith(_SDK_PREFIXES) and isinstance(item, logging.Logger)
        )
        for name in names:
            target = logging.getLogger(name)
            # First: the gRPC exporter's logger has the SDK's DuplicateFilter
            # (opentelemetry-exporter-otlp-proto-grpc 1.45, exporter.py: `logger.addFilter(
            # DuplicateFilter())`; opentelemetry.sdk._shared_internal), which drops a record
            # whose message the previous one had, within 20 s: after it, a second refusal in
            # a row would leave no record to say what it was. Filters run in list order.
            if target.filters[:1] != [_CHATTER]:
                if _CHATTER in target.filters:
                    target.removeFilter(_CHATTER)
                target.filters.insert(0, _CHATTER)


@contextlib.contextmanager
def capture_exporter_logs(
    on_trouble: Callable[[], None] | None = None,
) -> Iterator[list[logging.LogRecord]]:
    """Within the block, on this thread, the SDK's log records are collected (and hidden
    below DEBUG); the list holds them for `failure_reason`. `on_trouble` is called (on this
    thread) at each failure met inside the call: a refused connection, a warning or error
    of the SDK's, an error answer, so that /readyz can tell from the first one."""
    previous = getattr(_local, "records", None), getattr(_local, "on_trouble", None)
    records: list[logging.LogRecord] = []
    _local.records, _local.on_trouble = records, on_trouble
    try:
        yield records
    finally:
        _local.records, _local.on_trouble = previous


def http_session(environ: Mapping[str, str], signal: str) -> Any:
    """A requests session for an OTLP/HTTP exporter that notes among the export's records
    what each request came to (a refused response's status, a connection error), since the
    SDK's last message after its retries ("due to timeout, max retries or shutdown") no longer
    says.

    None (the exporter makes its own) when a credential provider is configured: that one
    makes the session.
    """
    if environ.get(env.OTEL_PYTHON_HTTP_CREDENTIAL_PROVIDER) or environ.get(
        f"{env.OTEL_PYTHON_HTTP_PREFIX}{signal.upper()}_CREDENTIAL_PROVIDER"
    ):
        return None
    return _noting_session_class()()


@functools.cache
def _noting_session_class() -> type:
    import requests  # loaded already, without charset_normalizer (`_otlp`, `_requests`)

    class NotingSession(requests.Session):
        """Also reads the environment's proxy and CA settings once per request's settings
        (the endpoint's URL: one), not at every request: requests goes over every variable
        of the environment twice a request for its proxies, a quarter of the CPU of a live
        export of a few spans (more in a pod, whose environment names every service).
        Variables changed in the process afterwards are not seen; the bridge changes none."""

        def __init__(self) -> None:
            super().__init__()
            self._environment: dict[tuple[Any, ...], dict[str, Any]] = {}

        def merge_environment_settings(
            self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any
        ) -> Any:
            given = None if proxies is None else tuple(sorted(proxies.items()))
            key = (url, given, stream, verify, cert)
            try:
                settings = self._environment.get(key)
            except TypeError:  # an unhashable setting: as requests does, every time
                return super().merge_environment_settings(url, proxies, stream, verify, cert)
            if settings is None:
                settings = super().merge_environment_settings(url, proxies, stream, verify, cert)
                if len(self._environment) < _MAX_SETTINGS:
                    self._environment[key] = settings
            return {**settings, "proxies": dict(settings["proxies"])}

        def request(self, *args: Any, **kwargs: Any) -> Any:
            try:
                response = super().request(*args, **kwargs)
            except Exception as exc:
                note_failure(exc)
                raise
            if response.status_code >= 300:
                note_answer(
                    response.status_code, response.reason, response.headers.get("Retry-After")
                )
            return response

    return NotingSession


def note_failure(error: BaseException) -> None:
    """A request of the current export got no answer: noted among its records, and told as
    trouble at once (`capture_exporter_logs`' `on_trouble`)."""
    _note("request failed: %s", (error,))
    _trouble()


def note_answer(status: int, reason: str | None, retry_after: str | None) -> None:
    """A request of the current export was refused (`status` 300 or more): noted with its
    Retry-After header's value, and told as trouble."""
    _trouble()
    _note("collector answered %d %s", (status, reason or ""), retry_after=_retry_after(retry_after))


def _note(message: str, args: tuple[Any, ...], retry_after: float | None = None) -> None:
    """Add a record to the current export's, if one is being captured on this thread (with
    the answer's Retry-After, in seconds, as its `retry_after`)."""
    kept: list[logging.LogRecord] | None = getattr(_local, "records", None)
    if kept is not None and len(kept) < _MAX_KEPT:
        record = logging.LogRecord(
            "otel_bridge.export", logging.WARNING, __file__, 0, message, args, None
        )
        record.retry_after = retry_after
        kept.append(record)


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (RFC 9110 section 10.2.3: a number of seconds, or an HTTP
    date), at most an hour; None when absent or not understood."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)
