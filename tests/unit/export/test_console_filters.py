"""The attribute allow and deny lists and the console: the lines for people (summary, tree)
read a task's session, outcome, turns, tools and tokens from attributes those lists may leave
out, so they get the spans before the lists (secrets redacted all the same); every other
destination, the JSON console format included, gets them filtered (docs/privacy.md). A key
both allowed and denied is an option error."""

from __future__ import annotations

import json

import pytest

from otel_bridge import Assembler, JsonLinesDecoder
from otel_bridge.cli import main
from otel_bridge.processors import Scrubber, ScrubberConfig
from tests import paths

FIXTURES = paths.FIXTURES
LOGS = [FIXTURES / name for name in ("subagent", "abort", "provider_error", "one_tool_cli1081")]
ALLOWED = "gen_ai.operation.name"


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("console_format", ["summary", "tree"])
def test_lines_for_people_read_every_attribute_whatever_the_lists(
    jobs: str, console_format: str, capsys, monkeypatch, tmp_path
) -> None:
    # --jobs 2: the workers scrub the spans, the parent filters them per destination
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    base = ["replay", *map(str, LOGS), "--no-progress", "--jobs", jobs]
    plain = _out(capsys, *base, "--console-format", console_format)
    traces = tmp_path / "traces.jsonl"
    lists = ["--allow-attribute", ALLOWED, "--deny-attribute", "copilot.cwd"]
    filtered = _out(
        capsys, *base, "--console-format", console_format, *lists, "--traces-file", str(traces)
    )
    assert filtered == plain  # a blank session, 0 tools and "unfinished" before
    assert len(plain.splitlines()) >= len(LOGS)
    keys = {
        attribute["key"]
        for line in traces.read_text().splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
        for attribute in span.get("attributes", [])
    }
    assert keys == {ALLOWED}  # the traces file is filtered as before


def test_the_json_console_format_is_filtered_like_any_exporter(capsys) -> None:
    out = _out(
        capsys,
        "replay",
        str(LOGS[0]),
        "--no-progress",
        "--console-format",
        "json",
        "--allow-attribute",
        ALLOWED,
    )
    spans = [json.loads(line) for line in out.splitlines()]
    assert spans and all(set(span["attributes"]) <= {ALLOWED} for span in spans)
    assert any(span["attributes"] for span in spans)


def test_secrets_are_redacted_on_the_console_whatever_the_lists(capsys, tmp_path) -> None:
    log = tmp_path / "d3ebfa08-de8a-4b43-93da-591db8061cb6" / "events.jsonl"
    log.parent.mkdir()
    token = "ghp_" + "Zx9Qm2Lp8Vt4Rk7Wn3Bf6Hs1Jc5Dg0Ya2Ue8"
    text = (FIXTURES / "run1_cli_prompt_basic" / "events.jsonl").read_text()
    log.write_text(text.replace('"gpt-4.1"', json.dumps(f"gpt-4.1-{token}")))
    for lists in ([], ["--allow-attribute", ALLOWED], ["--deny-attribute", "gen_ai.request.model"]):
        out = _out(capsys, "replay", str(log), "--no-progress", "--console-format", "tree", *lists)
        assert "[REDACTED:github_token]" in out and token not in out


def test_a_key_both_allowed_and_denied_is_an_option_error(capsys) -> None:
    with pytest.raises(ValueError, match=r"both allowed and denied: copilot\.cwd"):
        ScrubberConfig(
            allow_attributes=frozenset({"copilot.cwd"}), deny_attributes=frozenset({"copilot.cwd"})
        )
    argv = ["replay", str(LOGS[0]), "--no-progress", "--console-format", "summary"]
    both = ["--allow-attribute", "copilot.cwd", "--deny-attribute", "copilot.cwd"]
    with pytest.raises(SystemExit) as stop:  # it removed every attribute, silently
        main([*argv, *both])
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "is also given to --allow-attribute" in err
    # a key denied that is not allowed is fine (it would go anyway)
    assert main([*argv, "--allow-attribute", ALLOWED, "--deny-attribute", "copilot.cwd"]) == 0


@pytest.mark.parametrize(
    "config",
    [
        ScrubberConfig(),
        ScrubberConfig(allow_attributes=frozenset({ALLOWED, "copilot.event.id"})),
        ScrubberConfig(deny_attributes=frozenset({"copilot.cwd", "copilot.link.type"})),
        ScrubberConfig(paths="hash", deny_attributes=frozenset({"gen_ai.tool.name"})),
    ],
)
def test_filtering_after_scrubbing_gives_what_scrubbing_with_the_lists_gives(
    config: ScrubberConfig,
) -> None:
    assembler = Assembler()
    records = []
    for path in sorted(FIXTURES.glob("*/events.jsonl")):
        decoder = JsonLinesDecoder(str(path))
        events = decoder.feed(path.read_bytes()) + decoder.finish()
        records += assembler.feed(str(path), events, path.parent.name)
        records += assembler.end_stream(str(path))
    scrubber = Scrubber(config)
    for record in records:
        assert scrubber.filtered(scrubber.record(record, filtered=False)) == scrubber.record(record)
