#!/usr/bin/env python3
"""Re-record the session logs in tests/fixtures/ from the real Copilot CLI.

    npm install --no-save @github/copilot@1.0.102        # once, in the repository root
    python scripts/record_fixtures.py                     # every recordable fixture, in place
    python scripts/record_fixtures.py --out /tmp/fx abort resume
    python scripts/record_fixtures.py --list

Each fixture directory that holds a `script.json` is a scenario: the fake model
(tests/e2e/fake_llm.py) follows that script while the CLI runs the scenario's prompts offline
(tests/e2e/copilot.py: `copilot -p ... --allow-all-tools --no-auto-update`, a fresh
COPILOT_HOME, COPILOT_OFFLINE=true against the fake server on 127.0.0.1; the abort scenarios get
SIGINT 3 s into their slow tool). The new `events.jsonl` and the unchanged `script.json` are
written to `--out DIR/<fixture>/` (default: tests/fixtures itself). `--all-files` also keeps
what else the run left: workspace.yaml, the live JSON stream (live-events*.jsonl), the CLI's own
telemetry (native-otel.jsonl), every request the fake model answered (requests.jsonl), stderr
and runs.json (command lines, exit codes, wall times).

A scenario that names a CLI version (`*_cli1081`, `*_cli1092`: `Scenario.cli`) runs that version,
installed by `scripts/test.sh` under `.copilot-cli/<version>/` (docs/cli-versions.md); the others
run the CLI $OTEL_BRIDGE_TEST_COPILOT selects, 1.0.102 by default.

`sdk_abort` is driven through the Python SDK (pip install github-copilot-sdk==1.0.27) instead:
`session.abort()` 2 s into the slow tool, then a second message in the same session.
`sdk_steering` (a steering and a queued message sent while a slow tool runs) and
`sdk_background_shell` (an async bash whose notification comes after the final answer) are
driven through the SDK too, and keep their live stream (live-events.jsonl) beside the log.

The three fixtures without a script.json (run1_cli_prompt_basic, run3_cli_autopilot,
sdk1_two_user_messages) are earlier real CLI captures whose scripts were not kept;
this command leaves them alone.

A fixture is replaced only when its scenario ran to the end; the exit status is 1 if any did
not. Recorded logs differ from run to run (ids, times, the order of racing events; see
docs/recorded-captures.md), so tests must not depend on more than the scenario guarantees.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.copilot import (  # noqa: E402
    API_KEY,
    FIXTURES,
    MODEL,
    SCENARIOS,
    CopilotMissing,
    Scenario,
    Workspace,
    copilot_env,
    find_copilot,
    run_scenario,
)
from tests.e2e.fake_llm import FakeLLM, load_script  # noqa: E402

SDK_SCENARIOS = ("sdk_abort", "sdk_steering", "sdk_background_shell")
KEPT_ALWAYS = ("events.jsonl", "script.json")


def recordable(source: Path) -> list[str]:
    """Fixtures under `source` that have a script and a scenario that can replay it."""
    names = []
    for directory in sorted(p for p in source.iterdir() if (p / "script.json").is_file()):
        scenario = SCENARIOS.get(directory.name)
        if directory.name in SDK_SCENARIOS or (
            scenario is not None and scenario.fixture == directory.name
        ):
            names.append(directory.name)
    return names


def record_cli(name: str, binary: Path, script_path: Path, work: Path) -> dict[str, Any]:
    """Run the `-p` scenario; returns its run descriptions. The workspace is `work`."""
    scenario: Scenario = SCENARIOS[name]
    if scenario.cli is not None:  # a fixture of an older CLI (tests/e2e/copilot.py)
        binary = find_copilot(version=scenario.cli)
    run = run_scenario(scenario, work, binary=binary, script=load_script(script_path))
    runs = [r.describe() for r in run.runs]
    problems = []
    if any(r["rc"] is None for r in runs):
        problems.append("the CLI timed out")
    optional = {str(r.get("name")) for r in run.script["responses"] if r.get("repeat")}
    optional.update(scenario.never_used)
    missed = [n for n in run.unused_rules if n not in optional]
    if missed:
        problems.append(f"scripted responses never used: {missed}")
    return {"runs": runs, "problems": problems}


async def _stop_client(client: Any, process: Any) -> None:
    """Stop the SDK client and close the CLI process's pipes, which the SDK leaves open."""
    await client.stop()
    for pipe in (getattr(process, "stdout", None), getattr(process, "stderr", None)):
        if pipe is not None and not pipe.closed:
            pipe.close()


def _sdk_client(binary: Path, workspace: Workspace, fake_url: str) -> Any:
    """A CopilotClient on the real CLI binary, offline against the fake model. The provider is
    given per session, and the CLI refuses COPILOT_OFFLINE together with one: those variables
    are left out."""
    from copilot import CopilotClient, RuntimeConnection

    session_provider = (
        "COPILOT_OFFLINE",
        "COPILOT_PROVIDER_BASE_URL",
        "COPILOT_PROVIDER_API_KEY",
        "COPILOT_MODEL",
    )
    env = {k: v for k, v in copilot_env(workspace, fake_url).items() if k not in session_provider}
    return CopilotClient(
        connection=RuntimeConnection.for_stdio(path=str(binary)),
        base_directory=str(workspace.home),
        working_directory=str(workspace.project),
        env=env,
    )


def record_sdk_abort(binary: Path, script_path: Path, work: Path) -> dict[str, Any]:
    """The SDK scenario: a slow tool, `session.abort()`, then another message."""
    try:
        from copilot import PermissionHandler
    except ImportError as exc:
        raise RuntimeError(
            "sdk_abort needs the Python SDK: pip install github-copilot-sdk==1.0.27"
        ) from exc
    workspace = Workspace.create(work)
    live = (work / "live-events.jsonl").open("w")
    events: list[dict[str, Any]] = []
    started = time.monotonic()

    def on_event(event: Any) -> None:
        data = event.to_dict()
        events.append(data)
        live.write(json.dumps(data) + "\n")
        live.flush()

    async def wait_for(predicate: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(predicate(e) for e in events):
            if time.monotonic() > deadline:
                raise TimeoutError("the SDK session did not get there")
            await asyncio.sleep(0.1)

    async def main(fake: FakeLLM) -> None:
        client = _sdk_client(binary, workspace, fake.url)
        await client.start()
        process = getattr(client, "_cli_process", None)
        try:
            session = await client.create_session(
                on_permission_request=PermissionHandler.approve_all,
                model=MODEL,
                provider={"type": "openai", "base_url": fake.url, "api_key": API_KEY},
                working_directory=str(workspace.project),
            )
            session.on(on_event)
            await session.send("SDK-SLOW: run a slow command.")
            await wait_for(lambda e: e["type"] == "tool.execution_start")
            await asyncio.sleep(2)
            await session.abort()
            await wait_for(lambda e: e["type"] == "session.idle")
            idle = sum(e["type"] == "session.idle" for e in events)
            await session.send("SDK-AFTER: say something.")
            await wait_for(lambda _: sum(e["type"] == "session.idle" for e in events) > idle)
            await session.disconnect()
        finally:
            await _stop_client(client, process)

    try:
        with FakeLLM(load_script(script_path), log_path=work / "requests.jsonl") as fake:
            asyncio.run(main(fake))
    finally:
        live.close()
    return {
        "runs": [
            {
                "how": "github-copilot-sdk: create_session, send, abort 2 s into the "
                "tool, send again (scripts/record_fixtures.py)",
                "seconds": round(time.monotonic() - started, 2),
            }
        ],
        "problems": [],
    }


async def _wait_events(
    events: list[dict[str, Any]], predicate: Any, timeout: float = 60
) -> dict[str, Any]:
    """The first recorded event that satisfies `predicate`, waiting for it."""
    deadline = time.monotonic() + timeout
    while True:
        for event in events:
            if predicate(event):
                return event
        if time.monotonic() > deadline:
            raise TimeoutError("the SDK session did not get there")
        await asyncio.sleep(0.1)


def _idle_after(events: list[dict[str, Any]], marker: str) -> Any:
    """A predicate: a session.idle after the first event whose JSON contains `marker`."""

    def predicate(event: dict[str, Any]) -> bool:
        texts = [json.dumps(e) for e in events]
        first = next((i for i, t in enumerate(texts) if marker in t), None)
        return first is not None and event["type"] == "session.idle" and events.index(event) > first

    return predicate


async def _drive_steering(session: Any, events: list[dict[str, Any]]) -> None:
    """A slow tool; 2 s into it a steering message (mode "immediate") and a queued one
    (mode "enqueue"); then wait until the queued message was answered and the session idles."""
    await session.send("STEER-SLOW: run a slow command.")
    await _wait_events(events, lambda e: e["type"] == "tool.execution_start")
    await asyncio.sleep(2)
    await session.send("STEER-NOW: also say that you were steered.", mode="immediate")
    await session.send("QUEUED-LATER: answer this one afterwards.", mode="enqueue")
    await _wait_events(events, _idle_after(events, "Queued message answered"), timeout=90)
    await asyncio.sleep(8)  # a shell the steering pushed to the background may still report


async def _drive_background_shell(session: Any, events: list[dict[str, Any]]) -> None:
    """An async bash (3 s) and the final answer; then wait for the shell's notification and
    the loop it resumes (read_bash, another turn) to go idle."""
    await session.send("BG-SHELL: start a background job and tell me when it is done.")
    await _wait_events(events, _idle_after(events, "background job printed"), timeout=90)
    await asyncio.sleep(2)


SDK_DRIVERS = {
    "sdk_steering": (
        _drive_steering,
        "github-copilot-sdk: send, 2 s into the slow tool send(mode=immediate) and "
        "send(mode=enqueue), wait for both answers (scripts/record_fixtures.py)",
    ),
    "sdk_background_shell": (
        _drive_background_shell,
        "github-copilot-sdk: send; the async shell reports after the final answer; wait "
        "for the resumed loop to go idle (scripts/record_fixtures.py)",
    ),
}


def record_sdk_scenario(name: str, binary: Path, script_path: Path, work: Path) -> dict[str, Any]:
    """An SDK scenario of `SDK_DRIVERS`: one session, driven by its coroutine; the live stream
    goes to live-events.jsonl."""
    from copilot import PermissionHandler

    drive, how = SDK_DRIVERS[name]
    workspace = Workspace.create(work)
    events: list[dict[str, Any]] = []
    started = time.monotonic()

    async def main(fake: FakeLLM) -> None:
        client = _sdk_client(binary, workspace, fake.url)
        await client.start()
        process = getattr(client, "_cli_process", None)
        try:
            session = await client.create_session(
                on_permission_request=PermissionHandler.approve_all,
                model=MODEL,
                provider={"type": "openai", "base_url": fake.url, "api_key": API_KEY},
                working_directory=str(workspace.project),
            )
            session.on(lambda event: events.append(event.to_dict()))
            await drive(session, events)
            await session.disconnect()
        finally:
            await _stop_client(client, process)

    try:
        with FakeLLM(load_script(script_path), log_path=work / "requests.jsonl") as fake:
            asyncio.run(main(fake))
    finally:
        with (work / "live-events.jsonl").open("w") as live:
            for event in events:
                # Kept small: the internal copy of the whole conversation goes, and the system
                # prompt keeps its first 200 characters (the bridge reads neither).
                if event.get("type") == "model.messages_snapshot":
                    continue
                data = event.get("data")
                if event.get("type") == "system.message" and isinstance(data, dict):
                    data["content"] = str(data.get("content", ""))[:200]
                live.write(json.dumps(event) + "\n")
    return {
        "runs": [{"how": how, "seconds": round(time.monotonic() - started, 2)}],
        "problems": [],
    }


def collect(
    work: Path, target: Path, script_path: Path, info: dict[str, Any], all_files: bool
) -> list[str]:
    """Copy what the run left into `target` (replaced). Returns the file names written."""
    workspace = Workspace(work)
    log = workspace.session_log()
    staging = target.with_name(target.name + ".recording")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    shutil.copyfile(log, staging / "events.jsonl")
    shutil.copyfile(script_path, staging / "script.json")  # the script, byte for byte
    scenario = SCENARIOS.get(target.name)
    # a git scenario keeps workspace.yaml too: tests read its client_name (docs/attribution.md)
    keep_workspace = all_files or (scenario is not None and scenario.git_origin is not None)
    if keep_workspace and (log.parent / "workspace.yaml").exists():
        shutil.copyfile(log.parent / "workspace.yaml", staging / "workspace.yaml")
    if all_files:
        for path in work.iterdir():
            if path.is_file() and path.name.startswith(
                ("live-events", "stderr", "native-otel", "requests")
            ):
                shutil.copyfile(path, staging / path.name)
        (staging / "runs.json").write_text(json.dumps(info["runs"], indent=1) + "\n")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return sorted(p.name for p in target.iterdir())


def record_one(
    name: str, binary: Path, source: Path, out: Path, scratch: Path, all_files: bool
) -> tuple[str, bool, str]:
    script_path = source / name / "script.json"
    # read before anything is written: `out` may be `source`
    script_copy = scratch / f"{name}.script.json"
    shutil.copyfile(script_path, script_copy)
    work = scratch / name
    started = time.monotonic()
    try:
        if name in SDK_DRIVERS:
            info = record_sdk_scenario(name, binary, script_copy, work)
        elif name in SDK_SCENARIOS:
            info = record_sdk_abort(binary, script_copy, work)
        else:
            info = record_cli(name, binary, script_copy, work)
        written = collect(work, out / name, script_copy, info, all_files)
        if name in SDK_DRIVERS and "live-events.jsonl" not in written:
            # the live stream is part of these fixtures: tests compare it with the log
            shutil.copyfile(work / "live-events.jsonl", out / name / "live-events.jsonl")
            written.append("live-events.jsonl")
    except Exception as exc:  # report, keep the old fixture, go on with the others
        return name, False, f"FAILED ({type(exc).__name__}: {exc}); fixture left as it was"
    lines = sum(1 for _ in (out / name / "events.jsonl").open())
    note = f"{time.monotonic() - started:5.1f}s  events.jsonl {lines} lines  {', '.join(written)}"
    if info["problems"]:
        note += "  WARNING: " + "; ".join(info["problems"])
    return name, True, note


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Re-record tests/fixtures/* from the real Copilot CLI (offline, scripted).",
        epilog="The CLI must be installed first: npm install --no-save @github/copilot@1.0.102",
    )
    parser.add_argument(
        "fixtures",
        nargs="*",
        metavar="FIXTURE",
        help="fixtures to record (default: every one with a script.json)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=FIXTURES,
        help="where to write <fixture>/events.jsonl and script.json "
        "(default: tests/fixtures, in place)",
    )
    parser.add_argument(
        "--scripts",
        type=Path,
        default=FIXTURES,
        help="where the fixtures' script.json files are read (default: tests/fixtures)",
    )
    parser.add_argument(
        "--all-files",
        action="store_true",
        help="also keep workspace.yaml, live events, the CLI's own telemetry, "
        "the requests, stderr and runs.json",
    )
    parser.add_argument(
        "--jobs", "-j", type=int, default=1, help="record this many scenarios at once (default: 1)"
    )
    parser.add_argument(
        "--work",
        type=Path,
        help="run the scenarios in DIR/<fixture> (must not exist yet) instead of a temporary "
        "directory: the logs then hold stable paths (a random temporary name can look like a "
        "secret to the scrubber and be redacted from reports)",
    )
    parser.add_argument("--list", action="store_true", help="list the recordable fixtures")
    args = parser.parse_args(argv)

    available = recordable(args.scripts)
    if args.list:
        for name in available:
            scenario = SCENARIOS.get(name)
            how = (
                "python SDK"
                if name in SDK_SCENARIOS
                else " | ".join(
                    [*(scenario.prompts if scenario else ()), *(scenario.flags if scenario else ())]
                )
            )
            print(f"{name:22} {how}")
        return 0
    unknown = [n for n in args.fixtures if n not in available]
    if unknown:
        parser.error(f"not recordable: {', '.join(unknown)} (recordable: {', '.join(available)})")
    try:
        binary = find_copilot()
    except CopilotMissing as exc:
        print(exc, file=sys.stderr)
        return 2
    names = args.fixtures or available
    args.out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="record-fixtures-") as temporary,
        ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool,
    ):
        if args.work is not None:
            args.work.mkdir(parents=True, exist_ok=True)
        futures = [
            pool.submit(
                record_one,
                name,
                binary,
                args.scripts,
                args.out,
                args.work or Path(temporary),
                args.all_files,
            )
            for name in names
        ]
        results = []
        for future in futures:
            name, ok, note = future.result()
            print(f"{name:22} {note}", flush=True)
            results.append(ok)
    print(f"{sum(results)} of {len(results)} fixtures recorded into {args.out}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
