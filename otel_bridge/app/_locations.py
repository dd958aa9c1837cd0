"""Where run keeps its state when no flag says."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .. import _env as env

__all__ = ["state_dir"]


def state_dir(given: Path | None, environ: Mapping[str, str]) -> Path:
    """--state-dir, else $OTEL_BRIDGE_STATE_DIR, else $XDG_STATE_HOME/otel-bridge, else
    ~/.local/state/otel-bridge."""
    if given is not None:
        return given
    if environ.get(env.OTEL_BRIDGE_STATE_DIR):
        return Path(environ[env.OTEL_BRIDGE_STATE_DIR])
    base = environ.get(env.XDG_STATE_HOME)
    return (Path(base) if base else Path.home() / ".local" / "state") / "otel-bridge"
