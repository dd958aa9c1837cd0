"""Every flag the documentation names is one of otel-bridge's, or another tool's said here:
docs/metrics.md once told of a `--max-label-values` that no command had."""

from __future__ import annotations

import argparse
import re

from otel_bridge.cli._parser import build_parser
from tests import paths

#: Flags of other programs the documentation quotes, by program. A flag of otel-bridge's that
#: is renamed or removed must not hide here.
OTHER_TOOLS = {
    "copilot (the CLI whose logs are read)": """--resume --continue --agent --autopilot
        --allow-all-tools --allow-tool --deny-tool --max-autopilot-continues --output-format
        --no-auto-update --additional-mcp-config --session-id""",
    "docker, podman, kubectl, systemctl, git, pip": """--build --build-arg --variant --tmpfs
        --stop-timeout --secret --read-only --name --from-literal --now --depth --format
        --include --password --password-stdin --token --token-file --all-files --web --check
        --prefix --list --branch""",
    "helm": "--namespace --create-namespace --set --reuse-values --strict",
    "command lines whose secrets the scrubber removes (docs/privacy.md)": """--auth-token
        --credentials --max-tokens --key-id --key --access-key --license-key --account-key
        --stdin --with-token --passphrase-fd""",
    "bash": "--norc --noprofile",
    "a browser driven headless": """--headless --no-sandbox --disable-gpu --hide-scrollbars
        --screenshot --user-data-dir""",
    "examples of secrets the scrubber removes": "--api-key --client-secret --db-password",
    "bench/ and scripts/": """--pythonpath --only --out --work --no-save --live-rates --against
        --csv --plot""",
    "a misspelt flag, as the error about it quotes it": "--prometheus-prot",
}

_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")


def _bridge_flags() -> set[str]:
    parser = build_parser()
    flags = {o for a in parser._actions for o in a.option_strings}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags |= {o for a in sub._actions for o in a.option_strings}
    return flags


def _documents() -> list:
    root = paths.REPO
    return [
        root / "README.md",
        *sorted((root / "docs").glob("*.md")),
        *sorted((root / "otel_bridge").rglob("*.md")),
    ]


def test_every_flag_the_docs_name_exists() -> None:
    known = _bridge_flags() | {f for text in OTHER_TOOLS.values() for f in text.split()}
    unknown = {
        f"{document.relative_to(paths.REPO)}: {flag}"
        for document in _documents()
        for flag in _FLAG.findall(document.read_text())
        if flag not in known
    }
    assert sorted(unknown) == []


def test_no_flag_of_the_bridge_is_listed_as_another_tool_s() -> None:
    others = {f for text in OTHER_TOOLS.values() for f in text.split()}
    assert sorted(others & _bridge_flags()) == []
