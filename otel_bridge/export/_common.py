"""What the trace and metric sinks share: OTLP protocol choice and output files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import IO

from .._exceptions import ConfigError

__all__ = ["OTLP_PROTOCOLS", "open_output", "otlp_protocol"]

OTLP_PROTOCOLS = ("grpc", "http/protobuf")


def otlp_protocol(environ: Mapping[str, str], signal: str) -> str:
    """OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else the
    specification's default, http/protobuf.

    Raises:
        ConfigError: a protocol the bridge cannot speak (http/json).
    """
    protocol = (environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
                or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
    if protocol not in OTLP_PROTOCOLS:
        raise ConfigError(f"OTLP protocol {protocol!r} is not supported: set "
                          "OTEL_EXPORTER_OTLP_PROTOCOL to grpc or http/protobuf")
    return protocol


def open_output(path: Path, mode: str, what: str) -> IO[str]:
    """Open a JSON Lines output file ("w" to start afresh, "a" to append).

    Raises:
        ConfigError: the file cannot be written; the message names it.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open(mode, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {what} to {path}: {exc.strerror or exc}") from exc
