"""The container image (Dockerfile, .dockerignore): read offline, then built and run for real
with podman.

The Dockerfile is parsed here (a small parser of the instructions it uses, after the
Dockerfile reference: https://docs.docker.com/reference/dockerfile/) and checked for what the
deployment relies on: a slim Python base, a non-root user, the state volume, the HEALTHCHECK on
/healthz, metrics served beyond the loopback, and a command line the CLI accepts (each
`otel-bridge` command and flag is parsed by the CLI's own parser). `cli_problem` and
`bridge_args` are reused by the Kubernetes, compose and service-unit tests.

Then the image is built as users build it (`podman build --format docker .`, with the
checkout's version as VERSION) on a local stand-in for its base (tests/podman.py: no registry
is reachable), and run as the manifests run it: read-only root, uid 10001, the session state
mounted read-only, the state in a volume, OTLP spans and metrics to a receiver on the host.
scripts/test.sh installs podman, runc and debootstrap; elsewhere, without them, the test skips
saying so.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from otel_bridge.cli._checks import contradiction
from otel_bridge.cli._config_file import ConfigFileError
from otel_bridge.cli._parser import build_parser, command_parser
from otel_bridge.cli._settings import apply_config
from tests import paths, podman
from tests.otlp_receiver import OtlpReceiver
from tests.processes import log_tail, terminate
from tests.prometheus import free_port

ROOT = paths.REPO
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
STATE_DIR = "/var/lib/otel-bridge"
METRICS_PORT = 9464


# ---------------------------------------------------------------------- helpers (reused)
def cli_problem(argv: Sequence[str]) -> str | None:
    """Why `otel-bridge ARGV...` would be refused by the CLI's parser (unknown command or flag,
    bad value), or None when it parses."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            args = build_parser().parse_args(list(argv))
    except SystemExit as exc:
        return f"otel-bridge {shlex.join(argv)}: exit {exc.code}: {stderr.getvalue().strip()}"
    if args.command is None:
        return f"otel-bridge {shlex.join(argv)}: no command"
    problem = contradiction(args, {})  # flags that contradict, refused as main() does
    if problem is not None:
        return f"otel-bridge {shlex.join(argv)}: exit 2: {problem}"
    return None


def bridge_args(argv: Sequence[str], files: Mapping[str, Path]) -> argparse.Namespace:
    """The options `otel-bridge ARGV...` runs with, as main() makes them: the command line
    parsed by the CLI's parser, then the file of its `--config` (a path in the container, read
    from the repository file that `files` says is mounted there) applied with the CLI's own
    `apply_config`, flags over the file, then the check of contradicting options."""
    problem = cli_problem(argv)
    assert problem is None, problem
    parser = build_parser()
    args = parser.parse_args(list(argv))
    if args.config is None:
        return args
    host = files.get(str(args.config))
    assert host is not None, f"--config {args.config}: no file is mounted there"
    args.config = host
    try:
        apply_config(parser, command_parser(parser, args.command), args, list(argv))
    except ConfigFileError as exc:
        raise AssertionError(f"otel-bridge {shlex.join(argv)}: exit 2: {exc}") from None
    problem = contradiction(args, {})
    assert problem is None, f"otel-bridge {shlex.join(argv)} with {host}: exit 2: {problem}"
    return args


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    arguments: str  # the rest of the logical line, continuations joined
    line: int  # where it starts

    def exec_form(self) -> list[str] | None:
        """The JSON array of the exec form (`CMD ["a", "b"]`), or None for the shell form."""
        text = self.arguments
        if not text.startswith("["):
            return None
        value = json.loads(text)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value)
        return value


def parse_dockerfile(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile: comments and blank lines dropped, lines ending in a
    backslash joined to the next (comment lines inside a continuation are skipped, as Docker
    does), the keyword split from its arguments. Parser directives (`# syntax=`) are comments
    here: the test forbids them anyway, since a syntax directive makes BuildKit fetch a
    frontend image from a registry."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        logical = " ".join(part for part in pending if part)
        pending = []
        keyword, _, arguments = logical.partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
    assert not pending, "the Dockerfile ends in a line continuation"
    return instructions


def healthcheck_command(instruction: Instruction) -> list[str]:
    """The command of `HEALTHCHECK [--option=value...] CMD ...` as an exec-form list."""
    words = instruction.arguments.split(" ")
    while words and words[0].startswith("--"):
        words.pop(0)
    assert words and words[0] == "CMD", f"HEALTHCHECK without CMD: {instruction.arguments}"
    rest = Instruction("CMD", " ".join(words[1:]).strip(), instruction.line)
    form = rest.exec_form()
    assert form is not None, "HEALTHCHECK CMD in exec form (no shell needed)"
    return form


def final_stage(instructions: list[Instruction]) -> list[Instruction]:
    """The instructions of the last FROM on (the image that is shipped)."""
    starts = [index for index, ins in enumerate(instructions) if ins.keyword == "FROM"]
    assert starts, "no FROM"
    return instructions[starts[-1] :]


def env_of(stage: list[Instruction]) -> dict[str, str]:
    """ENV key=value pairs (the form this Dockerfile uses), shell-split."""
    env: dict[str, str] = {}
    for ins in stage:
        if ins.keyword == "ENV":
            for word in shlex.split(ins.arguments):
                key, sep, value = word.partition("=")
                assert sep, f"ENV {ins.arguments}: use the key=value form"
                env[key] = value
    return env


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text())


# ---------------------------------------------------------------------- offline checks
def test_the_parser_reads_continuations_comments_and_exec_forms() -> None:
    parsed = parse_dockerfile(
        'FROM a AS b\n# c\nRUN x \\\n  # inside\n  && y\n\nCMD ["run", "--x"]\n'
        'HEALTHCHECK --interval=5s CMD ["true"]\n'
    )
    assert [(i.keyword, i.arguments, i.line) for i in parsed] == [
        ("FROM", "a AS b", 1),
        ("RUN", "x && y", 3),
        ("CMD", '["run", "--x"]', 7),
        ("HEALTHCHECK", '--interval=5s CMD ["true"]', 8),
    ]
    assert parsed[2].exec_form() == ["run", "--x"]
    assert healthcheck_command(parsed[3]) == ["true"]
    assert Instruction("CMD", "run --x", 1).exec_form() is None


def test_cli_problem_catches_unknown_flags_and_bad_values() -> None:
    assert cli_problem(["run", "--state-dir", "/s"]) is None
    assert "unknown option --metrics-host" in str(cli_problem(["run", "--metrics-host", "0.0.0.0"]))
    assert "not a port" in str(cli_problem(["run", "--prometheus-port", "99999"]))
    assert "unknown command 'serve'" in str(cli_problem(["serve"]))


def test_only_known_instructions_and_no_registry_directive(instructions: list[Instruction]) -> None:
    known = {
        "ARG", "FROM", "WORKDIR", "COPY", "RUN", "ENV", "VOLUME", "USER", "EXPOSE",
        "HEALTHCHECK", "ENTRYPOINT", "CMD", "LABEL", "STOPSIGNAL",
    }  # fmt: skip
    assert {ins.keyword for ins in instructions} <= known
    assert not DOCKERFILE.read_text().lstrip().startswith("# syntax"), (
        "a syntax directive makes BuildKit pull a frontend image: the offline build fails"
    )


def test_the_base_is_a_slim_python_that_can_be_replaced(instructions: list[Instruction]) -> None:
    args = {
        ins.arguments.partition("=")[0]: ins.arguments.partition("=")[2]
        for ins in instructions
        if ins.keyword == "ARG"
    }
    assert args["BASE_IMAGE"].startswith("python:3.11-slim"), args
    froms = [ins.arguments for ins in instructions if ins.keyword == "FROM"]
    assert froms and all(f.split()[0] == "${BASE_IMAGE}" for f in froms), froms


def test_the_package_is_installed_from_the_checkout_at_the_tested_versions(
    instructions: list[Instruction],
) -> None:
    from_context = [
        ins.arguments.split()[:-1]
        for ins in instructions
        if ins.keyword == "COPY" and not ins.arguments.startswith("--from=")
    ]
    sources = {source for sources in from_context for source in sources}
    assert {"pyproject.toml", "README.md", "LICENSE", "constraints.txt", "otel_bridge"} <= sources
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    runs = " ".join(ins.arguments for ins in instructions if ins.keyword == "RUN")
    assert "pip install" in runs and "-c constraints.txt ." in runs


def test_the_version_is_a_build_argument_the_tests_give(instructions: list[Instruction]) -> None:
    """The context has no .git for setuptools-scm to read the tag from: VERSION says it, as the
    pretended version of this distribution only, and the tests' build gives the checkout's."""
    stage = instructions[: [i.keyword for i in instructions].index("FROM", 2)]
    assert "VERSION" in {ins.arguments.partition("=")[0] for ins in stage if ins.keyword == "ARG"}
    runs = " ".join(ins.arguments for ins in stage if ins.keyword == "RUN")
    assert 'SETUPTOOLS_SCM_PRETEND_VERSION_FOR_OTEL_BRIDGE="$VERSION"' in runs
    assert podman.bridge_build_args("9.8.7") == ["--build-arg", "VERSION=9.8.7"]


def test_dockerignore_lets_in_what_the_build_copies_and_nothing_else() -> None:
    lines = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*", "ignore everything, then let in what the image needs"
    let_in = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert let_in == {"pyproject.toml", "README.md", "LICENSE", "constraints.txt", "otel_bridge"}


def test_the_image_runs_as_a_non_root_user(instructions: list[Instruction]) -> None:
    stage = final_stage(instructions)
    users = [ins.arguments for ins in stage if ins.keyword == "USER"]
    assert users, "no USER: the image would run as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) >= 1000, f"USER {users[-1]}: a numeric non-root uid"
    assert stage[-1].keyword in {"CMD", "ENTRYPOINT"}
    # nothing runs as root after the switch
    after = stage[[ins.keyword for ins in stage].index("USER") :]
    assert "RUN" not in {ins.keyword for ins in after}


def test_the_state_directory_is_a_volume_and_run_uses_it(instructions: list[Instruction]) -> None:
    stage = final_stage(instructions)
    volumes = [json.loads(ins.arguments) for ins in stage if ins.keyword == "VOLUME"]
    assert volumes == [[STATE_DIR]]
    env = env_of(stage)
    assert env["OTEL_BRIDGE_STATE_DIR"] == STATE_DIR  # run's default --state-dir
    assert env["PYTHONDONTWRITEBYTECODE"] == "1", "no .pyc written on a read-only root"
    runs = " ".join(ins.arguments for ins in stage if ins.keyword == "RUN")
    assert f"mkdir -p {STATE_DIR}" in runs and f"chown 10001:0 {STATE_DIR}" in runs


def test_the_command_line_exists_in_the_cli(instructions: list[Instruction]) -> None:
    stage = final_stage(instructions)
    entrypoint = next(ins for ins in reversed(stage) if ins.keyword == "ENTRYPOINT").exec_form()
    command = next(ins for ins in reversed(stage) if ins.keyword == "CMD").exec_form()
    assert entrypoint == ["otel-bridge"]
    assert command is not None
    assert cli_problem(command) is None
    args = build_parser().parse_args(command)
    assert args.command == "run"
    # metrics and probes reachable from outside the container's loopback (the pod's network)
    assert args.prometheus_host == "0.0.0.0"
    assert args.prometheus_port == METRICS_PORT
    assert [str(path) for path in args.session_state] == ["/copilot/session-state"]
    assert env_of(stage)["COPILOT_HOME"] == "/copilot"
    exposed = [ins.arguments for ins in stage if ins.keyword == "EXPOSE"]
    assert exposed == [str(METRICS_PORT)]


def test_the_healthcheck_probes_healthz_on_the_metrics_port(
    instructions: list[Instruction],
) -> None:
    checks = [ins for ins in final_stage(instructions) if ins.keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    command = healthcheck_command(checks[0])
    assert command[0] == "python3"
    assert f"http://127.0.0.1:{METRICS_PORT}/healthz" in command[-1]
    # the probe is valid Python (it is what Docker runs)
    compile(command[-1], "<healthcheck>", "exec")


def test_the_image_command_line_serves_its_probes_and_checkpoints_at_sigterm(
    instructions: list[Instruction], tmp_path: Path
) -> None:
    """The CMD and HEALTHCHECK run for real, outside a container: the image's paths moved
    under tmp_path and its address to 127.0.0.1 on a free port (the suite's servers bind the
    loopback only)."""
    stage = final_stage(instructions)
    command = next(ins for ins in reversed(stage) if ins.keyword == "CMD").exec_form()
    assert command is not None
    port = str(free_port())
    copilot = str(tmp_path / "copilot")
    moved = {"0.0.0.0": "127.0.0.1", str(METRICS_PORT): port}
    argv = [moved.get(word, word.replace("/copilot", copilot)) for word in command]
    assert argv != command and "127.0.0.1" in argv and port in argv
    session = tmp_path / "copilot" / "session-state" / "0b6c2a4e-8d4c-4d39-9f0c-3c5a4a3f1d11"
    session.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "run1_cli_prompt_basic" / "events.jsonl", session)
    state = tmp_path / "state"
    env = {
        **os.environ,
        **{k: v for k, v in env_of(stage).items() if k != "PATH"},
        "OTEL_BRIDGE_STATE_DIR": str(state),
        "COPILOT_HOME": copilot,
        "OTEL_TRACES_EXPORTER": "none",
        "PYTHONPATH": str(ROOT),
    }
    log = tmp_path / "bridge.log"
    with log.open("wb") as output:
        bridge = subprocess.Popen(
            [sys.executable, "-m", "otel_bridge", *argv], env=env, stdout=output, stderr=output
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while _get_or_zero(f"{base}/readyz") != 200:
            assert bridge.poll() is None and time.monotonic() < deadline, log_tail(log)
            time.sleep(0.2)
        check = healthcheck_command(next(ins for ins in stage if ins.keyword == "HEALTHCHECK"))
        probe = check[-1].replace(f":{METRICS_PORT}/", f":{port}/")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False)
        assert done.returncode == 0, done.stderr
        bridge.send_signal(signal.SIGTERM)
        assert bridge.wait(timeout=60) == 0, log_tail(log)
    finally:
        terminate(bridge)
    assert (state / "checkpoints.jsonl").is_file(), log_tail(log)
    # the probe fails once the bridge is gone, as Docker needs it to
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=False)
    assert done.returncode != 0


# ---------------------------------------------------------------------- the real image (podman)
SESSION_IDS = (
    "0b6c2a4e-8d4c-4d39-9f0c-3c5a4a3f1d11",
    "1c7d3b5f-9e5d-4e4a-8a1d-4d6b5b4a2e22",
    "2d8e4c60-af6e-4f5b-9b2e-5e7c6c5b3f33",
)
FIXTURE = ROOT / "tests" / "fixtures" / "run1_cli_prompt_basic" / "events.jsonl"
FIXTURE_SPANS = 6
#: The host's loopback as a container on slirp4netns with allow_host_loopback sees it.
HOST_LOOPBACK = "10.0.2.2"


def _say(config: pytest.Config, line: str) -> None:
    """A figure for the log of the run (wall times, sizes), shown whatever pytest captures."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        sys.stderr.write(f"\n[podman] {line}\n")


@pytest.fixture(scope="module")
def built_image(pytestconfig: pytest.Config) -> str:
    """The Dockerfile built as users build it (`podman build .`, VERSION the checkout's), on
    the local stand-in for its default base."""
    image, seconds = podman.bridge_image()
    base = podman.BASE
    sizes = {
        name: int(podman.podman("image", "inspect", "--format", "{{.Size}}", name).stdout)
        for name in (base, image)
    }
    _say(
        pytestconfig,
        f"image built in {seconds:.0f}s: {sizes[image] / 1e6:.0f} MB "
        f"({(sizes[image] - sizes[base]) / 1e6:.0f} MB over the {sizes[base] / 1e6:.0f} MB base)",
    )
    # The venv alone is added: no compiler, no pip cache, no build tree.
    assert sizes[image] - sizes[base] < 100e6, sizes
    return image


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _get_or_zero(url: str) -> int:
    try:
        return _get(url)[0]
    except OSError:
        return 0


def _add_session(copilot: Path, session_id: str) -> None:
    session = copilot / "session-state" / session_id
    session.mkdir(parents=True)
    shutil.copy(FIXTURE, session / "events.jsonl")
    for path in (session, session / "events.jsonl"):  # uid 10001 reads them
        path.chmod(0o755 if path.is_dir() else 0o644)


def _wait(what: str, done: Callable[[], bool], name: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            logs = podman.podman("logs", name, check=False)
            pytest.fail(f"{what}: not within {timeout:.0f}s\n{(logs.stdout + logs.stderr)[-4000:]}")
        time.sleep(0.5)


def test_the_image_runs_as_the_manifests_run_it(
    built_image: str, otlp_receiver: OtlpReceiver, tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    """Read-only root, uid 10001, the session state read-only and the state volume writable,
    OTLP spans and metrics to a receiver on the host: spans arrive, the probes and the
    image's own HEALTHCHECK pass, SIGTERM delivers what is queued and exits 0, and a restart
    resumes from the checkpoints with nothing lost or repeated."""
    started = time.monotonic()
    copilot = tmp_path / "copilot"
    (copilot / "session-state").mkdir(parents=True)
    for path in (copilot, copilot / "session-state"):
        path.chmod(0o755)
    _add_session(copilot, SESSION_IDS[0])
    port = free_port()
    suffix = uuid.uuid4().hex[:8]
    name, volume = f"otel-bridge-test-{suffix}", f"otel-bridge-state-{suffix}"
    endpoint = otlp_receiver.http_endpoint.replace("127.0.0.1", HOST_LOOPBACK)
    podman.podman(
        "run", "-d", "--name", name, *podman.ULIMITS,
        "--read-only", "--tmpfs", "/tmp", "--user", "10001",
        "-v", f"{volume}:{STATE_DIR}", "-v", f"{copilot}:/copilot:ro",
        # a network namespace of its own, so that the image's port 9464 and HEALTHCHECK are
        # used as they are, published on a free loopback port of the host
        "--network", "slirp4netns:allow_host_loopback=true",
        "-p", f"127.0.0.1:{port}:{METRICS_PORT}",
        "-e", f"OTEL_EXPORTER_OTLP_ENDPOINT={endpoint}", "-e", "OTEL_METRICS_EXPORTER=otlp",
        "-e", "OTEL_EXPORTER_OTLP_TIMEOUT=2",
        built_image,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait("/readyz 200", lambda: _get_or_zero(f"{base}/readyz") == 200, name)
        assert _get(f"{base}/healthz") == (200, "ok\n")
        otlp_receiver.wait_for_spans(FIXTURE_SPANS, timeout=60)
        health = podman.podman("healthcheck", "run", name, check=False)
        assert health.returncode == 0, health.stdout + health.stderr  # the image's own command
        assert podman.podman("exec", name, "id", "-u").stdout.strip() == "10001"
        written = podman.podman(
            "exec", name, "python3", "-c",
            "import os\nfor p in ('/', '/copilot/session-state'):\n"
            "    try: open(os.path.join(p, 'x'), 'w')\n"
            "    except OSError as e: print(e.errno)\n",
        ).stdout.split()  # fmt: skip
        assert written == ["30", "30"], written  # EROFS: both read-only

        # A second session while the receiver refuses: its spans wait in the queue, and
        # SIGTERM (podman stop, as a pod's end) delivers them once it answers again.
        otlp_receiver.mode = "unavailable"
        _add_session(copilot, SESSION_IDS[1])
        _wait(
            "a failed export of the second session",
            lambda: "otel_bridge_export_failures_total{" in _get(f"{base}/metrics")[1],
            name,
        )
        assert len(otlp_receiver.spans()) == FIXTURE_SPANS  # nothing of it arrived yet
        stopped = time.monotonic()
        stop = subprocess.Popen(
            ["podman", "stop", "-t", "30", name], env=podman.podman_env(),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(1)  # SIGTERM is on its way; the collector comes back meanwhile
        otlp_receiver.mode = "ok"
        assert stop.wait(timeout=60) == 0
        _say(pytestconfig, f"stop: {time.monotonic() - stopped:.1f}s (grace period 30 s)")
        state = podman.podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
        assert state == "0", podman.podman("logs", name).stderr[-3000:]
        spans = otlp_receiver.spans()
        assert len(spans) == 2 * FIXTURE_SPANS
        assert otlp_receiver.requests("metrics"), "no OTLP metrics (the last export at SIGTERM)"

        # Restarted with a third session written meanwhile: that one arrives, nothing twice.
        _add_session(copilot, SESSION_IDS[2])
        podman.podman("start", name)
        _wait("/readyz 200 after the restart", lambda: _get_or_zero(f"{base}/readyz") == 200, name)
        otlp_receiver.wait_for_spans(3 * FIXTURE_SPANS, timeout=60)
        podman.podman("stop", "-t", "30", name)
        assert (
            podman.podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip() == "0"
        )
        span_ids = [span["span_id"] for span in otlp_receiver.spans()]
        assert len(span_ids) == 3 * FIXTURE_SPANS == len(set(span_ids))
        listing = podman.podman(
            "run", "--rm", *podman.ULIMITS, "--entrypoint", "python3",
            "-v", f"{volume}:/s:ro", built_image,
            "-c", "import os; print(sorted(os.listdir('/s')))",
        ).stdout  # fmt: skip
        assert "checkpoints.jsonl" in listing
    finally:
        podman.podman("rm", "-f", name, check=False)
        podman.podman("volume", "rm", "-f", volume, check=False)
        _say(pytestconfig, f"{name}: {time.monotonic() - started:.0f}s")
