"""Rules for tool calls cut off by a crash, refused by a permission, or served by MCP
(docs/architecture.md, "Status rules"; docs/events.md): hand-built logs shaped like the ones
CLI 1.0.102 wrote in tests/fixtures/crash_resume, permission_denied and mcp_tools."""

from __future__ import annotations

from otel_bridge import Assembler, AssemblerConfig, StatusCode
from tests.builder import Log
from tests.recorder import Recorder
from tests.spantree import assemble, by_name, check_invariants


def one(spans, prefix):
    found = by_name(spans, prefix)
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def killed_then_resumed(*, synthetic: bool = True, then_work: bool = True) -> tuple[Log, int]:
    """A turn runs two tools; one completes, the CLI is SIGKILLed while the other runs (no
    turn_end, no shutdown); `copilot --resume` then reports on it and runs a new message.
    Returns the log and the time of the killed process's last event."""
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("slow", "bash"), ("quick", "view")])
    log.tool_start("slow", "bash")
    log.tool_start("quick", "view")
    log.tool_done("quick")
    killed = log.now
    log.wait(5_000)
    log.add("session.resume", resumeTime="x", selectedModel="gpt-4.1", sessionWasActive=False)
    log.add("hook.start", hookType="sessionStart")  # an event the bridge ignores
    if synthetic:
        log.add(
            "tool.execution_complete",
            toolCallId="slow",
            model="resumed",
            interactionId="resume",
            success=False,
            error={"message": "Tool execution was interrupted", "code": "interrupted"},
        )
        log.add(
            "session.warning",
            warningType="interrupted_tools",
            message="1 tool call(s) had no recorded result at resume.",
        )
    if then_work:
        log.user(interaction="i2")
        log.simple_turn("0", "u2", [("after", "bash")], interaction="i2")
        log.simple_turn("1", "u3", interaction="i2")
        log.add("session.shutdown", shutdownType="routine")
    return log, killed


def test_a_tool_killed_with_the_cli_fails_as_interrupted_at_the_killed_segments_end() -> None:
    log, killed = killed_then_resumed()
    spans = assemble(log.events())
    check_invariants(spans)
    slow = [s for s in spans if s.attributes.get("gen_ai.tool.call.id") == "slow"]
    assert len(slow) == 1  # once
    (slow_span,) = slow
    assert slow_span.status is StatusCode.ERROR
    assert slow_span.attributes["error.type"] == "interrupted"
    assert "copilot.incomplete" not in slow_span.attributes
    assert slow_span.end_ns == killed  # not at the resume, 5 s later
    assert slow_span.start_ns < killed
    roots = sorted(by_name(spans, "invoke_agent copilot"), key=lambda s: s.start_ns)
    assert len(roots) == 2
    killed_root, resumed_root = roots
    assert killed_root.end_ns == killed
    assert killed_root.attributes["copilot.end_reason"] == "segment_end"
    assert killed_root.attributes["copilot.incomplete"] is True
    assert slow_span.trace_id == killed_root.trace_id
    (warning,) = [e for e in killed_root.events if e.name == "copilot.session.warning"]
    assert warning.attributes == {"copilot.warning.type": "interrupted_tools"}  # no text
    assert warning.timestamp_ns > killed
    assert "copilot.incomplete" not in resumed_root.attributes
    assert resumed_root.attributes["copilot.end_reason"] == "loop_end"
    assert {s.trace_id for s in by_name(spans, "execute_tool")} == {
        killed_root.trace_id,
        resumed_root.trace_id,
    }
    assert [link.span_id for link in resumed_root.links] == [killed_root.span_id]


def test_the_warning_text_is_kept_with_content_capture() -> None:
    log, _ = killed_then_resumed()
    assembler = Assembler(AssemblerConfig(capture_content=True))
    spans = assembler.feed("s", log.events()) + assembler.end_stream("s")
    root = min(by_name(spans, "invoke_agent copilot"), key=lambda s: s.start_ns)
    (warning,) = root.events
    assert warning.attributes["copilot.warning.message"].startswith("1 tool call(s)")
    slow = next(s for s in spans if s.attributes.get("gen_ai.tool.call.id") == "slow")
    assert slow.status_message == "Tool execution was interrupted"


def test_a_killed_tool_without_a_report_stays_incomplete_at_the_killed_segments_end() -> None:
    """Older CLIs write no synthetic completion: the new segment's first event ends it."""
    log, killed = killed_then_resumed(synthetic=False)
    spans = assemble(log.events())
    slow = next(s for s in spans if s.attributes.get("gen_ai.tool.call.id") == "slow")
    assert slow.attributes["copilot.incomplete"] is True
    assert slow.status is StatusCode.UNSET
    assert slow.end_ns == killed


def test_a_resume_that_ends_the_input_still_closes_at_the_killed_segments_end() -> None:
    log, killed = killed_then_resumed(then_work=False)
    spans = assemble(log.events())
    root = one(spans, "invoke_agent copilot")
    assert root.end_ns == killed
    assert root.attributes["copilot.end_reason"] == "segment_end"
    slow = next(s for s in spans if s.attributes.get("gen_ai.tool.call.id") == "slow")
    assert slow.attributes["error.type"] == "interrupted"
    assert slow.end_ns == killed


def test_work_after_the_resume_does_not_join_the_killed_interaction() -> None:
    """A tool call of the resumed process before any user message opens its own (synthetic)
    interaction: the killed one has ended."""
    log, killed = killed_then_resumed(then_work=False)
    log.tool_start("late", "bash")
    log.tool_done("late")
    spans = assemble(log.events())
    roots = by_name(spans, "invoke_agent copilot")
    assert len(roots) == 2
    late = next(s for s in spans if s.attributes.get("gen_ai.tool.call.id") == "late")
    killed_root = min(roots, key=lambda s: s.start_ns)
    assert late.trace_id != killed_root.trace_id
    assert killed_root.end_ns == killed


def test_killed_and_resumed_log_read_in_two_pieces_gives_the_same_spans() -> None:
    """`run` reads the killed segment, waits, then reads the resume: same spans as replay."""
    log, _ = killed_then_resumed()
    events = log.events()
    whole = assemble(events)
    assembler = Assembler()
    cut = next(i for i, e in enumerate(events) if e.type == "session.resume")
    first = assembler.feed("sess", events[:cut])
    assert first == [] or all(s.name != "execute_tool bash" for s in first)
    rest = assembler.feed("sess", events[cut:]) + assembler.end_stream("sess")
    assert sorted(first + rest, key=lambda s: s.span_id) == sorted(whole, key=lambda s: s.span_id)


def permission_log(result: str, source: str | None, success: bool) -> Log:
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("w", "bash")])
    log.tool_start("w", "bash")
    log.add(
        "permission.requested",
        requestId="r1",
        permissionRequest={"kind": "shell", "toolCallId": "w", "fullCommandText": "echo > f"},
    )
    log.wait(1_000)
    completed = {"requestId": "r1", "toolCallId": "w", "result": {"kind": result}}
    if source:
        completed["decisionSource"] = source
    log.add("permission.completed", **completed)
    if success:
        log.tool_done("w")
    else:
        log.tool_done("w", success=False, error={"message": "Permission denied", "code": "denied"})
    log.turn_end("0")
    log.simple_turn("1", "u2")
    return log


def test_a_tool_denied_by_a_permission_decision_is_a_failed_span_with_the_decision() -> None:
    log = permission_log(
        "denied-no-approval-rule-and-could-not-request-from-user", "unattended_fallback", False
    )
    recorder = Recorder()
    assembler = Assembler(metrics=recorder)
    spans = assembler.feed("s", log.events()) + assembler.end_stream("s")
    tool = one(spans, "execute_tool bash")
    assert tool.status is StatusCode.ERROR
    assert tool.attributes["error.type"] == "denied"
    assert tool.attributes["copilot.permission.decision"] == "denied"
    assert (
        tool.attributes["copilot.permission.result"]
        == "denied-no-approval-rule-and-could-not-request-from-user"
    )
    assert tool.attributes["copilot.permission.decision_source"] == "unattended_fallback"
    # the wait (1 s + the 10 ms step of the builder) is in the existing histogram
    assert recorder.values(
        "copilot.permission.wait.duration",
        **{"copilot.permission.result": "denied-no-approval-rule-and-could-not-request-from-user"},
    ) == [1.01]
    assert recorder.values(
        "copilot.tool.calls", **{"gen_ai.tool.name": "bash", "copilot.tool.outcome": "error"}
    ) == [1]


def test_an_approved_permission_is_on_a_successful_span() -> None:
    spans = assemble(permission_log("approved-for-session", "human_response", True).events())
    tool = one(spans, "execute_tool bash")
    assert tool.status is StatusCode.UNSET
    assert tool.attributes["copilot.permission.decision"] == "approved"
    assert tool.attributes["copilot.permission.decision_source"] == "human_response"


def test_a_decision_before_the_tool_starts_is_kept_for_it() -> None:
    """A permission asked (and answered) before tool.execution_start, naming the call only in
    the request's permissionRequest: the decision still lands on the tool's span."""
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("e", "edit")])
    log.add(
        "permission.requested",
        requestId="r1",
        permissionRequest={"kind": "write", "toolCallId": "e", "fileName": "x.py"},
    )
    log.add("permission.completed", requestId="r1", result={"kind": "denied-by-rules"})
    log.tool_start("e", "edit")
    log.tool_done("e", success=False, error={"message": "no", "code": "denied"})
    log.turn_end("0")
    log.simple_turn("1", "u2")
    tool = one(assemble(log.events()), "execute_tool edit")
    assert tool.attributes["copilot.permission.result"] == "denied-by-rules"
    assert tool.attributes["copilot.permission.decision"] == "denied"
    assert tool.attributes["error.type"] == "denied"


def test_a_tool_refused_by_a_rule_is_denied_without_permission_events() -> None:
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("rm", "bash")])
    log.tool_start("rm", "bash")
    log.tool_done(
        "rm",
        success=False,
        error={"message": "denied due to the following rules: `shell(rm)`", "code": "denied"},
    )
    log.turn_end("0")
    log.simple_turn("1", "u2")
    tool = one(assemble(log.events()), "execute_tool bash")
    assert tool.status is StatusCode.ERROR
    assert tool.attributes["error.type"] == "denied"
    assert tool.attributes["copilot.permission.decision"] == "denied"
    assert "copilot.permission.decision_source" not in tool.attributes
    assert tool.status_message is None  # the rule's text only with content capture


def mcp_log(*, crash: bool) -> Log:
    log = Log.asked()
    log.turn("0")
    log.usage("u1")
    log.message([("m1", "demo-lookup")])
    log.add(
        "tool.execution_start",
        toolCallId="m1",
        toolName="demo-lookup",
        arguments={"key": "alpha"},
        turnId="0",
        mcpServerName="demo",
        mcpConfigServerName="demo",
        mcpTransport="stdio",
        mcpToolName="lookup",
    )
    if crash:
        log.tool_done(
            "m1",
            success=False,
            error={
                "message": "MCP server 'demo': MCP transport closed before the tool responded",
                "code": "failure",
            },
            toolTelemetry={
                "properties": {"failure_category": "disconnected", "failure_stage": "invoke"}
            },
        )
    else:
        log.tool_done("m1")
    log.turn_end("0")
    log.simple_turn("1", "u2")
    return log


def test_an_mcp_tool_carries_the_mcp_conventions() -> None:
    tool = one(assemble(mcp_log(crash=False).events()), "execute_tool demo-lookup")
    assert tool.status is StatusCode.UNSET
    attributes = tool.attributes
    assert attributes["gen_ai.tool.name"] == "demo-lookup"
    assert attributes["gen_ai.tool.type"] == "extension"
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["network.transport"] == "pipe"
    assert attributes["copilot.tool.mcp_server"] == "demo"
    assert attributes["copilot.tool.mcp_tool"] == "lookup"
    assert attributes["copilot.tool.mcp_transport"] == "stdio"


def test_a_crashed_mcp_server_fails_its_call() -> None:
    log = mcp_log(crash=True)
    tool = one(assemble(log.events()), "execute_tool demo-lookup")
    assert tool.status is StatusCode.ERROR
    assert tool.attributes["error.type"] == "failure"
    assert tool.attributes["copilot.tool.failure_category"] == "disconnected"
    assert tool.status_message is None
    assembler = Assembler(AssemblerConfig(capture_content=True))
    spans = assembler.feed("s", log.events()) + assembler.end_stream("s")
    assert "transport closed" in (one(spans, "execute_tool demo").status_message or "")


def test_the_cli_s_own_tools_carry_no_mcp_attributes() -> None:
    log = Log.asked()
    log.simple_turn("0", "u1", [("c1", "bash")])
    tool = one(assemble(log.events()), "execute_tool bash")
    assert tool.attributes["gen_ai.tool.type"] == "function"
    assert not any(k.startswith(("mcp.", "network.")) for k in tool.attributes)


def test_a_warning_outside_an_interaction_is_only_counted() -> None:
    log = Log()
    log.start()
    log.add("session.warning", warningType="mcp_failed", message="x")
    assembler = Assembler()
    spans = assembler.feed("s", log.events()) + assembler.end_stream("s")
    assert spans == []
    assert assembler.stats.unplaced["session.warning"] == 1
