"""The live source: the bridge attached to a running Copilot SDK session (`session.on(...)`).

Live events feed the same assembler as the log tail, so the same session gives the same span
ids whichever way it is read (chat spans are keyed by the usage id that the live
`assistant.usage` and the on-disk `session.usage_record` share; tool spans by the tool call id;
the rest by event ids, which are the same in the stream and the log). What the live stream adds:
`session.idle` ends an interaction at once (on disk its end is inferred), `model.call_failure`
shows failed LLM calls as failed chat spans, `assistant.turn_retry` marks retries, and
`agent.interrupted` / `session.idle{aborted}` close what an abort left open.

Usage (github-copilot-sdk, see README "Live sessions"):

    bridge = LiveBridge()            # exporters from the OTEL_* environment, as the CLI's
    bridge.attach(session)           # session.on(bridge.on_event) under the hood
    await session.send("...")
    bridge.close()                   # flush, shut the exporters down
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExporter

from .. import semconv
from .._env import TRACEPARENT, content_capture
from .._exceptions import ConfigError, EventDecodeError
from ..assembler import Assembler, AssemblerConfig
from ..decode._events import event_from_json
from ..feed import StreamFeeder
from ..metrics._recorder import MetricsRecorder
from ..processors import Scrubber
from ._pipeline import Pipeline, PipelineConfig

__all__ = ["LiveBridge", "parent_from_traceparent"]

logger = logging.getLogger("otel_bridge.sources._sdk")  # the name apps have always seen


def parent_from_traceparent(value: str) -> tuple[int, int]:
    """Parse a W3C `traceparent` header value ("00-<trace id>-<span id>-<flags>").

    Raises:
        ConfigError: not a valid traceparent.
    """
    parts = value.strip().split("-")
    try:
        if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
            raise ValueError(value)
        trace_id, span_id = int(parts[1], 16), int(parts[2], 16)
    except ValueError as exc:
        raise ConfigError(
            f"not a W3C traceparent: {value!r} (expected 00-<32 hex>-<16 hex>-<2 hex>)"
        ) from exc
    if not trace_id or not span_id:
        raise ConfigError(f"traceparent with an all-zero id: {value!r}")
    return trace_id, span_id


def _resolve_parent(
    parent: str | tuple[int, int] | None, environ: Mapping[str, str]
) -> tuple[int, int] | None:
    if parent is None or isinstance(parent, tuple):
        return parent
    if parent == "current":  # the app's current span, e.g. a web request it is serving
        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            return context.trace_id, context.span_id
        header = environ.get(TRACEPARENT)  # or the CI job's, as the env-carrier spec says
        return parent_from_traceparent(header) if header else None
    return parent_from_traceparent(parent)


def sdk_client(_stream: str) -> str:
    """The client of every live session: an SDK app (the CLI's workspace.yaml says `sdk`)."""
    return semconv.CLIENT_SDK


class LiveBridge:
    """Turns the live events of one or more SDK sessions into spans, as they happen.

    Thread-safe: SDK callbacks may arrive on any thread; each event is handled under a lock.

    Args:
        span_exporters: where spans go; by default the exporters the OTEL_* environment
            selects (console when nothing is set, none with OTEL_SDK_DISABLED=true), as for
            `otel-bridge run`.
        metrics: where metric observations go; none by default.
        capture_content: as `--capture-content`; default from
            OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT.
        parent: opt in to hang the agent's traces under another span: "current" (the current
            OpenTelemetry span when the bridge is made, else the TRACEPARENT variable), a W3C
            traceparent string, or (trace id, span id). None (default): one trace per task.
        environ: the environment to read; os.environ by default.
        resource: the spans' resource; by default as for the command line.
        scrubber: redacts secrets in every span (the default patterns when not given).
        sample_ratio: share of healthy traces exported (failures are always kept).
        keep_unknown_events: as `--keep-unknown-events`: events of types the bridge does not
            know also become span events on their task's root (they are counted either way).
        semconv: as `--semconv` for span attributes (released, previous or both); the metric
            names are the recorder's choice (`OtelMetricsRecorder(..., semconv_mode=...)`,
            `MetricsOptions(semconv_mode=...)`).
        root_name: as `--root-name`: a template of each task root's name (docs/viewers.md);
            None, the GenAI name.
    """

    def __init__(
        self,
        span_exporters: Sequence[SpanExporter] | None = None,
        *,
        metrics: MetricsRecorder | None = None,
        capture_content: bool | None = None,
        parent: str | tuple[int, int] | None = None,
        environ: Mapping[str, str] | None = None,
        resource: Resource | None = None,
        scrubber: Scrubber | None = None,
        sample_ratio: float = 1.0,
        keep_unknown_events: bool = False,
        semconv: str = semconv.SEMCONV_RELEASED,
        root_name: str | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        if capture_content is None:
            capture_content = content_capture(env)
        config = PipelineConfig(
            assembler=AssemblerConfig(
                capture_content=capture_content,
                parent=_resolve_parent(parent, env),
                keep_unknown_events=keep_unknown_events,
                client_name_of=sdk_client,
                semconv=semconv,
                root_name=root_name,
            ),
            sample_ratio=sample_ratio,
        )
        # The app's own exporters: OTEL_SDK_DISABLED is its call. Else those the environment
        # selects (an OTLP endpoint that is not a URL is a ConfigError here).
        self._pipeline = Pipeline(
            config,
            env,
            span_exporters=span_exporters,
            recorder=metrics,
            resource=resource,
            scrubber=scrubber,
        )
        if span_exporters is None and self._pipeline.disabled:
            logger.warning("OTEL_SDK_DISABLED=true: LiveBridge exports no spans")
        self._sink = self._pipeline.sink
        self._assembler = self._pipeline.assembler
        self._feeder = StreamFeeder(self._assembler, self._sink.export)
        self._lock = threading.Lock()
        self._unsubscribe: list[Callable[[], Any]] = []
        self._closed = False
        self.rejected = 0  # events that were not Copilot events (logged)

    @property
    def assembler(self) -> Assembler:
        """The assembler (for its stats: open interactions, duplicates dropped...)."""
        return self._assembler

    def attach(self, session: Any) -> Callable[[], Any]:
        """Subscribe to a github-copilot-sdk session; returns its unsubscribe function.

        Raises:
            TypeError: `session` has no callable `.on` (the client, or the result of a call,
                passed by mistake): said here, rather than as an AttributeError from inside.
        """
        if not callable(getattr(session, "on", None)):
            hint = (
                " (await it first: create_session() is a coroutine)"
                if inspect.isawaitable(session)
                else ""
            )
            raise TypeError(
                "LiveBridge.attach() expects a Copilot SDK session "
                "(copilot.CopilotSession, an object with .on(handler)); got "
                f"{type(session).__name__}{hint}"
            )
        stream = str(getattr(session, "session_id", None) or f"session-{id(session)}")

        def handler(event: Any) -> None:
            self.on_event(event, stream)

        unsubscribe: Callable[[], Any] = session.on(handler)
        self._unsubscribe.append(unsubscribe)
        return unsubscribe

    def on_event(self, event: Any, stream: str | None = None) -> None:
        """Take one event: an SDK `SessionEvent` (anything with `to_dict()`) or a plain dict in
        the log's JSON shape. Never raises (it runs in the SDK's callback, in the app): a bad
        event is counted (`rejected`) and the first is logged; its values are made valid as a
        log's are (a lone surrogate in a string the app built, a number beyond 64 bits: see
        `_records.repair_record`)."""
        try:
            raw = event.to_dict() if hasattr(event, "to_dict") else event
            decoded = event_from_json(raw)
        except Exception as exc:  # anything `to_dict` of an odd object may raise
            self._reject(exc)
            return
        key = stream or "live"
        self._feeder.count_read(1)
        with self._lock:
            if self._closed:
                return
            try:
                self._feeder.feed_live(key, decoded)  # queued; a worker thread delivers them
            except Exception as exc:  # the assembler never raises; the sink must not either
                self._reject(exc)

    def _reject(self, exc: Exception) -> None:
        """Count a live event that could not be taken; log the first (the reason a decoding
        error gives, which quotes nothing of the event; for anything else its class), the rest
        at DEBUG: an app that sends a stream of odd events must not flood its own log."""
        self.rejected += 1
        why = str(exc) if isinstance(exc, EventDecodeError) else type(exc).__name__
        if self.rejected == 1:
            logger.warning(
                "live event skipped (%s); further ones are counted (LiveBridge.rejected), "
                "not logged",
                why,
            )
        else:
            logger.debug("live event skipped (%s)", why, exc_info=exc)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until what is finished has been exported. False on timeout (still queued)."""
        return self._sink.flush(timeout)

    def close(self, *, end_open: bool = True, timeout: float = 30.0) -> None:
        """Unsubscribe, end what is open (marked incomplete) unless told not to, deliver what
        is queued (for at most `timeout` seconds) and shut the exporters down. Idempotent."""
        for unsubscribe in self._unsubscribe:
            try:
                unsubscribe()
            except Exception:  # the session may be gone already
                logger.debug("unsubscribe failed", exc_info=True)
        self._unsubscribe.clear()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if end_open:
                self._feeder.close_all()
            self._pipeline.shutdown_spans(timeout)  # the metrics recorder is the app's
