"""The commands' descriptions and examples: the prose of the help (`_parser` builds the
parsers, `_run_flags` run's options)."""

from __future__ import annotations

__all__ = [
    "DESCRIPTION",
    "DOCTOR_EPILOG",
    "EPILOG",
    "REPLAY_EPILOG",
    "RUN_DESCRIPTION",
    "RUN_EPILOG",
    "SERVICE_EPILOG",
    "STATS_EPILOG",
]

#: {exporters}: the names OTEL_TRACES_EXPORTER takes, from the exporter table (`_parser`).
DESCRIPTION = """\
Turn GitHub Copilot CLI sessions into OpenTelemetry traces: one trace per user message, a span \
per agent turn, with the turn's LLM calls and tool calls (and sub-agents) below it.

Where spans go is set the standard OpenTelemetry way:
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318  send OTLP (HTTP/protobuf)
  OTEL_EXPORTER_OTLP_PROTOCOL=grpc                   ... or gRPC (port 4317)
  OTEL_TRACES_EXPORTER=otlp,console                  {exporters}
  OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES        the spans' resource
With nothing set, spans are printed to the console: a line per finished task on a terminal, \
one JSON object per span in a pipe (--console-format summary, tree or json to choose).
"""

EPILOG = """\
examples:
  # follow ~/.copilot/session-state, print a line per finished task
  otel-bridge run
  # the same, sending spans to a collector on this machine
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 otel-bridge run
  # every past session once, to a file
  otel-bridge replay --traces-file traces.jsonl
  # a table of messages, turns, tools and tasks per session
  otel-bridge stats
  # what run would watch, and whether the collector answers
  otel-bridge doctor
"""

RUN_EPILOG = """\
examples:
  # follow every session, the older ones read from their beginning first
  otel-bridge run --backfill
  # spans and metrics to a collector; OTEL_METRICS_EXPORTER=prometheus keeps the
  # metrics on /metrics only (a backend such as Jaeger takes no OTLP metrics)
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 otel-bridge run
  # with an endpoint set, each finished task's span tree on this terminal too
  otel-bridge run --console-format tree
"""

REPLAY_EPILOG = """\
examples:
  # every session in $COPILOT_HOME/session-state, to a file
  otel-bridge replay --traces-file traces.jsonl
  # one session, to the collector of OTEL_EXPORTER_OTLP_ENDPOINT
  otel-bridge replay ~/.copilot/session-state/<session-id>
  # last month's logs in 4 worker processes
  otel-bridge replay /backup/session-state --jobs 4 --traces-file traces.jsonl
"""

STATS_EPILOG = """\
examples:
  # the sessions in $COPILOT_HOME/session-state
  otel-bridge stats
  # one session, as JSON, its directory as a hash
  otel-bridge stats ~/.copilot/session-state/<session-id> --json --paths hash
"""

DOCTOR_EPILOG = """\
examples:
  # the set-up of `otel-bridge run`, with the OTEL_* variables of this shell
  otel-bridge doctor
  # that of a run with other options: give doctor the same
  otel-bridge doctor --session-state /srv/copilot/session-state --prometheus-port 9465
"""

SERVICE_EPILOG = """\
examples:
  # run at login, with the OTEL_* variables of this shell
  otel-bridge install-service
  # the same, reading every older session once at its first start
  otel-bridge install-service -- --backfill
  # only show the unit it would write
  otel-bridge install-service --print
"""

RUN_DESCRIPTION = (
    "Watch session-state directories, follow every events.jsonl in them as it "
    "grows, pick up new sessions as they start, and export each interaction's spans when "
    "its agent loop ends.\n\n"
    "Stop with Ctrl-C or SIGTERM: finished spans are delivered first, for "
    "--export-timeout seconds (a second one quits at once). Started with Ctrl-C ignored "
    "(a script's background job), run keeps ignoring it: stop it with SIGTERM."
)
