"""A session log of now whose task is still open, in trouble and waiting for a person: what
`run`'s running-now gauges (docs/metrics.md, "Running now") and the alerts on them
(deploy/prometheus/alerts.yml) are about, for the tests that run a real bridge on it."""

from __future__ import annotations

import time

from tests.builder import Log

#: The repository of the open task (the same as tests/fixtures/git_repo's).
OWNER, REPOSITORY = "octo-org", "demo-project"
#: How long ago the task started: its events span 61 minutes, past `run --trouble-task-minutes`
#: (60) by their own times (the bridge's clock raises nothing while the task waits for a person).
STARTED_MINUTES_AGO = 72
#: How long ago the task asked for the permission it still waits for, and wrote its last
#: event: past the alerts' 10 minutes (and `run --trouble-stalled-seconds`, 600), within
#: `run --idle-timeout` (900 s of the bridge's reading, not of the events' times).
ASKED_SECONDS_AGO = 11 * 60
#: The prompt limit of its model: its last call fills 120,000 tokens of it (94%).
LIMIT = 128_000


def running_log(session: str, now_ns: int | None = None) -> Log:
    """One open interactive task, in a git checkout of octo-org/demo-project, that started
    72 minutes ago (long_running, by its events' times: 61 minutes to its last), called bash
    5 times with the same arguments (repeated_call at the default threshold), saw view fail 5
    times in a row
    (tool_failures), and has waited 11 minutes, silent, for a permission to run a shell command,
    in its third turn: its first two turns are finished (and exported), the task's root is not.
    Its context compacted 3 times (repeated_compactions) and was truncated once, and its last
    call filled 94% of the window. So CopilotAgentWaitingForPerson, CopilotAgentLooping,
    CopilotTaskRunaway and CopilotRepeatedCompactions fire on it, and CopilotAgentStalled does
    not (a person is asked); CopilotContextWindowFull would after 5 minutes."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    log = Log(session)
    log.now = now_ns - STARTED_MINUTES_AGO * 60 * 10**9
    log.start(
        context={
            "cwd": f"/src/{REPOSITORY}",
            "gitRoot": f"/src/{REPOSITORY}",
            "repository": f"{OWNER}/{REPOSITORY}",
            "hostType": "github",
            "repositoryHost": "github.com",
            "branch": "main",
        }
    )
    log.user("make the tests pass")
    log.turn("0")
    log.usage("u0", inputTokens=60_000, maxPromptTokens=LIMIT)
    bash = [(f"bash-{i}", "bash") for i in range(5)]
    log.message(bash, turn="0")
    for call, name in bash:
        log.tool_start(call, name)
        log.tool_done(call)
    log.turn_end("0")
    log.turn("1")
    log.usage("u1", inputTokens=100_000, maxPromptTokens=LIMIT)
    calls = [(f"view-{i}", "view") for i in range(5)]
    log.message(calls, turn="1")
    for call, name in calls:
        log.tool_start(call, name)
        log.tool_done(call, success=False)
    # its context compacted 3 times and truncated once (events built from the schema's fields)
    for _ in range(3):
        log.add(
            "session.compaction_start",
            currentTokens=115_000,
            tokenLimit=LIMIT,
            trigger="threshold",
        )
        log.add(
            "session.compaction_complete",
            success=True,
            preCompactionTokens=115_000,
            postCompactionTokens=40_000,
            tokensRemoved=75_000,
        )
    log.add(
        "session.truncation",
        tokenLimit=LIMIT,
        preTruncationTokensInMessages=110_000,
        preTruncationMessagesLength=40,
        postTruncationTokensInMessages=90_000,
        postTruncationMessagesLength=30,
        tokensRemovedDuringTruncation=20_000,
        messagesRemovedDuringTruncation=10,
        performedBy="BasicTruncator",
    )
    log.turn_end("1")
    log.now = now_ns - ASKED_SECONDS_AGO * 10**9
    log.turn("2")
    log.usage("u2", inputTokens=120_000, maxPromptTokens=LIMIT)
    log.message([("write-1", "bash")], turn="2")
    # as the CLI writes it (tests/fixtures/permission_denied), without an answer yet
    log.add(
        "permission.requested",
        requestId="request-1",
        permissionRequest={
            "kind": "shell",
            "toolCallId": "write-1",
            "fullCommandText": "echo hi > out.txt",
            "intention": "write out.txt",
            "canOfferSessionApproval": True,
            "hasWriteFileRedirection": True,
        },
    )
    return log
