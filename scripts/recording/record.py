#!/usr/bin/env python3
"""Record real Copilot CLI sessions against fake_llm.py.

    python record.py <scenario> [<scenario> ...]      (see SCENARIOS)

For each scenario: fresh COPILOT_HOME + project dir under /work/lab/tmp/<scenario>/,
start FakeLLM with the scenario's script, run `copilot -p ...`, then copy
events.jsonl, workspace.yaml, live-events.jsonl (stdout of --output-format json),
native-otel.jsonl, script.json, requests.jsonl (what the CLI sent), stderr.txt and
cmd.txt into /work/lab/captures/<scenario>/.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from fake_llm import FakeLLM  # noqa: E402

LAB = Path("/work/lab")
COPILOT = LAB / "node_modules/@github/copilot-linux-x64/copilot"
BASE_ARGS = ["--allow-all-tools", "--no-auto-update", "--output-format", "json"]


def setup(name: str) -> tuple[Path, Path, Path]:
    root = LAB / "tmp" / name
    if root.exists():
        shutil.rmtree(root)
    home, project = root / "home", root / "project"
    home.mkdir(parents=True)
    project.mkdir()
    (project / "README.md").write_text("# demo project\n\nA tiny project for tests.\n")
    (project / "hello.py").write_text('print("hello")\n')
    return root, home, project


def env_for(home: Path, fake: FakeLLM, otel: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COPILOT_", "OTEL_", "GH_", "GITHUB_"))}
    env.update({
        "HOME": str(home), "COPILOT_HOME": str(home), "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": fake.url, "COPILOT_MODEL": "gpt-4.1",
        "COPILOT_PROVIDER_API_KEY": "fake-llm-api-key-0000", "COPILOT_OTEL_FILE_EXPORTER_PATH": str(otel),
    })
    return env


def run_cli(root: Path, home: Path, project: Path, fake: FakeLLM, prompt: str,
            extra: list[str] = (), tag: str = "", timeout: float = 300,
            interrupt=None) -> dict:
    """Run copilot once; returns info dict. interrupt(proc, fake) may signal the process."""
    args = [str(COPILOT), "-p", prompt, *BASE_ARGS, *extra]
    env = env_for(home, fake, root / "native-otel.jsonl")
    live = open(root / f"live-events{tag}.jsonl", "wb")
    err = open(root / f"stderr{tag}.txt", "wb")
    t0 = time.time()
    proc = subprocess.Popen(args, cwd=project, env=env, stdout=live, stderr=err)
    note = None
    try:
        if interrupt:
            note = interrupt(proc, fake)
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "timeout"
    dt = time.time() - t0
    live.close()
    err.close()
    shown = {k: v for k, v in env.items() if k.startswith("COPILOT_") or k == "HOME"}
    cmd = " ".join(f"{k}={shlex.quote(v)}" for k, v in shown.items()) + " " + shlex.join(args)
    return {"rc": rc, "seconds": round(dt, 2), "cmd": f"(cd {project} && {cmd})", "note": note}


def collect(name: str, root: Path, home: Path, script: dict, runs: list[dict]) -> Path:
    out = LAB / "captures" / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    sessions = sorted((home / "session-state").glob("*/events.jsonl"))
    for i, ev in enumerate(sessions):
        suffix = "" if len(sessions) == 1 else f".{ev.parent.name}"
        shutil.copy(ev, out / f"events{suffix}.jsonl")
        ws = ev.parent / "workspace.yaml"
        if ws.exists():
            shutil.copy(ws, out / f"workspace{suffix}.yaml")
    for f in root.iterdir():
        if f.is_file() and f.name.startswith(("live-events", "stderr", "native-otel", "requests")):
            shutil.copy(f, out / f.name)
    (out / "script.json").write_text(json.dumps(script, indent=1) + "\n")
    (out / "runs.json").write_text(json.dumps(runs, indent=1) + "\n")
    return out


def scenario(name: str, script: dict, prompts: list[str] | str, extra: list[str] = (),
             interrupt=None, resume: bool = False, timeout: float = 300) -> None:
    root, home, project = setup(name)
    prompts = [prompts] if isinstance(prompts, str) else prompts
    runs = []
    with FakeLLM(script, log_path=root / "requests.jsonl") as fake:
        for i, prompt in enumerate(prompts):
            more = list(extra)
            if i > 0 and resume:
                sid = next((home / "session-state").glob("*/events.jsonl")).parent.name
                more += ["--resume", sid]
            info = run_cli(root, home, project, fake, prompt, more,
                           tag="" if i == 0 else f".run{i + 1}", timeout=timeout,
                           interrupt=interrupt if i == 0 else None)
            runs.append(info)
            print(name, f"run{i + 1}", info["rc"], f"{info['seconds']}s", info["note"] or "")
        unused = fake.unused()
    out = collect(name, root, home, script, runs)
    if unused:
        print(name, "UNUSED scripted responses:", unused)
    for f in sorted(out.iterdir()):
        n = sum(1 for _ in f.open()) if f.suffix == ".jsonl" else ""
        print("  ", f.name, n)


# ---------------------------------------------------------------------------
# scripts

def bash(cmd: str, desc: str = "run command") -> dict:
    return {"name": "bash", "arguments": {"command": cmd, "description": desc}}


def task(name: str, prompt: str, agent_type: str = "general-purpose", desc: str = "delegate work") -> dict:
    return {"name": "task", "arguments": {"name": name, "prompt": prompt,
                                          "agent_type": agent_type, "description": desc,
                                          "mode": "sync"}}


def subagent_script() -> dict:
    return {"responses": [
        {"name": "main-1", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 0},
         "text": "I will delegate this.",
         "tool_calls": [task("sub-a", "SUB-A: run `echo from-sub-a` and report the output.")]},
        {"name": "sub-a-1", "when": {"first_user_contains": "SUB-A", "assistant_count": 0},
         "tool_calls": [bash("echo from-sub-a", "echo in sub-agent")]},
        {"name": "sub-a-2", "when": {"first_user_contains": "SUB-A", "assistant_count": 1},
         "text": "Sub-agent A ran the command; it printed from-sub-a."},
        {"name": "main-2", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 1},
         "text": "The sub-agent finished: it printed from-sub-a. Done."},
    ]}


def subagent_parallel_script() -> dict:
    return {"responses": [
        {"name": "main-1", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 0},
         "text": "Delegating to two agents in parallel.",
         "tool_calls": [task("sub-a", "SUB-A: run `echo from-sub-a` and report.", desc="first helper"),
                        task("sub-b", "SUB-B: view README.md and report its title.", desc="second helper")]},
        {"name": "sub-a-1", "when": {"first_user_contains": "SUB-A", "assistant_count": 0},
         "delay": 0.5, "tool_calls": [bash("sleep 1; echo from-sub-a", "echo in sub-agent A")]},
        {"name": "sub-a-2", "when": {"first_user_contains": "SUB-A", "assistant_count": 1},
         "text": "Sub-agent A: printed from-sub-a."},
        {"name": "sub-b-1", "when": {"first_user_contains": "SUB-B", "assistant_count": 0},
         "tool_calls": [{"name": "view", "arguments": {"path": "README.md"}}]},
        {"name": "sub-b-2", "when": {"first_user_contains": "SUB-B", "assistant_count": 1},
         "delay": 0.3, "text": "Sub-agent B: the title is 'demo project'."},
        {"name": "main-2", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 1},
         "text": "Both sub-agents finished. Done."},
    ]}


def subagent_nested_script() -> dict:
    return {"responses": [
        {"name": "main-1", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 0},
         "tool_calls": [task("outer", "SUB-OUTER: delegate `echo deep` to another agent.")]},
        {"name": "outer-1", "when": {"first_user_contains": "SUB-OUTER", "assistant_count": 0},
         "text": "Delegating further.",
         "tool_calls": [task("inner", "SUB-INNER: run `echo deep` and report.")]},
        {"name": "inner-1", "when": {"first_user_contains": "SUB-INNER", "assistant_count": 0},
         "tool_calls": [bash("echo deep", "echo in nested sub-agent")]},
        {"name": "inner-2", "when": {"first_user_contains": "SUB-INNER", "assistant_count": 1},
         "text": "Inner agent: printed deep."},
        {"name": "outer-2", "when": {"first_user_contains": "SUB-OUTER", "assistant_count": 1},
         "text": "Outer agent: the inner agent printed deep."},
        {"name": "main-2", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 1},
         "text": "Nested delegation finished. Done."},
    ]}


def parallel_tools_script() -> dict:
    return {"responses": [
        {"name": "turn0-3-tools", "when": {"assistant_count": 0},
         "text": "Running three tools at once.",
         "tool_calls": [bash("sleep 0.5; echo one", "slow echo"),
                        {"name": "view", "arguments": {"path": "hello.py"}},
                        {"name": "view", "arguments": {"path": "does/not/exist.txt"}}]},
        {"name": "turn1-exit3", "when": {"assistant_count": 1},
         "tool_calls": [bash("echo failing; exit 3", "command that fails")]},
        {"name": "turn2-answer", "when": {"assistant_count": 2},
         "text": "One view failed (missing file) and the last command exited with 3. Done."},
    ]}


def provider_error_script() -> dict:
    return {"responses": [{"name": "always-500", "repeat": True, "status": 500}]}


def autopilot_nudge_script() -> dict:
    return {"responses": [
        {"name": "plain-text-no-complete", "when": {"assistant_count": 0},
         "text": "I looked at it; it is a tiny demo project."},
        {"name": "task-complete", "when": {"assistant_count": 1},
         "tool_calls": [{"name": "task_complete",
                         "arguments": {"summary": "Described the demo project."}}]},
        {"name": "after-complete", "repeat": True, "text": "All done."},
    ]}


def abort_script() -> dict:
    return {"responses": [
        {"name": "slow-bash", "when": {"assistant_count": 0},
         "text": "Running a slow command.",
         "tool_calls": [bash("sleep 30; echo woke", "sleep long")]},
        {"name": "after", "repeat": True, "text": "Finished."},
    ]}


def resume_script() -> dict:
    return {"responses": [
        {"name": "first-tool", "when": {"last_contains": "FIRST-PROMPT"},
         "tool_calls": [bash("echo first-run", "echo first")]},
        {"name": "first-answer", "when": {"last_contains": "first-run"},
         "text": "First run done."},
        {"name": "second-tool", "when": {"last_contains": "SECOND-PROMPT"},
         "tool_calls": [bash("echo second-run", "echo second")]},
        {"name": "second-answer", "when": {"last_contains": "second-run"},
         "text": "Second run done."},
    ]}


def subagent_deep_script(depth: int = 5) -> dict:
    """main -> L1 -> L2 ... -> L<depth>; the deepest runs bash. Shows the nesting limit."""
    rs = [{"name": "main-1", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 0},
           "tool_calls": [task("level-1", "SUB-L1: delegate down the chain.")]}]
    for k in range(1, depth + 1):
        who = {"first_user_contains": f"SUB-L{k}:"}
        if k < depth:
            rs.append({"name": f"L{k}-1", "when": {**who, "assistant_count": 0},
                       "tool_calls": [task(f"level-{k + 1}", f"SUB-L{k + 1}: delegate down the chain.")]})
        else:
            rs.append({"name": f"L{k}-1", "when": {**who, "assistant_count": 0},
                       "tool_calls": [bash(f"echo depth-{k}", "echo at the bottom")]})
        rs.append({"name": f"L{k}-2", "when": {**who, "assistant_count": 1},
                   "text": f"Level {k} done."})
    rs.append({"name": "main-2", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 1},
               "text": "Deep delegation finished."})
    return {"responses": rs}


def abort_subagent_script() -> dict:
    return {"responses": [
        {"name": "main-1", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 0},
         "tool_calls": [task("sleeper", "SUB-SLOW: run `sleep 30`.")]},
        {"name": "slow-bash", "when": {"first_user_contains": "SUB-SLOW", "assistant_count": 0},
         "tool_calls": [bash("sleep 30; echo woke", "sleep long in sub-agent")]},
        {"name": "after", "repeat": True, "text": "Finished."},
    ]}


def subagent_failed_script() -> dict:
    return {"responses": [
        {"name": "main-1", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 0},
         "tool_calls": [task("doomed", "SUB-FAIL: this agent's model calls all fail.")]},
        {"name": "sub-500", "repeat": True, "when": {"first_user_contains": "SUB-FAIL"}, "status": 500},
        {"name": "main-2", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 1},
         "text": "The sub-agent failed; reporting that."},
    ]}


def subagent_background_script() -> dict:
    return {"responses": [
        {"name": "main-1", "when": {"first_user_contains": "MAIN-TASK", "assistant_count": 0},
         "tool_calls": [{"name": "task", "arguments": {
             "name": "bg", "prompt": "SUB-BG: run `sleep 2; echo bg-done` and report.",
             "agent_type": "explore", "description": "background helper", "mode": "background"}}]},
        {"name": "bg-1", "when": {"first_user_contains": "SUB-BG", "assistant_count": 0},
         "tool_calls": [bash("sleep 2; echo bg-done", "slow echo in background agent")]},
        {"name": "bg-2", "when": {"first_user_contains": "SUB-BG", "assistant_count": 1},
         "text": "Background agent: printed bg-done."},
        {"name": "main-rest", "repeat": True, "when": {"first_user_contains": "MAIN-TASK"},
         "text": "Main agent: waiting for / reporting the background agent."},
    ]}


def sigint_during_tool(delay_after_tool: float = 3.0):
    """interrupt(): wait until the slow tool has been handed out, then SIGINT."""
    def interrupt(proc, fake: FakeLLM):
        t0 = time.time()
        while time.time() - t0 < 60:
            if any(r.get("name") == "slow-bash" for r in fake.requests):
                time.sleep(delay_after_tool)
                proc.send_signal(signal.SIGINT)
                return f"SIGINT sent {time.time() - t0:.1f}s after start"
            if proc.poll() is not None:
                return "process ended before the tool call"
            time.sleep(0.1)
        return "slow tool never requested"
    return interrupt


SCENARIOS = {
    "subagent": lambda: scenario("subagent", subagent_script(),
                                 "MAIN-TASK: use a sub-agent to echo something."),
    "subagent_parallel": lambda: scenario("subagent_parallel", subagent_parallel_script(),
                                          "MAIN-TASK: use two sub-agents in parallel."),
    "subagent_nested": lambda: scenario("subagent_nested", subagent_nested_script(),
                                        "MAIN-TASK: delegate to an agent that delegates again."),
    "parallel_tools": lambda: scenario("parallel_tools", parallel_tools_script(),
                                       "Run several tools at once, then a failing command."),
    "provider_error": lambda: scenario("provider_error", provider_error_script(),
                                       "This request will fail at the provider.", timeout=540),
    "autopilot_nudge": lambda: scenario("autopilot_nudge", autopilot_nudge_script(),
                                        "Describe this project.", extra=["--autopilot"]),
    "abort": lambda: scenario("abort", abort_script(), "Run a slow command.",
                              interrupt=sigint_during_tool()),
    "resume": lambda: scenario("resume", resume_script(),
                               ["FIRST-PROMPT: echo first-run.", "SECOND-PROMPT: echo second-run."],
                               resume=True),
    "subagent_deep": lambda: scenario("subagent_deep", subagent_deep_script(5),
                                      "MAIN-TASK: delegate down a chain of agents."),
    "abort_subagent": lambda: scenario("abort_subagent", abort_subagent_script(),
                                       "MAIN-TASK: have a sub-agent run a slow command.",
                                       interrupt=sigint_during_tool()),
    "subagent_failed": lambda: scenario("subagent_failed", subagent_failed_script(),
                                        "MAIN-TASK: delegate to an agent whose model fails.",
                                        timeout=540),
    "subagent_background": lambda: scenario("subagent_background", subagent_background_script(),
                                            "MAIN-TASK: start a background agent.", timeout=240),
}

if __name__ == "__main__":
    for n in sys.argv[1:] or list(SCENARIOS):
        SCENARIOS[n]()
