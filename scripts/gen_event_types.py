"""Print otel_bridge/decode/_event_types.py from the CLI's session-events JSON Schema.

    python scripts/gen_event_types.py path/to/session-events.schema.json \
        > otel_bridge/decode/_event_types.py

The schema comes with the Copilot CLI's npm packages as `schemas/session-events.schema.json`: in
`@github/copilot` itself in older versions, in the platform package (`@github/copilot-linux-x64`
and the like) since the umbrella package became a loader; that is where the Copilot SDK's code
generator looks for it. The 1.0.102 packages that scripts/test.sh installs list no schema among
their files. A new CLI version with new event types is one run of this.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HEADER = '''"""Event types the Copilot CLI schema declares (from session-events.schema.json).

Why: an event type outside this set is schema drift (a newer or older CLI). It still passes through
the pipeline, but the reader counts it so that an operator can see when the bridge falls behind.
Regenerate with `python scripts/gen_event_types.py SCHEMA > otel_bridge/decode/_event_types.py`.
"""

KNOWN_EVENT_TYPES: frozenset[str] = frozenset(
    {
'''


def event_types(schema: dict) -> list[str]:
    """The `type` constants of every variant of the SessionEvent union, in schema order."""
    definitions = schema["definitions"]
    root = definitions[schema["$ref"].rsplit("/", 1)[1]]
    names = []
    for variant in root.get("anyOf") or root.get("oneOf") or []:
        definition = definitions[variant["$ref"].rsplit("/", 1)[1]]
        names.append(definition["properties"]["type"]["const"])
    return names


def main() -> None:
    schema = json.loads(Path(sys.argv[1]).read_text())
    body = "".join(f'        "{name}",\n' for name in event_types(schema))
    sys.stdout.write(HEADER + body + "    }\n)\n")


if __name__ == "__main__":
    main()
