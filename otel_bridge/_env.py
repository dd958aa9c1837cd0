"""The environment variables the bridge reads, by name, in one place.

A variable name written out in several modules drifts: one reader trims the value and another
does not, one accepts `True` and another only `true`, a typo reads a variable no one sets.
Every name is a constant here (a test, `test_env_names`, fails on an `OTEL_`, `OTEL_BRIDGE_`,
`COPILOT_` or `XDG_` name written as a string anywhere else), and a value the bridge
interprets itself (not one it hands to the SDK) is read by one function here.

The `OTEL_*` variables mean what the OpenTelemetry specification says
(https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/ and
https://opentelemetry.io/docs/specs/otel/protocol/exporter/); the GenAI content switch is the
one the GenAI instrumentations read.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "COPILOT_HOME",
    "COPILOT_OTEL_PREFIX",
    "CURL_CA_BUNDLE",
    "NO_PROXY",
    "NO_PROXY_LOWER",
    "OTEL_BOOLEANS",
    "OTEL_BRIDGE_CONTENT_HASH_SALT",
    "OTEL_BRIDGE_STATE_DIR",
    "OTEL_CAPTURE_MESSAGE_CONTENT",
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_CLIENT_KEY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_INSECURE",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PREFIX",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_METRICS_EXPORTER",
    "OTEL_PREFIX",
    "OTEL_PYTHON_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_HTTP_PREFIX",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_TRACES_EXPORTER",
    "REQUESTS_CA_BUNDLE",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "boolean",
    "boolean_warnings",
    "content_capture",
    "otlp_signal_variable",
]

# --- OpenTelemetry (the specification's names) ---------------------------------------------------

#: What every OpenTelemetry variable starts with (install-service copies them all).
OTEL_PREFIX = "OTEL_"
OTEL_SDK_DISABLED = "OTEL_SDK_DISABLED"
#: A W3C traceparent a CI job gives its steps (the specification's "Environment Variables as
#: Context Propagation Carriers"): run's and replay's traces hang under it.
TRACEPARENT = "TRACEPARENT"
OTEL_SERVICE_NAME = "OTEL_SERVICE_NAME"
OTEL_RESOURCE_ATTRIBUTES = "OTEL_RESOURCE_ATTRIBUTES"
OTEL_TRACES_EXPORTER = "OTEL_TRACES_EXPORTER"
OTEL_METRICS_EXPORTER = "OTEL_METRICS_EXPORTER"
#: The start of the per-signal OTLP variables: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT...
OTEL_EXPORTER_OTLP_PREFIX = "OTEL_EXPORTER_OTLP_"
OTEL_EXPORTER_OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTEL_EXPORTER_OTLP_METRICS_ENDPOINT = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
OTEL_EXPORTER_OTLP_PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
#: The Python SDK's credential provider of the OTLP/HTTP exporters, and the start of its
#: per-signal variant (OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER).
OTEL_PYTHON_HTTP_CREDENTIAL_PROVIDER = "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER"
OTEL_PYTHON_HTTP_PREFIX = "OTEL_PYTHON_EXPORTER_OTLP_HTTP_"
#: The GenAI instrumentations' switch for content capture, read beside --capture-content.
OTEL_CAPTURE_MESSAGE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: The gRPC exporters' switch for a connection without TLS, read by the SDK.
OTEL_EXPORTER_OTLP_INSECURE = "OTEL_EXPORTER_OTLP_INSECURE"
#: TLS files of the OTLP exporters (each with its per-signal variant, `otlp_signal_variable`):
#: the CA bundle, the client certificate and its key.
OTEL_EXPORTER_OTLP_CERTIFICATE = "OTEL_EXPORTER_OTLP_CERTIFICATE"
OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"
OTEL_EXPORTER_OTLP_CLIENT_KEY = "OTEL_EXPORTER_OTLP_CLIENT_KEY"

#: The OpenTelemetry booleans that change what the bridge does: those it reads, and those the
#: SDK reads for it (`boolean_warnings` says a value of theirs that the rule takes as false).
OTEL_BOOLEANS = (
    OTEL_SDK_DISABLED,
    OTEL_CAPTURE_MESSAGE_CONTENT,
    OTEL_EXPORTER_OTLP_INSECURE,
    f"{OTEL_EXPORTER_OTLP_PREFIX}TRACES_INSECURE",
    f"{OTEL_EXPORTER_OTLP_PREFIX}METRICS_INSECURE",
)

# --- the bridge's own ----------------------------------------------------------------------------

#: Where run keeps its checkpoints when --state-dir is not given.
OTEL_BRIDGE_STATE_DIR = "OTEL_BRIDGE_STATE_DIR"
#: The default of --content-hash-salt (a salt is a secret: better not on a command line).
OTEL_BRIDGE_CONTENT_HASH_SALT = "OTEL_BRIDGE_CONTENT_HASH_SALT"

# --- the Copilot CLI's ---------------------------------------------------------------------------

#: The CLI's home (default ~/.copilot); its session-state directory holds the logs.
COPILOT_HOME = "COPILOT_HOME"
#: The start of the CLI's own OpenTelemetry switches (doctor warns of double export).
COPILOT_OTEL_PREFIX = "COPILOT_OTEL_"

# --- HTTP clients' (requests' rules, kept by the OTLP/HTTP transport) --------------------------

#: Hosts reached without the proxy; the *_proxy variables themselves urllib reads.
NO_PROXY = "NO_PROXY"
NO_PROXY_LOWER = "no_proxy"
#: The CA bundle requests uses when no certificate is configured.
REQUESTS_CA_BUNDLE = "REQUESTS_CA_BUNDLE"
CURL_CA_BUNDLE = "CURL_CA_BUNDLE"

# --- the XDG base directories --------------------------------------------------------------------

XDG_STATE_HOME = "XDG_STATE_HOME"
XDG_CONFIG_HOME = "XDG_CONFIG_HOME"


def boolean(environ: Mapping[str, str], name: str) -> bool:
    """An OpenTelemetry boolean variable, by the specification's rule, which the Python SDK
    follows (`disabled.lower().strip() == "true"`): true only for `true`, any case, spaces
    around ignored; anything else (`yes`, `1`, `on`) is false, and an SDK "MUST NOT extend
    this definition". So `OTEL_SDK_DISABLED=yes` is false here as in the SDK;
    `boolean_warnings` says so instead of leaving it silent."""
    return environ.get(name, "").strip().lower() == "true"


def boolean_warnings(environ: Mapping[str, str]) -> list[str]:
    """A line for each of `OTEL_BOOLEANS` whose value is neither true, false nor empty: the
    specification asks for a warning of the fallback to false ("a warning SHOULD be
    logged"), which the SDK does not give."""
    return [
        f"{name}={environ[name]!r} is taken as false: an OpenTelemetry boolean is true only "
        "when it is true (any case); set it to true or false"
        for name in OTEL_BOOLEANS
        if environ.get(name, "").strip().lower() not in ("true", "false", "")
    ]


def content_capture(environ: Mapping[str, str]) -> bool:
    """Whether OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT turns content capture on
    (`boolean`, as the GenAI instrumentations read it)."""
    return boolean(environ, OTEL_CAPTURE_MESSAGE_CONTENT)


def otlp_signal_variable(setting: str, signal: str) -> str:
    """OTEL_EXPORTER_OTLP_<SIGNAL>_<SETTING>: the per-signal OTLP variable
    (`otlp_signal_variable("ENDPOINT", "traces")`)."""
    return f"{OTEL_EXPORTER_OTLP_PREFIX}{signal.upper()}_{setting}"
