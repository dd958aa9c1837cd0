"""Settings from three places: flags, a configuration file (`--config FILE`, read by
`_config_file`), and the environment. Flags win over the file; the file wins over the
bridge's own variables' defaults (OTEL_BRIDGE_STATE_DIR, OTEL_BRIDGE_CONTENT_HASH_SALT); the
OTEL_* variables apply as the OpenTelemetry SDK reads them, whatever the file says
(docs/configuration.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ._config_file import COMMANDS, command_line_options, config_keys, load_config
from ._options import Given
from ._parser import command_parser

__all__ = ["apply_config"]


def apply_config(
    parser: argparse.ArgumentParser,
    sub: argparse.ArgumentParser,
    args: argparse.Namespace,
    argv: Sequence[str],
) -> None:
    """Set in `args` what the file of `args.config` says, but for what a flag gave. An
    option the file sets counts as given (`_options.Given`): the checks of contradicting
    flags see it.

    Raises:
        ConfigFileError: as `load_config`.
    """
    others = set().union(
        *(config_keys(command_parser(parser, name)) for name in COMMANDS if name != args.command)
    )
    values = load_config(args.config, args.command, sub, others)
    given = command_line_options(parser, sub, argv)
    tracked = {a.dest for a in sub._actions if isinstance(a, Given)}
    for dest, value in values.items():
        if dest in given:
            continue
        setattr(args, dest, value)
        if dest in tracked:
            args.given_options = getattr(args, "given_options", set()) | {dest}
