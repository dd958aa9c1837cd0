"""How the scrubber treats each attribute that holds more than a name: JSON content (scrubbed
value by value, keys that name a secret redacted whole), text content (scrubbed and cut), a
whole value that is a path (`--paths`). A declarative table: every other string attribute is
scrubbed as plain text."""

from __future__ import annotations

__all__ = ["CONTENT_KIND"]

_JSON_CONTENT = frozenset(
    {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "copilot.event.data",
    }
)
_WHOLE_JSON_CUT = "copilot.event.data"
_TEXT_CONTENT = frozenset(
    # input.value / output.value: the OpenInference copies of prompts and answers for LLM
    # viewers, and the task's title and session's name (docs/viewers.md): scrubbed and cut
    # as the GenAI ones are
    {
        "gen_ai.tool.call.result",
        "copilot.error.message",
        "input.value",
        "output.value",
        "copilot.task.title",
        "copilot.session.name",
    }
)
#: Attributes whose whole value is a path (the session's working directory and git root,
#: docs/attribution.md): `--paths` applies to the value as a whole, whatever its shape (a path
#: of one part, or one the text pattern would not take for a path).
_PATH_VALUES = frozenset({"copilot.cwd", "copilot.git.root"})
#: attribute key -> how its string value is scrubbed, for the keys not scrubbed as plain text
CONTENT_KIND = {
    **dict.fromkeys(_JSON_CONTENT, "json"),
    _WHOLE_JSON_CUT: "json_cut",
    **dict.fromkeys(_TEXT_CONTENT, "text"),
    **dict.fromkeys(_PATH_VALUES, "path"),
}
