"""Running the real GitHub Copilot CLI offline against the fake model server, and the scenarios
the end-to-end tests and `scripts/record_fixtures.py` share.

The CLI comes from npm, installed in the repository root (CI does it):

    npm install --no-save @github/copilot@1.0.102

Every run gets a fresh COPILOT_HOME (the session logs land in `<home>/session-state/<id>/`), a
small project directory to work in, and an environment that keeps the developer's own Copilot
configuration, tokens and OpenTelemetry settings out:

    COPILOT_OFFLINE=true COPILOT_PROVIDER_BASE_URL=<fake>/v1 COPILOT_MODEL=gpt-4.1
    COPILOT_PROVIDER_API_KEY=<API_KEY> COPILOT_OTEL_FILE_EXPORTER_PATH=<native-otel.jsonl>
    copilot -p <prompt> --allow-all-tools --no-auto-update --output-format json

The CLI masks the provider key wherever it occurs in its stdout: with a key of "x" every "x" in
`--output-format json` became "******" (docs/recorded-captures.md). `API_KEY` is long and random
enough never to occur in real output.

No pytest in here: the recording script imports it too.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.fake_llm import FakeLLM, Request, load_script
from tests.processes import sigint_default

__all__ = [
    "API_KEY",
    "CLI_ENV",
    "COPILOT_VERSION",
    "INSTALL_HINT",
    "SCENARIOS",
    "CliRun",
    "CopilotMissing",
    "Scenario",
    "ScenarioRun",
    "Tui",
    "Workspace",
    "copilot_env",
    "find_copilot",
    "run_copilot",
    "run_scenario",
    "selected_version",
    "version_tuple",
]

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
COPILOT_VERSION = "1.0.102"
INSTALL_HINT = f"npm install --no-save @github/copilot@{COPILOT_VERSION}"
MODEL = "gpt-4.1"
#: The provider key given to the CLI: long enough never to occur in real output (see above).
API_KEY = "fake-llm-provider-key-7c1e9d2a4b6f80e3q"
BASE_ARGS = ("--allow-all-tools", "--no-auto-update", "--output-format", "json")
#: Variables of the developer's shell that would change what the CLI does or where it reports.
_STRIPPED_PREFIXES = ("COPILOT_", "OTEL_", "GH_", "GITHUB_", "XDG_")


class CopilotMissing(RuntimeError):
    """The npm-installed Copilot CLI is not where the tests look for it."""


#: Chooses the CLI the end-to-end tests and the recorder run: a version installed by
#: `scripts/test.sh` under `.copilot-cli/<version>/` (e.g. `1.0.81`), or the directory of an npm
#: prefix holding `node_modules/@github/copilot`. Unset: COPILOT_VERSION in `./node_modules`.
CLI_ENV = "OTEL_BRIDGE_TEST_COPILOT"
#: Where `scripts/test.sh` installs the older CLIs, one npm prefix per version (git ignores it).
OLDER_CLIS = REPO / ".copilot-cli"


def cli_install(version: str | None = None, root: Path = REPO) -> tuple[Path, str | None]:
    """(npm prefix, expected version) of the CLI to run: `version`, else $OTEL_BRIDGE_TEST_COPILOT,
    else COPILOT_VERSION in `root`. A path in the variable is taken as it is (any version)."""
    chosen = version or os.environ.get(CLI_ENV, "").strip() or COPILOT_VERSION
    if "/" in chosen or chosen.startswith("."):
        return Path(chosen).resolve(), None
    if chosen == COPILOT_VERSION and (root / "node_modules" / "@github" / "copilot").is_dir():
        return root, chosen
    return OLDER_CLIS / chosen, chosen


def selected_version(version: str | None = None) -> str:
    """The version of the CLI `find_copilot(version)` runs (read from its package.json)."""
    prefix, expected = cli_install(version)
    loader = prefix / "node_modules" / "@github" / "copilot" / "package.json"
    try:
        return str(json.loads(loader.read_text()).get("version"))
    except (OSError, ValueError):
        return expected or "unknown"


def version_tuple(version: str) -> tuple[int, ...]:
    """ "1.0.81" -> (1, 0, 81), for comparing CLI versions."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def find_copilot(root: Path = REPO, version: str | None = None) -> Path:
    """The platform binary of `@github/copilot` installed by npm (see `cli_install`).

    The binary itself (not the Node loader `node_modules/.bin/copilot`, which starts it as a
    child): signals sent to the process we start then reach the CLI.
    """
    prefix, wanted = cli_install(version, root)
    hint = (
        INSTALL_HINT
        if wanted in (None, COPILOT_VERSION)
        else f"npm install --no-save --prefix .copilot-cli/{wanted} @github/copilot@{wanted}"
    )
    modules = prefix / "node_modules" / "@github"
    loader = modules / "copilot" / "package.json"
    if not loader.is_file():
        raise CopilotMissing(
            f"the Copilot CLI is not installed in {prefix / 'node_modules'}; the end-to-end tests "
            f"drive the real CLI. Install it with:\n    cd {root} && {hint}"
        )
    version = json.loads(loader.read_text()).get("version")
    if wanted is not None and version != wanted:
        raise CopilotMissing(
            f"{prefix / 'node_modules'} holds @github/copilot {version}, {wanted} was asked for "
            f"(docs/cli-versions.md). Install it with:\n    cd {root} && {hint}"
        )
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    system = {"darwin": "darwin", "linux": "linux", "win32": "win32"}.get(
        sys.platform, sys.platform
    )
    flavours = [f"{system}-{machine}"]
    if system == "linux":
        flavours.append(f"linuxmusl-{machine}")
    for flavour in flavours:
        binary = (
            modules / f"copilot-{flavour}" / ("copilot.exe" if system == "win32" else "copilot")
        )
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
    raise CopilotMissing(
        f"@github/copilot {version} is installed but its platform package "
        f"(@github/copilot-{flavours[0]}) is missing; reinstall with:\n"
        f"    cd {root} && {hint}"
    )


@dataclass(frozen=True)
class Workspace:
    """A COPILOT_HOME and a project directory under `root`."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def session_state(self) -> Path:
        return self.home / "session-state"

    @property
    def native_otel(self) -> Path:
        """Where the CLI's own OpenTelemetry file exporter writes (spans and metrics)."""
        return self.root / "native-otel.jsonl"

    @classmethod
    def create(cls, root: Path) -> Workspace:
        workspace = cls(root)
        workspace.home.mkdir(parents=True)
        workspace.project.mkdir()
        (workspace.project / "README.md").write_text(
            "# demo project\n\nA tiny project for tests.\n"
        )
        (workspace.project / "hello.py").write_text('print("hello")\n')
        return workspace

    def event_logs(self) -> list[Path]:
        return sorted(self.session_state.glob("*/events.jsonl"))

    def session_log(self) -> Path:
        """The one session's events.jsonl (every scenario here makes a single session)."""
        logs = self.event_logs()
        if len(logs) != 1:
            raise AssertionError(
                f"expected one session log in {self.session_state}, found {len(logs)}: {logs}"
            )
        return logs[0]


def copilot_env(
    workspace: Workspace, base_url: str, *, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The CLI's environment: offline, the fake provider, its own telemetry to a file."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if not k.startswith(_STRIPPED_PREFIXES)}
    env.update(
        {
            "HOME": str(workspace.home),
            "COPILOT_HOME": str(workspace.home),
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": base_url,
            "COPILOT_MODEL": MODEL,
            "COPILOT_PROVIDER_API_KEY": API_KEY,
            "COPILOT_OTEL_FILE_EXPORTER_PATH": str(workspace.native_otel),
        }
    )
    return env


@dataclass
class CliRun:
    """One `copilot -p` process."""

    args: list[str]
    returncode: int | None  # None: killed after the timeout
    seconds: float
    stdout: Path  # the live JSON stream (--output-format json)
    stderr: Path
    note: str | None = None
    env: dict[str, str] = field(default_factory=dict, repr=False)

    def live_events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.stdout.read_text(errors="replace").splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def describe(self) -> dict[str, Any]:
        """The command line (with the variables that matter), exit status and time."""
        shown = {k: v for k, v in self.env.items() if k.startswith("COPILOT_") or k == "HOME"}
        command = " ".join(f"{k}={shlex.quote(v)}" for k, v in shown.items())
        return {
            "cmd": f"{command} {shlex.join(self.args)}".strip(),
            "rc": self.returncode,
            "seconds": round(self.seconds, 2),
            "note": self.note,
        }


#: interrupt(process, fake, workspace) -> a note; called while the CLI runs
Interrupt = Callable[[subprocess.Popen, FakeLLM, Workspace], str | None]


def run_copilot(
    binary: Path,
    workspace: Workspace,
    fake: FakeLLM,
    prompt: str,
    *,
    extra: Sequence[str] = (),
    tag: str = "",
    timeout: float = 120.0,
    interrupt: Interrupt | None = None,
    base_args: Sequence[str] = BASE_ARGS,
    new_session: bool = False,
) -> CliRun:
    """Run `copilot -p prompt` in the workspace's project directory; wait for it to end.

    The process is always gone when this returns (killed after `timeout`). `new_session` starts
    it in a process group of its own, so that an interrupt can kill it with its children.
    """
    args = [str(binary), "-p", prompt, *base_args, *extra]
    stdout = workspace.root / f"live-events{tag}.jsonl"
    stderr = workspace.root / f"stderr{tag}.txt"
    env = copilot_env(workspace, fake.url)
    started = time.monotonic()
    note = None
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(
            # an interrupt sends SIGINT: the CLI gets it at its default, however pytest started
            sigint_default(args) if interrupt is not None else args,
            cwd=workspace.project,
            env=env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=new_session,
        )
        try:
            if interrupt is not None:
                note = interrupt(process, fake, workspace)
            returncode: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            returncode = None
        except BaseException:
            process.kill()
            process.wait()
            raise
    return CliRun(args, returncode, time.monotonic() - started, stdout, stderr, note, env)


def start_copilot(
    binary: Path, workspace: Workspace, fake: FakeLLM, prompt: str, extra: Sequence[str] = ()
) -> subprocess.Popen[bytes]:
    """`copilot -p prompt` in the workspace's project directory, in the background, in a process
    group of its own (so that `processes.terminate(group=True)` ends its shells too); its live
    stream and stderr in the workspace's live-events.jsonl and stderr.txt. The caller ends it:
    for a test that looks at the session while it runs (`run_copilot` waits for the end)."""
    with (
        (workspace.root / "live-events.jsonl").open("wb") as out,
        (workspace.root / "stderr.txt").open("wb") as err,
    ):
        return subprocess.Popen(
            [str(binary), "-p", prompt, *BASE_ARGS, *extra],
            cwd=workspace.project,
            env=copilot_env(workspace, fake.url),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )


class Tui:
    """The interactive CLI (no `-p`) in a tmux session of its own, as a person runs it.

    tmux gives the CLI the terminal a test run may not have (a background job, no TTY), and
    lets the test read the screen (`screen`, `wait_for_screen`) and type (`keys`). The tmux
    server has its own socket in a fresh directory (never the user's tmux), no configuration
    file, and the CLI's environment (`copilot_env`). The project folder is trusted beforehand
    in COPILOT_HOME's config.json (`trustedFolders`), else the CLI asks that first. `stop()`
    ends the tmux server and the CLI with it (its process group, by its pid, if it lingers).
    """

    SESSION = "cli"

    def __init__(self, binary: Path, workspace: Workspace, fake: FakeLLM) -> None:
        self.binary = binary
        self.workspace = workspace
        self.fake = fake
        self._dir = Path(tempfile.mkdtemp(prefix="cli-tmux-"))  # short: a socket path is
        self.socket = self._dir / "sock"  # limited to ~100 bytes (sun_path)
        self.pid: int | None = None

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", str(self.socket), "-f", os.devnull, *args],
            env=copilot_env(self.workspace, self.fake.url),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=check,
        )

    def start(self, prompt: str, extra: Sequence[str] = ()) -> Tui:
        """Start `copilot -i prompt` (interactive, the prompt sent at once) in the project."""
        config = self.workspace.home / "config.json"
        config.write_text(json.dumps({"trustedFolders": [str(self.workspace.project)]}))
        self._tmux(
            "new-session", "-d", "-s", self.SESSION, "-x", "160", "-y", "50",
            "-c", str(self.workspace.project),
            "--", str(self.binary), "--no-auto-update", "-i", prompt, *extra,
        )  # fmt: skip
        shown = self._tmux("display-message", "-p", "-t", self.SESSION, "#{pane_pid}")
        self.pid = int(shown.stdout.strip())
        return self

    def screen(self) -> str:
        """The text on the CLI's screen now ("" once its session is gone)."""
        done = self._tmux("capture-pane", "-p", "-J", "-t", self.SESSION, check=False)
        return done.stdout if done.returncode == 0 else ""

    def wait_for_screen(self, text: str, timeout: float = 90.0) -> str:
        """Wait until `text` is on the screen; the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() >= deadline:
                raise AssertionError(f"{text!r} never showed on the CLI's screen:\n{screen}")
            time.sleep(0.2)

    def keys(self, *keys: str) -> None:
        """Type keys (tmux names: `Enter`, `Down`, `C-c`...)."""
        self._tmux("send-keys", "-t", self.SESSION, *keys)

    def stop(self) -> None:
        """End the tmux server (the CLI gets SIGHUP), then SIGKILL the CLI's process group if
        it is still there after a while; remove the socket's directory."""
        self._tmux("kill-server", check=False)
        if self.pid is not None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and _alive(self.pid):
                time.sleep(0.1)
            if _alive(self.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)  # tmux made it a session leader
            self.pid = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Tui:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process took the number
        return False
    return True


def _when_tool_runs(rule: str, after: float, act: Callable[[subprocess.Popen], str]) -> Interrupt:
    """An interrupt that waits until the fake model handed out the tool `rule` asked for and
    the log shows it running, then `after` seconds more, then calls `act` on the CLI."""

    def interrupt(process: subprocess.Popen, fake: FakeLLM, workspace: Workspace) -> str:
        started = time.monotonic()
        fake.wait_for(rule, timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            logs = workspace.event_logs()
            if logs and b'"tool.execution_start"' in logs[0].read_bytes():
                break
            time.sleep(0.05)
        time.sleep(after)
        if process.poll() is not None:
            return "the CLI ended before the interrupt"
        return f"{act(process)} {time.monotonic() - started:.1f}s after start"

    return interrupt


def sigint_during_tool(rule: str, after: float) -> Interrupt:
    """SIGINT the CLI `after` seconds into the tool the rule `rule` asked for."""

    def act(process: subprocess.Popen) -> str:
        process.send_signal(signal.SIGINT)
        return "SIGINT"

    return _when_tool_runs(rule, after, act)


def sigkill_group_during_tool(rule: str, after: float) -> Interrupt:
    """SIGKILL the CLI and its children (its process group: run it with `new_session`) `after`
    seconds into the tool the rule `rule` asked for, as a crash or an OOM kill would: the CLI
    writes nothing more (no turn_end, no shutdown)."""

    def act(process: subprocess.Popen) -> str:
        os.killpg(process.pid, signal.SIGKILL)
        return "SIGKILL (process group)"

    return _when_tool_runs(rule, after, act)


#: The stdio MCP server the `mcp_servers` scenarios configure (tests/e2e/mcp_server.py).
MCP_SERVER = Path(__file__).resolve().parent / "mcp_server.py"


def mcp_config(*names: str) -> str:
    """`--additional-mcp-config` JSON: the demo MCP server under each of `names`, started with
    this Python (which must have the `mcp` package)."""
    servers = {
        name: {
            "type": "local",
            "command": sys.executable,
            "args": [str(MCP_SERVER)],
            "tools": ["*"],
        }
        for name in names
    }
    return json.dumps({"mcpServers": servers})


# --- scenarios ----------------------------------------------------------------------------------


def bash_call(command: str, description: str) -> dict[str, Any]:
    """A fake model's call of the CLI's bash tool."""
    return {"name": "bash", "arguments": {"command": command, "description": description}}


#: A custom agent (`--agent reviewer`) and a skill, as the CLI finds them in the project.
REVIEWER_AGENT = (
    ".github/agents/reviewer.agent.md",
    "---\nname: reviewer\ndescription: Reviews code for the tests.\n---\n"
    "You are REVIEWER-AGENT. Review the code you are pointed at.\n",
)
GREETING_SKILL = (
    ".github/skills/greeting/SKILL.md",
    "---\nname: greeting\ndescription: How to greet people in this project. "
    "Use when asked to greet.\n---\nGREETING-SKILL-BODY: greet with `echo hello-from-skill`.\n",
)

#: The `origin` of the `git_repo` scenario: a GitHub remote that is never contacted (offline).
GIT_ORIGIN = "https://github.com/octo-org/demo-project.git"


def git_checkout(project: Path, origin: str) -> None:
    """Make `project` a git checkout: `main` with one commit of what is there, an identity of
    its own (HOME is the workspace's: no global configuration), and `origin` as its remote."""

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.name", "Test User")
    git("config", "user.email", "test@example.com")
    git("config", "commit.gpgsign", "false")
    git("add", "-A")
    git("commit", "-q", "-m", "first commit")
    git("remote", "add", "origin", origin)


#: Scripts of scenarios that have no recorded fixture (the fixtures keep their own script.json).
INLINE_SCRIPTS: dict[str, dict[str, Any]] = {
    "one_tool": {
        "responses": [
            {
                "name": "tool",
                "when": {"assistant_count": 0},
                "text": "Let me look.",
                "tool_calls": [bash_call("echo hello-from-fake-llm && ls", "List files")],
            },
            {
                "name": "answer",
                "when": {"assistant_count": 1},
                "text": "The project has README.md and hello.py.",
            },
        ]
    },
    "autopilot": {
        "responses": [
            {
                "name": "tool",
                "when": {"assistant_count": 0},
                "tool_calls": [bash_call("cat hello.py", "Show hello.py")],
            },
            {
                "name": "task-complete",
                "when": {"assistant_count": 1},
                "tool_calls": [
                    {"name": "task_complete", "arguments": {"summary": "hello.py prints hello."}}
                ],
            },
            {"name": "after-complete", "repeat": True, "text": "Done."},
        ]
    },
}


@dataclass(frozen=True)
class Scenario:
    """A scripted session: the prompts given to `copilot -p`, one process each (the second and
    later with `--resume <session>`), the fake model's script, and how to disturb it.

    The script is the fixture's `script.json` when a recorded fixture of the same name exists
    (`fixture`), so that tests and recordings follow the same script; else an inline one.
    """

    name: str
    prompts: tuple[str, ...]
    flags: tuple[str, ...] = ()
    fixture: str | None = None  # tests/fixtures/<fixture>/script.json
    interrupt_rule: str | None = None  # SIGINT while the tool this rule asked for runs
    interrupt_after: float = 3.0  # ... this many seconds into it
    timeout: float = 120.0
    never_used: tuple[str, ...] = ()  # rules the CLI is expected not to reach
    kill: bool = False  # the interrupt is SIGKILL of the CLI's process group, not SIGINT
    allow_all_tools: bool = True  # False: no --allow-all-tools (permission requests happen)
    mcp_servers: tuple[str, ...] = ()  # names of demo MCP servers to configure
    files: tuple[tuple[str, str], ...] = ()  # (path in the project, text) written before the run
    cli: str | None = None  # the CLI version it is recorded with (None: the selected one)
    #: run in a git checkout (`git init`, a first commit on `main`) with this `origin` remote,
    #: so that session.start carries the repository context (docs/attribution.md)
    git_origin: str | None = None

    def script(self, fixtures: Path = FIXTURES) -> dict[str, Any]:
        if self.fixture is not None:
            return load_script(fixtures / self.fixture / "script.json")
        return load_script(INLINE_SCRIPTS[self.name])

    def interrupt(self, after: float | None = None) -> Interrupt | None:
        if self.interrupt_rule is None:
            return None
        if self.kill:
            return sigkill_group_during_tool(
                self.interrupt_rule, self.interrupt_after if after is None else after
            )
        return sigint_during_tool(
            self.interrupt_rule, self.interrupt_after if after is None else after
        )


def _scenarios(*items: Scenario) -> dict[str, Scenario]:
    return {s.name: s for s in items}


SCENARIOS: dict[str, Scenario] = _scenarios(
    Scenario("one_tool", ("Show me what is in this project.",)),
    Scenario("autopilot", ("What does hello.py print?",), flags=("--autopilot",)),
    Scenario(
        "resume",
        ("FIRST-PROMPT: echo first-run.", "SECOND-PROMPT: echo second-run."),
        fixture="resume",
    ),
    Scenario(
        "edit_resume",
        ("EDIT-FIRST: create notes.txt.", "EDIT-SECOND: edit notes.txt."),
        fixture="edit_resume",
    ),
    Scenario(
        "edit_subagent",
        ("EDIT-MAIN: have a sub-agent write todo.md, then edit it.", "EDIT-AGAIN: edit again."),
        fixture="edit_subagent",
    ),
    Scenario(
        "parallel_tools",
        ("Run several tools at once, then a failing command.",),
        fixture="parallel_tools",
    ),
    Scenario(
        "autopilot_nudge",
        ("Describe this project.",),
        flags=("--autopilot",),
        fixture="autopilot_nudge",
    ),
    Scenario("subagent", ("MAIN-TASK: use a sub-agent to echo something.",), fixture="subagent"),
    Scenario(
        "subagent_parallel",
        ("MAIN-TASK: use two sub-agents in parallel.",),
        fixture="subagent_parallel",
    ),
    Scenario(
        "subagent_nested",
        ("MAIN-TASK: delegate to an agent that delegates again.",),
        fixture="subagent_nested",
    ),
    Scenario(
        "subagent_deep",
        ("MAIN-TASK: delegate down a chain of agents.",),
        fixture="subagent_deep",
        never_used=("L5-1", "L5-2"),
    ),  # the depth limit is 4
    Scenario(
        "subagent_failed",
        ("MAIN-TASK: delegate to an agent whose model fails.",),
        fixture="subagent_failed",
        timeout=540,
    ),
    Scenario(
        "subagent_background",
        ("MAIN-TASK: start a background agent.",),
        fixture="subagent_background",
        timeout=240,
    ),
    Scenario(
        "provider_error",
        ("This request will fail at the provider.",),
        fixture="provider_error",
        timeout=540,
    ),
    Scenario(
        "custom_agent",
        ("REVIEW-TASK: review hello.py.",),
        flags=("--agent", "reviewer"),
        fixture="custom_agent",
        files=(REVIEWER_AGENT,),
    ),
    Scenario("skill", ("GREET-TASK: greet me.",), fixture="skill", files=(GREETING_SKILL,)),
    Scenario(
        "autopilot_limit",
        ("Describe this project.",),
        flags=("--autopilot", "--max-autopilot-continues", "2"),
        fixture="autopilot_limit",
    ),
    Scenario("abort", ("Run a slow command.",), fixture="abort", interrupt_rule="slow-bash"),
    Scenario(
        "abort_try1", ("Run a slow command.",), fixture="abort_try1", interrupt_rule="slow-bash"
    ),
    Scenario(
        "abort_subagent",
        ("MAIN-TASK: have a sub-agent run a slow command.",),
        fixture="abort_subagent",
        interrupt_rule="slow-bash",
    ),
    Scenario(
        "crash_resume",
        ("KILL-PROMPT: run a slow command.", "RESUME-PROMPT: carry on."),
        fixture="crash_resume",
        interrupt_rule="slow-bash",
        interrupt_after=2.0,
        kill=True,
    ),
    Scenario(
        "permission_denied",
        ("PERM-PROMPT: remove a file, write a file, read a file.",),
        flags=("--deny-tool=shell(rm)",),
        fixture="permission_denied",
        allow_all_tools=False,
    ),
    Scenario(
        "git_repo",
        ("GIT-PROMPT: start a feature branch.", "RESUME-GIT-PROMPT: what is on the branch?"),
        fixture="git_repo",
        git_origin=GIT_ORIGIN,
    ),
    Scenario(
        "mcp_tools",
        ("MCP-PROMPT: look a key up, then crash the server.",),
        fixture="mcp_tools",
        mcp_servers=("demo",),
    ),
    # Recorded with older CLIs (docs/cli-versions.md): `scripts/test.sh` installs them.
    *(
        Scenario(f"{base}_cli{tag}", prompts, fixture=f"{base}_cli{tag}", cli=version)
        for version, tag in (("1.0.81", "1081"), ("1.0.92", "1092"))
        for base, prompts in (
            ("one_tool", ("Show me what is in this project.",)),
            ("subagent", ("MAIN-TASK: use a sub-agent to echo something.",)),
        )
    ),
    *(
        Scenario(
            f"subagent_failed_cli{tag}",
            ("MAIN-TASK: delegate to an agent whose model fails.",),
            fixture=f"subagent_failed_cli{tag}",
            timeout=240,
            cli=version,
        )
        for version, tag in (("1.0.81", "1081"), ("1.0.92", "1092"))
    ),
)


@dataclass
class ScenarioRun:
    """What one scenario left behind."""

    scenario: Scenario
    workspace: Workspace
    script: dict[str, Any]
    runs: list[CliRun]
    requests: list[Request]  # what the fake model answered, in order
    unused_rules: list[str]

    @property
    def events_file(self) -> Path:
        return self.workspace.session_log()

    @property
    def session_id(self) -> str:
        return self.events_file.parent.name

    def events(self) -> list[dict[str, Any]]:
        return [
            json.loads(line) for line in self.events_file.read_text().splitlines() if line.strip()
        ]


def run_scenario(
    scenario: Scenario,
    root: Path,
    *,
    binary: Path | None = None,
    script: dict[str, Any] | None = None,
    interrupt_after: float | None = None,
    log_requests: bool = True,
    before_each: Callable[[int, Workspace], None] | None = None,
) -> ScenarioRun:
    """Run every prompt of `scenario` in a fresh workspace under `root` (which must not exist)."""
    binary = binary or find_copilot(version=scenario.cli)
    workspace = Workspace.create(root)
    for relative, text in scenario.files:  # agent definitions, skills...
        path = workspace.project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if scenario.git_origin is not None:
        git_checkout(workspace.project, scenario.git_origin)
    script = script if script is not None else scenario.script()
    runs: list[CliRun] = []
    with FakeLLM(script, log_path=root / "requests.jsonl" if log_requests else None) as fake:
        for number, prompt in enumerate(scenario.prompts):
            extra = list(scenario.flags)
            if scenario.mcp_servers:
                extra += ["--additional-mcp-config", mcp_config(*scenario.mcp_servers)]
            if number > 0:
                extra += ["--resume", workspace.session_log().parent.name]
            if before_each is not None:
                before_each(number, workspace)
            runs.append(
                run_copilot(
                    binary,
                    workspace,
                    fake,
                    prompt,
                    extra=extra,
                    tag="" if number == 0 else f".run{number + 1}",
                    timeout=scenario.timeout,
                    interrupt=scenario.interrupt(interrupt_after) if number == 0 else None,
                    base_args=BASE_ARGS
                    if scenario.allow_all_tools
                    else tuple(a for a in BASE_ARGS if a != "--allow-all-tools"),
                    new_session=scenario.kill,
                )
            )
        requests = list(fake.requests)
        unused = fake.unused()
    return ScenarioRun(scenario, workspace, script, runs, requests, unused)
