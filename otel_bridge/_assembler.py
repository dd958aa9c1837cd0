"""Where the assembler used to live: its public names, for existing imports.

The assembler is the package `otel_bridge.assembler` now.
"""

from __future__ import annotations

from .assembler import Assembler, AssemblerConfig, AssemblerStats, SessionAssembler

__all__ = ["Assembler", "AssemblerConfig", "AssemblerStats", "SessionAssembler"]
