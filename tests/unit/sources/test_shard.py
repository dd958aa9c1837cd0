"""`--shard I/N`: replicas split the sessions of one session-state directory, no overlap, no gap."""

from __future__ import annotations

import hashlib
import logging
import uuid
from pathlib import Path

import pytest

from otel_bridge.cli import main
from otel_bridge.cli._parser import build_parser
from otel_bridge.sources import TailOptions
from otel_bridge.sources._shard import Shard, in_shard, parse_shard, shard_of
from tests.corpus import session_state, spans_in_order


def test_the_hash_is_the_first_8_bytes_of_sha256_of_the_name() -> None:
    # Pinned: changing the hash would move sessions between replicas that share checkpoints.
    assert shard_of("158e2d19-f24c-4e77-9326-59460059a211", 1000) == 744
    assert shard_of("session", 7) == 2
    name = "d3ebfa08-de8a-4b43-93da-591db8061cb6"
    expected = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % 5
    assert shard_of(name, 5) == expected


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_every_session_is_in_exactly_one_shard(count: int) -> None:
    names = [str(uuid.UUID(int=n * 7919 + 1)) for n in range(500)]
    owners = [[i for i in range(count) if Shard(i, count).owns(name)] for name in names]
    assert all(len(owner) == 1 for owner in owners)
    assert {owner[0] for owner in owners} == set(range(count))  # no shard left empty


def test_parse_shard_reads_i_of_n() -> None:
    assert parse_shard("0/3") == Shard(0, 3)
    assert parse_shard(" 2/3 ") == Shard(2, 3)
    assert str(parse_shard("1/2")) == "1/2"
    assert in_shard("anything", None)
    assert in_shard("session", Shard(2, 7)) and not in_shard("session", Shard(1, 7))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("3/3", "from 0 to 2"),
        ("0/0", "1 or more"),
        ("a/b", "two whole numbers"),
        ("-1/3", "two whole numbers"),
        ("1", "two whole numbers"),
        ("1/2/3", "two whole numbers"),
        ("", "two whole numbers"),
    ],
)
@pytest.mark.parametrize("command", ["replay", "run"])
def test_a_bad_shard_is_an_argparse_error(
    command: str, text: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, f"--shard={text}"] + (["x"] if command == "replay" else [])
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --shard: {text!r} is not a shard" in err
    assert says in err


def test_run_takes_a_shard_for_its_tailer() -> None:
    args = build_parser().parse_args(["run", "--shard", "1/4"])
    assert args.shard == Shard(1, 4)
    assert TailOptions().shard is None
    assert TailOptions(shard=args.shard).shard == Shard(1, 4)


def test_three_shards_together_replay_every_span_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    corpus = session_state(tmp_path / "session-state")
    whole = tmp_path / "whole.jsonl"
    argv = ["replay", str(corpus), "--no-progress", "--jobs", "1"]
    assert main([*argv, "--traces-file", str(whole)]) == 0
    by_shard = []
    for index in range(3):
        out = tmp_path / f"shard-{index}.jsonl"
        jobs = ["--jobs", "2"] if index == 1 else []  # shards and jobs go together
        assert main([*argv, *jobs, "--shard", f"{index}/3", "--traces-file", str(out)]) == 0
        by_shard.append(spans_in_order(out))
    assert all(by_shard)  # each shard had sessions of its own
    ids = [span["spanId"] for spans in by_shard for span in spans]
    assert len(ids) == len(set(ids))  # no span in two shards
    key = lambda span: span["spanId"]  # noqa: E731
    union = sorted((span for spans in by_shard for span in spans), key=key)
    assert union == sorted(spans_in_order(whole), key=key)  # the same spans, content included


def test_a_named_log_outside_the_shard_is_skipped_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    corpus = session_state(tmp_path / "session-state")
    session = next(d for d in sorted(corpus.iterdir()) if shard_of(d.name, 2) == 1)
    out = tmp_path / "traces.jsonl"
    caplog.set_level(logging.INFO)
    for named in (session, session / "events.jsonl"):
        caplog.clear()
        argv = ["replay", str(named), "--shard", "0/2", "--traces-file", str(out)]
        assert main([*argv, "--no-progress"]) == 0
        assert f"skipped, session {session.name} is not in shard 0/2" in caplog.text
        assert "replayed 0 logs" in caplog.text
        assert out.read_text() == ""
    assert main(["replay", str(session), "--shard", "1/2", "--traces-file", str(out)]) == 0
    assert spans_in_order(out)
