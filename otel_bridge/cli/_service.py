"""`otel-bridge install-service`: start `otel-bridge run` at login, as each platform expects.

- Linux: a systemd user unit, `$XDG_CONFIG_HOME/systemd/user/otel-bridge.service` (default
  `~/.config`). Its checkpoints are in `%S/otel-bridge` (`StateDirectory=`: `$XDG_STATE_HOME`,
  default `~/.local/state`, the same place `run` uses by default), its log goes to the journal
  (`journalctl --user -u otel-bridge`). systemd.exec(5), systemd.service(5), systemd.unit(5)
  (https://www.freedesktop.org/software/systemd/man/latest/systemd.exec.html).
- macOS: a launchd agent, `~/Library/LaunchAgents/local.otel-bridge.plist`, with its state in
  `~/Library/Application Support/otel-bridge` and its log in `~/Library/Logs/otel-bridge/`
  (launchd.plist(5): ProgramArguments, KeepAlive, ExitTimeOut, StandardErrorPath).

The service runs the executable that ran this command (its absolute path, or this Python with
`-m otel_bridge`), so a venv or pipx install keeps working without a PATH. Its options, the
arguments after `--`, go to a configuration file it reads with `--config`
(`$XDG_CONFIG_HOME/otel-bridge/otel-bridge.toml`; on macOS beside the state), mode 0600 (a
content hash salt is a secret): the unit's command line stays short, and the options are
changed by editing that file. The OTEL_* variables
and COPILOT_HOME of the installing shell are copied into the file (mode 0600: OTLP headers may
hold tokens), since a service does not see the shell's environment. Arguments are quoted so
that the file says exactly them: for systemd, control characters as C escapes (a newline
would end the unit's line); launchd's XML cannot hold most, so they are refused. SIGTERM
(`systemctl stop`, `launchctl bootout`) flushes for `--export-timeout` seconds: the stop
timeouts leave 15 more.
"""

from __future__ import annotations

import argparse
import os
import plistlib
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import _env as env
from .._exceptions import BridgeError
from .._progress import printable
from ..export import trace_exporter_names
from ..files._safe_open import open_regular
from ._checks import contradiction
from ._config_file import command_line_options, to_toml
from ._parser import build_parser, command_parser

__all__ = ["PLATFORMS", "ServiceFile", "bridge_command", "install_service", "render"]

PLATFORMS = ("systemd", "launchd")
UNIT_NAME = "otel-bridge.service"
#: The file of run's options beside the service (`config_text`).
CONFIG_NAME = "otel-bridge.toml"
LAUNCHD_LABEL = "local.otel-bridge"
STOP_MARGIN_S = 15
#: More than a unit or its options file written here holds: read back no further.
_MAX_SERVICE_FILE = 1 << 20


def run_words(
    state: str, run_args: Sequence[str], environ: Mapping[str, str], config: str
) -> list[str]:
    """`run` and its arguments in the service: `--state-dir state` (unless the arguments
    give one, or --no-checkpoints), `--console-format summary` when spans go to the console
    (a line per finished task: the console's default off a terminal is a JSON object per
    span, too much for a log; and an explicit format would add the console to an OTLP
    endpoint's export), then `--config config`, the file that holds `run_args`
    (`config_text`): a flag given before it would override the file."""
    options = build_parser().parse_args(["run", *run_args])
    words = ["run"]
    if options.state_dir is None and not options.no_checkpoints:
        words += ["--state-dir", state]
    names = trace_exporter_names(copied_environment(environ), options.traces_file is not None)
    if options.console_format is None and "console" in names:
        words += ["--console-format", "summary"]
    return [*words, "--config", config]


def config_text(run_args: Sequence[str], export_timeout: float) -> str:
    """The service's configuration file: `run_args` as its keys (`_config_file`), under a
    header that says how to change them."""
    parser = build_parser()
    sub = command_parser(parser, "run")
    options = command_line_options(parser, sub, ["run", *run_args])
    keys = to_toml(sub, options)
    stop = int(export_timeout) + STOP_MARGIN_S
    return (
        "# The options of `otel-bridge run` for the service `otel-bridge install-service` wrote:\n"
        "# each key a long flag without its dashes (docs/configuration.md). Edit, then restart\n"
        "# the service. Where spans go (the OTEL_* variables) is in the service's environment.\n"
        f"# The service manager waits {stop} s for a stop: a longer export-timeout needs\n"
        "# install-service --force with it.\n" + (keys or "# (none: run's defaults)\n")
    )


@dataclass(frozen=True)
class ServiceFile:
    """What install-service writes, and what to tell the user."""

    path: Path
    text: str
    directories: tuple[Path, ...]  # to create before the service starts (launchd does not)
    where: str  # where the state and the log are
    next_commands: tuple[str, ...]  # to enable and start it
    config_path: Path  # run's options (`config_text`), which the service reads at start
    config: str
    restart: str  # the command that restarts it once the options change


def bridge_command() -> list[str]:
    """The absolute command of the running otel-bridge: its script, or this interpreter with
    -m otel_bridge (python -m otel_bridge, or an embedding)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "otel-bridge" and script.is_file():
        return [os.path.abspath(script)]
    return [os.path.abspath(sys.executable), "-m", "otel_bridge"]


def _refuse_newlines(environ: Mapping[str, str]) -> None:
    """A variable the service needs whose value holds a newline (a header pasted from a file,
    `OTEL_EXPORTER_OTLP_HEADERS="$(cat headers)"` with two lines) cannot be copied: it was
    left out without a word, and the service ran without its auth header, every export
    refused. Refused here, naming the variable and never its value (it may be a token).

    Raises:
        BridgeError: one line naming each such variable (exit status 2).
    """
    names = [
        key
        for key, value in sorted(environ.items())
        if (key.startswith(env.OTEL_PREFIX) or key == env.COPILOT_HOME) and "\n" in value
    ]
    if names:
        raise BridgeError(
            f"{', '.join(names)} {'holds' if len(names) == 1 else 'hold'} a newline, which "
            "the service's environment cannot carry (the service would run without "
            f"{'it' if len(names) == 1 else 'them'}): remove the newline and run "
            "install-service again (the value is not shown)"
        )


def copied_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of the installing shell the service needs: OTEL_* and COPILOT_HOME (one
    holding a newline, which install-service refuses, left out)."""
    return {
        key: value
        for key, value in sorted(environ.items())
        if (key.startswith(env.OTEL_PREFIX) or key == env.COPILOT_HOME) and "\n" not in value
    }


#: What makes a word of a unit file need quotes: a space, a quote, a backslash, a control
#: character (a newline would end the line, and the unit with it).
_NEEDS_QUOTES = re.compile("[\\s\"'\\\\\x00-\x1f\x7f-\x9f]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_C_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
#: What a launchd property list (XML 1.0) cannot hold as it is: control characters but tab
#: and newline (plistlib refuses them; a carriage return comes back as a newline).
_NOT_IN_PLIST = re.compile("[\x00-\x08\x0b-\x1f]")


def _systemd_quote(word: str, *, expands_variables: bool = True) -> str:
    """One word of ExecStart= (which expands $VARIABLES) or Environment= (which does not),
    quoted as systemd.syntax(7) reads it: `%` doubled (specifiers), `$` doubled where
    variables expand; inside double quotes, quotes and backslashes escaped and control
    characters written as C escapes (`\\n`, `\\x1b`), which systemd decodes: a newline in
    an argument would otherwise end the line and give a unit systemd refuses. A word that is
    `;` alone is quoted too (bare, it would start a second command)."""
    escaped = word.replace("%", "%%")
    if expands_variables:
        escaped = escaped.replace("$", "$$")
    if escaped and escaped != ";" and _NEEDS_QUOTES.search(escaped) is None:
        return escaped
    inner = escaped.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{_CONTROL.sub(_c_escape, inner)}"'


def _c_escape(match: re.Match[str]) -> str:
    """A control character as a C escape systemd decodes (systemd.syntax(7))."""
    char = match.group(0)
    named = _C_ESCAPES.get(char)
    if named is not None:
        return named
    return f"\\x{ord(char):02x}" if ord(char) < 0x80 else f"\\u{ord(char):04x}"


def systemd_unit(
    command: Sequence[str],
    run_args: Sequence[str],
    environ: Mapping[str, str],
    export_timeout: float,
) -> ServiceFile:
    config_home = Path(environ.get(env.XDG_CONFIG_HOME) or Path.home() / ".config")
    config = config_home / "otel-bridge" / CONFIG_NAME
    # %S is the user manager's $XDG_STATE_HOME (~/.local/state): written raw, not quoted
    words = run_words("%S/otel-bridge", run_args, environ, str(config))
    exec_start = " ".join(
        [_systemd_quote(w) for w in command]
        + [w if w == "%S/otel-bridge" else _systemd_quote(w) for w in words]
    )
    environment = [
        "Environment=" + _systemd_quote(f"{key}={value}", expands_variables=False)
        for key, value in copied_environment(environ).items()
    ]
    text = "\n".join(
        [
            "# Written by `otel-bridge install-service`; `otel-bridge install-service --force`",
            "# writes it again. Logs: journalctl --user -u otel-bridge",
            "[Unit]",
            "Description=otel-bridge: GitHub Copilot CLI sessions as OpenTelemetry traces",
            "",
            "[Service]",
            "Type=exec",
            f"ExecStart={exec_start}",
            "StateDirectory=otel-bridge",
            "StateDirectoryMode=0700",
            *environment,
            "Restart=on-failure",
            "RestartSec=5",
            # SIGTERM flushes for --export-timeout, then exits 0
            f"TimeoutStopSec={int(export_timeout) + STOP_MARGIN_S}",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )
    return ServiceFile(
        path=config_home / "systemd" / "user" / UNIT_NAME,
        text=text,
        directories=(),
        where="state in $XDG_STATE_HOME/otel-bridge (~/.local/state/otel-bridge), "
        "log: journalctl --user -u otel-bridge",
        next_commands=(
            "systemctl --user daemon-reload",
            f"systemctl --user enable --now {UNIT_NAME}",
        ),
        config_path=config,
        config=config_text(run_args, export_timeout),
        restart=f"systemctl --user restart {UNIT_NAME}",
    )


def launchd_plist(
    command: Sequence[str],
    run_args: Sequence[str],
    environ: Mapping[str, str],
    export_timeout: float,
) -> ServiceFile:
    home = Path.home()
    state = home / "Library" / "Application Support" / "otel-bridge"
    logs = home / "Library" / "Logs" / "otel-bridge"
    log = str(logs / "otel-bridge.log")
    config = state / CONFIG_NAME
    arguments = [*command, *run_words(str(state), run_args, environ, str(config))]
    environment = copied_environment(environ)
    for word in (*arguments, *environment.values()):
        if _NOT_IN_PLIST.search(word):
            raise BridgeError(
                f"install-service: {printable(word)!r} holds a control character a launchd "
                "property list cannot hold; give `run` another value"
            )
    agent = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": arguments,
        "EnvironmentVariables": environment,
        "RunAtLoad": True,
        # started again when it fails, not when it stops cleanly (exit 0 after SIGTERM)
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        "ExitTimeOut": int(export_timeout) + STOP_MARGIN_S,
        "ProcessType": "Background",
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }
    path = home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    domain = f"gui/{os.getuid()}"
    return ServiceFile(
        path=path,
        text=plistlib.dumps(agent, fmt=plistlib.FMT_XML).decode("utf-8"),
        directories=(state, logs),
        where=f"state in {state}, log in {log}",
        next_commands=(f"launchctl bootstrap {domain} {shlex.quote(str(path))}",),
        config_path=config,
        config=config_text(run_args, export_timeout),
        restart=f"launchctl kickstart -k {domain}/{LAUNCHD_LABEL}",
    )


def render(
    platform: str,
    run_args: Sequence[str],
    environ: Mapping[str, str],
    export_timeout: float,
    command: Sequence[str] | None = None,
) -> ServiceFile:
    """The service file for `platform` ("systemd" or "launchd")."""
    build = systemd_unit if platform == "systemd" else launchd_plist
    return build(command or bridge_command(), run_args, environ, export_timeout)


def default_platform() -> str:
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux"):
        return "systemd"
    raise BridgeError(
        f"install-service knows Linux (systemd) and macOS (launchd), not {sys.platform}: "
        "run `otel-bridge run` from your system's service manager"
    )


def _run_options(run_args: Sequence[str], environ: Mapping[str, str]) -> argparse.Namespace:
    """The service's `run` arguments, checked as run checks them, with the environment the
    service gets (exit 2 when refused)."""
    parser = build_parser()
    options = parser.parse_args(["run", *run_args])
    problem = contradiction(options, copied_environment(environ))
    if problem is not None:
        command_parser(parser, "run").error(problem)
    return options


def install_service(args: argparse.Namespace) -> int:
    """Write (or --print) the service file; say where its state and log go and how to start
    it. Exit status 1 when a different file is there already and --force was not given."""
    run_args = list(args.run_args)
    options = _run_options(run_args, os.environ)
    _refuse_newlines(os.environ)
    platform = args.platform or default_platform()
    service = render(platform, run_args, os.environ, options.export_timeout)
    if args.print:
        sys.stdout.write(f"{service.text}\n# {service.config_path}\n{service.config}")
        return 0
    files = ((service.path, service.text), (service.config_path, service.config))
    there = [path for path, _ in files if path.exists()]
    if there and not args.force:
        differ = [path for path, text in files if _text_of(path) != text]
        if not differ:
            print(f"{service.path} is already installed, unchanged")
            _print_next(service)
            return 0
        names = " and ".join(map(str, differ))
        print(
            f"{names} {'differs' if len(differ) == 1 else 'differ'} from what this would "
            "write: --force to overwrite (--print shows the new files)",
            file=sys.stderr,
        )
        return 1
    for directory in (service.path.parent, service.config_path.parent, *service.directories):
        directory.mkdir(parents=True, exist_ok=True)
    for path, text in files:
        _write_private(path, text)
    _say_written(service)
    return 0


def _say_written(service: ServiceFile) -> None:
    copied = sorted(copied_environment(os.environ))
    print(f"wrote {service.path}")
    print(f"  {service.where}")
    if copied:
        print(f"  with {', '.join(copied)} from this shell (edit the file to change them)")
    print(f"wrote {service.config_path}")
    print(f"  the options of run: edit it, then {service.restart}")
    _print_next(service)


def _text_of(path: Path) -> str | None:
    """What an installed file says, read as every file the bridge reads (`open_regular`: a
    FIFO or a device there is no unit, and is not waited on); None if there is none such."""
    try:
        with open_regular(path) as handle:
            return handle.read(_MAX_SERVICE_FILE).decode("utf-8", "replace")
    except OSError:
        return None


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by its owner only (it may hold OTLP tokens)."""
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def _print_next(service: ServiceFile) -> None:
    print("enable and start it with:")
    for command in service.next_commands:
        print(f"  {command}")
