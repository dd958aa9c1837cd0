"""`--root-name TEMPLATE`: the task's root span named from its bounded facts, an opt-in.

A trace list (Jaeger's search, Grafana's) shows each trace as its root span's service and name,
its duration, span count and errors: with the GenAI name every task reads `invoke_agent
copilot`. The facts that tell tasks apart without their text (repository, mode, outcome) are
attributes of the root, which a list does not show; this names the root from them. It is an
opt-in because a backend makes an operation of every distinct name: each field multiplies them
(docs/viewers.md says by how much).
"""

from __future__ import annotations

import string
from collections.abc import Mapping

from .. import semconv as sc
from .._records import AttributeValue

__all__ = ["DEFAULT_ROOT_NAME", "ROOT_NAME_FIELDS", "check_root_name", "root_name"]

#: The name without the opt-in: the GenAI conventions' `invoke_agent {gen_ai.agent.name}`.
DEFAULT_ROOT_NAME = "invoke_agent {agent}"

#: Template fields and the root attribute each one reads (attribution included). `title` is
#: content: the root has it only with content capture on.
ROOT_NAME_FIELDS: Mapping[str, str] = {
    "agent": sc.GEN_AI_AGENT_NAME,
    "mode": sc.COPILOT_MODE,
    "outcome": sc.COPILOT_TASK_OUTCOME,
    "model": sc.GEN_AI_REQUEST_MODEL,
    "repository": sc.COPILOT_REPOSITORY,
    "branch": sc.VCS_REF_HEAD_NAME,
    "client": sc.COPILOT_CLIENT_NAME,
    "title": sc.COPILOT_TASK_TITLE,
}
#: What a field with no value gives.
MISSING = "-"
#: Longest name made: values come from the log (a repository or branch of up to 1,024
#: characters would be a name no list can show).
MAX_NAME = 200

_FORMATTER = string.Formatter()


def check_root_name(template: str) -> str:
    """The template if every `{field}` is one of ROOT_NAME_FIELDS (no format spec or
    conversion) and it names something; else ValueError saying what is wrong."""
    try:
        parts = list(_FORMATTER.parse(template))
    except ValueError as exc:  # an unmatched brace
        raise ValueError(f"{template!r}: {exc} (write a brace as {{{{ or }}}})") from None
    fields = ", ".join(f"{{{name}}}" for name in ROOT_NAME_FIELDS)
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in ROOT_NAME_FIELDS or spec or conversion:
            shown = (
                "{"
                + field
                + (f"!{conversion}" if conversion else "")
                + (f":{spec}" if spec else "")
                + "}"
            )
            raise ValueError(f"{template!r}: {shown} is not a field (one of {fields})")
    if not template.strip():
        raise ValueError("an empty name")
    return template


def root_name(template: str, attributes: Mapping[str, AttributeValue]) -> str:
    """The name `template` (checked) gives a root with these attributes: each field's value,
    `-` when it has none; at most MAX_NAME characters."""
    out: list[str] = []
    for literal, field, _, _ in _FORMATTER.parse(template):
        out.append(literal)
        if field is not None:
            value = attributes.get(ROOT_NAME_FIELDS[field])
            out.append(MISSING if value is None or value == "" else str(value))
    name = " ".join("".join(out).split())  # no newline or run of blanks from a value
    return name[:MAX_NAME] or MISSING
