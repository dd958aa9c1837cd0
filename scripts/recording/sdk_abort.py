#!/usr/bin/env python3
"""abort via the Python SDK: slow bash, session.abort(), then a second message in the
same session. Run with /work/lab/venv/bin/python sdk_abort.py. Output: captures/sdk_abort/."""
import asyncio
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, "/work/lab")
from copilot import CopilotClient, PermissionHandler, RuntimeConnection  # noqa: E402
from fake_llm import FakeLLM  # noqa: E402
from record import COPILOT, LAB, collect, setup  # noqa: E402

NAME = "sdk_abort"
SCRIPT = {"responses": [
    {"name": "slow-bash", "when": {"last_contains": "SDK-SLOW"},
     "text": "Running a slow command.",
     "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30; echo woke",
                                                   "description": "sleep long"}}]},
    {"name": "after-abort", "when": {"last_contains": "SDK-AFTER"},
     "text": "Second message answered after the abort."},
    {"name": "other", "repeat": True, "text": "ok"},
]}


async def main() -> None:
    root, home, project = setup(NAME)
    live = open(root / "live-events.jsonl", "w")
    events: list = []

    def on_event(ev):
        d = ev.to_dict()
        events.append(d)
        live.write(json.dumps(d) + "\n")
        live.flush()

    with FakeLLM(SCRIPT, log_path=root / "requests.jsonl") as fake:
        provider = {"type": "openai", "base_url": fake.url, "api_key": "fake-llm-api-key-0000"}
        client = CopilotClient(
            connection=RuntimeConnection.for_stdio(path=str(COPILOT)),
            base_directory=str(home), working_directory=str(project),
            env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(home),
                 "COPILOT_OTEL_FILE_EXPORTER_PATH": str(root / "native-otel.jsonl")})
        await client.start()
        session = await client.create_session(
            on_permission_request=PermissionHandler.approve_all, model="gpt-4.1",
            provider=provider, working_directory=str(project))
        session.on(on_event)

        def seen(pred):
            return any(pred(e) for e in events)

        async def wait_for(pred, timeout=60):
            t0 = time.time()
            while not seen(pred):
                if time.time() - t0 > timeout:
                    raise TimeoutError
                await asyncio.sleep(0.1)

        await session.send("SDK-SLOW: run a slow command.")
        await wait_for(lambda e: e["type"] == "tool.execution_start")
        await asyncio.sleep(2)
        print("abort at", time.strftime("%H:%M:%S"))
        await session.abort()
        await wait_for(lambda e: e["type"] == "session.idle")
        n_idle = sum(e["type"] == "session.idle" for e in events)
        await session.send("SDK-AFTER: say something.")
        await wait_for(lambda e: sum(x["type"] == "session.idle" for x in events) > n_idle)
        await session.disconnect()
        await client.stop()
    live.close()
    collect(NAME, root, home, SCRIPT, [{"how": "python SDK, see sdk_abort.py"}])
    shutil.copy(__file__, LAB / "captures" / NAME / "sdk_abort.py")


if __name__ == "__main__":
    asyncio.run(main())
