"""What the bridge measures, apart from how it is exported: the catalogue of every metric
(`_catalogue`: names, units, labels) and the recorder interface the assembler reports to
(`_recorder`); the OpenTelemetry SDK side is `otel_bridge.export`."""
