"""Each session-state root is looked at for whether it can be listed (sources/tail/_roots.py):
one line when that changes, never one per look, and only a root that exists but cannot be
read counts as unreadable (one that does not exist yet is waited for)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from otel_bridge.sources.tail import _roots
from otel_bridge.sources.tail._roots import MISSING, RootHealth, root_problem


def test_a_missing_root_is_waited_for_and_a_file_is_not_a_root(tmp_path: Path) -> None:
    assert root_problem(tmp_path) is None
    assert root_problem(tmp_path / "nope") == MISSING
    (tmp_path / "file").write_text("x")
    assert "is not a directory" in str(root_problem(tmp_path / "file"))


def test_a_denied_root_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def denied(path: object) -> object:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(_roots.os, "scandir", denied)
    why = root_problem(tmp_path)
    assert why is not None and why.startswith("cannot be read (Permission denied)")
    assert "read and execute permission" in why


def test_each_change_is_said_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing, denied = tmp_path / "later", tmp_path / "denied"
    denied.mkdir()
    real = os.scandir
    blocked = {str(denied)}

    def scandir(path: object) -> object:
        if str(path) in blocked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(_roots.os, "scandir", scandir)
    health = RootHealth([missing, denied])
    with caplog.at_level(logging.INFO, logger="otel_bridge.sources._tail"):
        for _ in range(3):
            health.check()
        assert health.unreadable == [(denied, root_problem(denied))]
        assert set(health.problems) == {missing, denied}
        missing.mkdir()
        blocked.clear()
        health.check()
        health.check()
    assert health.problems == {} and health.unreadable == []
    lines = [record.getMessage() for record in caplog.records]
    assert lines.count(f"{missing} {MISSING}") == 1
    assert len([line for line in lines if line.startswith(f"{denied} cannot be read")]) == 1
    assert lines.count(f"{missing} can be read now") == 1
    assert lines.count(f"{denied} can be read now") == 1
