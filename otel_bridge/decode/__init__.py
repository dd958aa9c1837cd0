"""Bytes of a session log to `Event`s: lines cut and checked (`_lines`), torn lines mended
(`_torn_lines`), the envelope decoded apart from its data (`_envelope`), hostile lines refused
before they are decoded (`_wide`), the event types the bridge knows (`_event_types`), and
memory given back after a line of megabytes (`_memory`). The first stage of the pipeline: it
knows nothing of spans."""
