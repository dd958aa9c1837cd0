"""Attribution: the repository, branch, commit and client every span of a session carries, the
repository labels of the model metrics, and the resource a fleet tells its bridges apart by.

The git fixture (tests/fixtures/git_repo) is the real CLI 1.0.102 run in a `git init`-ed
directory with an `origin` remote: the first process starts on `main`, its agent makes the
branch `feature/attribution` with a commit, and the resumed process starts there.
"""

from __future__ import annotations

import getpass
import json
import re
from pathlib import Path
from typing import Any

import pytest

from otel_bridge import semconv as sc
from otel_bridge._records import SpanRecord
from otel_bridge.assembler import Assembler, AssemblerConfig, SessionAssembler
from otel_bridge.cli import main
from otel_bridge.export import ResourceOptions, build_resource
from otel_bridge.feed._parallel import RecordingRecorder
from otel_bridge.metrics._recorder import CATALOGUE, OPTIONAL_LABELS, REPOSITORY_LABELS
from otel_bridge.processors import Scrubber, ScrubberConfig
from otel_bridge.sources import LiveBridge
from otel_bridge.sources._discovery import read_client_name
from tests import paths, spantree
from tests.builder import Log

FIXTURES = paths.FIXTURES
GIT_LOG = FIXTURES / "git_repo" / "events.jsonl"
OTHER_LOGS = sorted(p for p in FIXTURES.glob("*/events.jsonl") if p != GIT_LOG)
VCS = (sc.VCS_REPOSITORY_NAME, sc.VCS_REF_HEAD_NAME, sc.VCS_REF_HEAD_REVISION)


def raw_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assemble(
    path: Path, config: AssemblerConfig | None = None, metrics: Any = None
) -> list[SpanRecord]:
    """Replay one log as `replay` does, client names read as `replay` reads them."""
    config = config or AssemblerConfig(client_name_of=read_client_name)
    return spantree.assemble(path, config=config, metrics=metrics)


def contexts(path: Path) -> list[dict[str, Any]]:
    """The `context` of each segment's start (session.start, session.resume), in order."""
    return [
        e["data"]["context"]
        for e in raw_events(path)
        if e["type"] in ("session.start", "session.resume")
    ]


# --- spans ------------------------------------------------------------------------------------


def test_every_span_of_a_session_in_a_git_checkout_carries_its_repository() -> None:
    spans = assemble(GIT_LOG)
    start, resume = contexts(GIT_LOG)
    assert start["repository"] == "octo-org/demo-project" and start["branch"] == "main"
    assert resume["branch"] == "feature/attribution"
    assert resume["headCommit"] != start["headCommit"]  # the agent committed in between
    roots = sorted((s for s in spans if s.parent_span_id is None), key=lambda s: s.start_ns)
    assert len(roots) == 2 and len(spans) > 2 * 5
    for span in spans:
        attributes = span.attributes
        for key in VCS:
            assert key in attributes, (span.name, key)
        assert attributes[sc.VCS_REPOSITORY_NAME] == "demo-project"
        assert attributes[sc.VCS_OWNER_NAME] == "octo-org"
        assert attributes[sc.COPILOT_REPOSITORY] == "octo-org/demo-project"
        assert attributes[sc.VCS_REPOSITORY_URL_FULL] == "https://github.com/octo-org/demo-project"
        assert attributes[sc.VCS_PROVIDER_NAME] == "github"
        assert attributes[sc.COPILOT_REPOSITORY_HOST] == "github.com"
        assert attributes[sc.VCS_REF_HEAD_TYPE] == sc.VCS_REF_TYPE_BRANCH
        assert re.fullmatch(r"[0-9a-f]{40}", str(attributes[sc.VCS_REF_HEAD_REVISION]))
        assert attributes[sc.COPILOT_CWD] == start["cwd"]
        assert attributes[sc.COPILOT_GIT_ROOT] == start["gitRoot"]
        assert attributes[sc.COPILOT_CLIENT_NAME] == "github/cli"  # workspace.yaml
        # each interaction carries the context of its own segment: the resumed process
        # started on the branch the first one made
        context = start if span.trace_id == roots[0].trace_id else resume
        assert attributes[sc.VCS_REF_HEAD_NAME] == context["branch"], span.name
        assert attributes[sc.VCS_REF_HEAD_REVISION] == context["headCommit"], span.name


@pytest.mark.parametrize("path", OTHER_LOGS, ids=lambda p: p.parent.name)
def test_a_session_outside_git_has_no_repository_attributes(path: Path) -> None:
    (cwd, *_) = [c["cwd"] for c in contexts(path)]
    spans = assemble(path)
    assert spans
    for span in spans:
        assert not [k for k in span.attributes if k.startswith("vcs.")], span.name
        assert sc.COPILOT_REPOSITORY not in span.attributes
        assert span.attributes[sc.COPILOT_CWD] == cwd  # the working directory is still known
        assert sc.COPILOT_CLIENT_NAME not in span.attributes  # these kept no workspace.yaml


def test_the_attribution_survives_a_checkpoint_and_an_eviction() -> None:
    """A session evicted (or restarted from a checkpoint) between two interactions goes on
    carrying its repository: the snapshot keeps it, as JSON."""
    context = {
        "cwd": "/src/demo",
        "gitRoot": "/src/demo",
        "repository": "octo-org/demo-project",
        "repositoryHost": "github.com",
        "hostType": "github",
        "branch": "main",
        "headCommit": "a" * 40,
    }
    log = Log()
    log.start(context=context)
    log.user(interaction="i1")
    log.simple_turn("0", "u1", interaction="i1")
    first = log.events()
    log.user(content="again", interaction="i2")
    log.simple_turn("0", "u2", tools=[("c1", "bash")], interaction="i2")
    second = log.events()[len(first) :]

    session = SessionAssembler("sess-1")
    for event in first:
        session.feed(event)
    saved = json.loads(json.dumps(session.snapshot()))
    restored = SessionAssembler("sess-1")
    restored.restore(saved)
    spans = [s for e in second for s in restored.feed(e)] + restored.end_of_input()
    assert len(spans) >= 4
    for span in spans:
        assert span.attributes[sc.VCS_REPOSITORY_NAME] == "demo-project", span.name
        assert span.attributes[sc.VCS_REF_HEAD_REVISION] == "a" * 40
    # the tailer's eviction: the router hands the snapshot out and takes it back
    router = Assembler()
    router.feed("log", first)
    evicted = router.evict("log")
    assert evicted is not None and router.resident == 0
    router.session("log").restore(json.loads(json.dumps(evicted)))
    (span, *_) = router.feed("log", second)
    assert span.attributes[sc.VCS_OWNER_NAME] == "octo-org"
    # what a checkpoint restores is only attribution, as strings
    saved["attribution"]["gen_ai.conversation.id"] = "forged"
    saved["attribution"][sc.VCS_REF_HEAD_NAME] = 7
    again = SessionAssembler("sess-1")
    again.restore(saved)
    assert sc.VCS_REF_HEAD_NAME not in again.facts.attribution
    assert "gen_ai.conversation.id" not in again.facts.attribution


def test_a_context_change_moves_the_session_and_a_pending_one_is_skipped() -> None:
    """session.context_changed (the working directory moved): the settled event counts, the
    preliminary one (pendingGitContext) does not; the client's name stays."""
    log = Log()
    log.start(context={"cwd": "/src/a", "repository": "o/a", "branch": "main"})
    log.add("session.context_changed", cwd="/src/b", pendingGitContext=True)
    log.add("session.context_changed", cwd="/src/b", repository="o/b", branch="dev")
    log.user()
    log.simple_turn("0", "u1")
    spans = Assembler(AssemblerConfig(client_name_of=lambda _: "sdk")).feed("s", log.events())
    assert spans
    for span in spans:
        assert span.attributes[sc.VCS_REPOSITORY_NAME] == "b"
        assert span.attributes[sc.VCS_REF_HEAD_NAME] == "dev"
        assert span.attributes[sc.COPILOT_CWD] == "/src/b"
        assert span.attributes[sc.COPILOT_CLIENT_NAME] == "sdk"


def test_an_azure_devops_repository_gets_its_own_url_and_owner() -> None:
    log = Log()
    log.start(
        context={
            "cwd": "/src/r",
            "repository": "org/project/repo",
            "repositoryHost": "dev.azure.com",
            "hostType": "ado",
        }
    )
    log.user()
    log.simple_turn("0", "u1")
    (span, *_) = Assembler().feed("s", log.events())
    assert span.attributes[sc.VCS_REPOSITORY_NAME] == "repo"
    assert span.attributes[sc.VCS_OWNER_NAME] == "org/project"
    assert (
        span.attributes[sc.VCS_REPOSITORY_URL_FULL] == "https://dev.azure.com/org/project/_git/repo"
    )
    assert span.attributes[sc.VCS_PROVIDER_NAME] == "ado"


def test_the_client_name_comes_from_workspace_yaml(tmp_path: Path) -> None:
    assert read_client_name(str(GIT_LOG)) == "github/cli"
    assert read_client_name(str(FIXTURES / "abort" / "events.jsonl")) is None  # none kept
    (tmp_path / "workspace.yaml").write_text("id: x\ncwd: /a\nclient_name: 'sdk'\nname: n\n")
    assert read_client_name(str(tmp_path / "events.jsonl")) == "sdk"
    (tmp_path / "workspace.yaml").write_bytes(b"\xff\xfe garbage")
    assert read_client_name(str(tmp_path / "events.jsonl")) is None


def test_live_sessions_are_attributed_to_the_sdk_client() -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    bridge = LiveBridge([exporter], environ={})
    log = Log()
    log.start(context={"cwd": "/src/a", "repository": "o/a", "branch": "main"})
    log.user()
    log.simple_turn("0", "u1")
    for raw in log.raw:
        bridge.on_event(raw)
    bridge.close()
    spans = exporter.get_finished_spans()
    assert spans
    assert {span.attributes[sc.COPILOT_CLIENT_NAME] for span in spans} == {"sdk"}
    assert {span.attributes[sc.VCS_REPOSITORY_NAME] for span in spans} == {"a"}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("keep", "/src/demo-project"), ("basename", "demo-project"), ("hash", "path:")],
)
def test_paths_decides_how_the_working_directory_and_git_root_go_out(
    mode: str, expected: str
) -> None:
    scrubber = Scrubber(ScrubberConfig(paths=mode))
    out = scrubber.attributes(
        {sc.COPILOT_CWD: "/src/demo-project", sc.COPILOT_GIT_ROOT: "/src/demo-project/"}
    )
    assert out[sc.COPILOT_CWD].startswith(expected)
    assert out[sc.COPILOT_GIT_ROOT].startswith(expected)
    if mode == "hash":
        assert "demo" not in str(out[sc.COPILOT_CWD])
    # kept, a path is scrubbed as a whole: a key or a URL with a password used as a directory
    # name is redacted; an ordinary path is not
    keep = Scrubber()
    assert "QT3lmTuc" not in keep.path("/var/lib/app/atLAKAspQT3lmTuc/egZkE5i4ublpzzxHdn8J8W0")
    assert "ADyb22" not in keep.path("/tmp/mysql://root:ADyb22UhmB88Qua4d6@127.0.0.1/shop")
    ordinary = "/home/dev/src/github.com/octo-org/demo-project"
    assert keep.path(ordinary) == ordinary


# --- metrics ----------------------------------------------------------------------------------

#: What a label must never be: a path, a commit, a URL, a session or user id.
NEVER_LABELS = {
    sc.COPILOT_CWD,
    sc.COPILOT_GIT_ROOT,
    sc.VCS_REF_HEAD_REVISION,
    sc.VCS_REF_BASE_REVISION,
    sc.VCS_REPOSITORY_URL_FULL,
    sc.GEN_AI_CONVERSATION_ID,
    sc.ENDUSER_ID,
    "session.id",
}
NEVER_PATTERN = re.compile(r"revision|commit|cwd|root|path|dir|url|conversation|session\.id|user")


def every_label_key() -> set[str]:
    return {key for spec in CATALOGUE for key in spec.attributes} | set(OPTIONAL_LABELS.values())


def test_no_metric_label_is_a_path_a_commit_or_a_session_id() -> None:
    """Over the whole catalogue and every label --metric-labels can add."""
    keys = every_label_key()
    assert REPOSITORY_LABELS[1] in keys  # the set checked is the real one
    assert not keys & NEVER_LABELS
    assert not [key for key in keys if NEVER_PATTERN.search(key)]


def test_every_metric_with_a_model_label_carries_the_repository() -> None:
    model_keys = {sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL}
    with_model = [spec for spec in CATALOGUE if model_keys & set(spec.attributes)]
    assert with_model
    for spec in with_model:
        assert set(REPOSITORY_LABELS) <= set(spec.attributes), spec.name


def observed(path: Path, labels: tuple[str, ...] = ()) -> RecordingRecorder:
    recorder = RecordingRecorder()
    assemble(
        path,
        AssemblerConfig(client_name_of=read_client_name, metric_labels=labels),
        metrics=recorder,
    )
    return recorder


def test_model_metrics_are_labelled_by_repository_and_nothing_else_by_default() -> None:
    calls = observed(GIT_LOG).calls
    attributed = {spec.name for spec in CATALOGUE if REPOSITORY_LABELS[1] in spec.attributes}
    seen = [(name, attrs) for _, name, _, attrs, _ in calls if name in attributed]
    # (this log's model is a bring-your-own-key provider and edits nothing: no cost or
    # code-change metric is observed; tests/unit/assembler/test_accounting.py covers those)
    assert {
        "gen_ai.client.inference.operation.input_tokens",
        "gen_ai.client.inference.duration",
        "gen_ai.client.inference.usage.input_tokens",
    } <= {name for name, _ in seen}
    for name, attributes in seen:
        assert attributes[sc.VCS_REPOSITORY_NAME] == "demo-project", name
        assert attributes[sc.VCS_OWNER_NAME] == "octo-org", name
        assert not set(OPTIONAL_LABELS.values()) & set(attributes), name
    for _, name, _, attributes, _ in calls:  # the other metrics get no attribution at all
        if name not in attributed:
            assert not [k for k in attributes if k.startswith("vcs.")], name


def test_opted_in_labels_come_and_no_label_value_is_a_path_commit_or_session_id() -> None:
    calls = observed(GIT_LOG, tuple(OPTIONAL_LABELS.values())).calls
    events = raw_events(GIT_LOG)
    session_id = events[0]["data"]["sessionId"]
    secrets = {session_id} | {
        value
        for context in contexts(GIT_LOG)
        for key, value in context.items()
        if key in ("cwd", "gitRoot", "headCommit", "baseCommit")
    }
    branches = set()
    for _, name, _, attributes, _ in calls:
        assert not set(attributes) & NEVER_LABELS, name
        assert not secrets & {str(v) for v in attributes.values()}, name
        if sc.VCS_REF_HEAD_NAME in attributes:
            branches.add(attributes[sc.VCS_REF_HEAD_NAME])
            assert attributes[sc.COPILOT_CLIENT_NAME] == "github/cli"
            assert attributes[sc.COPILOT_REPOSITORY_HOST] == "github.com"
            assert attributes[sc.VCS_PROVIDER_NAME] == "github"
    assert branches == {"main", "feature/attribution"}


def test_a_label_that_is_not_optional_is_refused() -> None:
    with pytest.raises(ValueError, match="not an optional metric label"):
        AssemblerConfig(metric_labels=(sc.VCS_REF_HEAD_REVISION,))


def test_the_metric_labels_option_takes_names_and_refuses_others(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["replay", str(GIT_LOG), "--metric-labels", "branch,commit"])
    assert exit_info.value.code == 2
    assert "--metric-labels: 'branch,commit' is not a list" in capsys.readouterr().err


# --- the resource -----------------------------------------------------------------------------


def test_the_resource_says_which_host_os_version_and_instance() -> None:
    attributes = dict(build_resource({}).attributes)
    assert attributes[sc.HOST_NAME] and attributes[sc.OS_TYPE] in ("linux", "darwin", "windows")
    assert attributes[sc.SERVICE_VERSION] == attributes["otel_bridge.version"]
    instance = str(attributes[sc.SERVICE_INSTANCE_ID])
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", instance)
    # stable across builds (restarts), apart between bridges of one machine
    assert build_resource({}).attributes[sc.SERVICE_INSTANCE_ID] == instance
    other = build_resource({}, ResourceOptions(instance_key="run\x00/state/b\x00None"))
    assert other.attributes[sc.SERVICE_INSTANCE_ID] != instance
    assert sc.ENDUSER_ID not in attributes  # only when asked


def test_the_user_and_resource_attributes_given_win() -> None:
    environ = {"OTEL_RESOURCE_ATTRIBUTES": "host.name=node-7,team=agents,cost.centre=cc%2042"}
    attributes = build_resource(environ, ResourceOptions(enduser_id="alice")).attributes
    assert attributes[sc.HOST_NAME] == "node-7"
    assert attributes["team"] == "agents" and attributes["cost.centre"] == "cc 42"
    assert attributes[sc.ENDUSER_ID] == "alice"
    assert attributes[sc.SERVICE_NAME] == "github-copilot"


def test_user_option_puts_enduser_id_on_the_spans_resource(tmp_path: Path) -> None:
    out = tmp_path / "traces.jsonl"
    env_free = ["replay", str(GIT_LOG), "--traces-file", str(out)]
    cases = (
        (["--user", "dev-42"], "dev-42"),
        (["--user", "os"], getpass.getuser()),
        ([], None),
    )
    for extra, expected in cases:
        assert main([*env_free, *extra]) == 0
        request = json.loads(out.read_text().splitlines()[0])
        resource = {
            a["key"]: a["value"].get("stringValue")
            for a in request["resourceSpans"][0]["resource"]["attributes"]
        }
        assert resource.get(sc.ENDUSER_ID) == expected
        assert resource[sc.HOST_NAME]
