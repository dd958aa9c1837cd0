"""The public surface: everything exported is listed, and importable from the package root."""

import otel_bridge
import otel_bridge.app
import otel_bridge.export
import otel_bridge.feed
import otel_bridge.processors
import otel_bridge.sources
import otel_bridge.sources.tail


def test_all_is_complete_and_resolvable() -> None:
    for module in (
        otel_bridge,
        otel_bridge.app,
        otel_bridge.export,
        otel_bridge.feed,
        otel_bridge.processors,
        otel_bridge.sources,
        otel_bridge.sources.tail,
    ):
        public = {name for name in dir(module) if not name.startswith("_")}
        public -= {"annotations"}
        submodules = {
            "app",
            "assembler",
            "checkpoint",
            "cli",
            "decode",
            "export",
            "feed",
            "files",
            "metrics",
            "processors",
            "sources",
            "semconv",
            "tail",
        }
        assert public - submodules <= set(module.__all__), module.__name__
        for name in module.__all__:
            assert hasattr(module, name), name
