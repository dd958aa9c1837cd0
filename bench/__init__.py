"""Measuring harness for otel-bridge: `python -m bench --help`, and bench/README.md."""
