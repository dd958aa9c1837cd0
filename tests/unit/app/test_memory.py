"""`run` gives a catch-up's memory back to the operating system once it is over, and after
many logs were let go at once, and after a line of megabytes, never at every poll
(app/_memory.py, issue 28)."""

from __future__ import annotations

import pytest

from otel_bridge.app._memory import LET_GO_AT_ONCE, MemoryRelease, malloc_trim


def test_memory_is_given_back_when_the_catch_up_ends_and_after_a_mass_let_go() -> None:
    calls: list[int] = []
    memory = MemoryRelease(lambda: calls.append(1))
    memory.after_poll(catching_up=True, let_go=0)
    memory.after_poll(catching_up=True, let_go=LET_GO_AT_ONCE)  # not while catching up
    assert calls == []
    memory.after_poll(catching_up=False, let_go=0)  # it ended
    assert len(calls) == 1
    for _ in range(10):  # idle polls: nothing
        memory.after_poll(catching_up=False, let_go=0)
    memory.after_poll(catching_up=False, let_go=LET_GO_AT_ONCE - 1)
    assert len(calls) == 1
    memory.after_poll(catching_up=False, let_go=LET_GO_AT_ONCE)  # readers put to sleep
    assert len(calls) == 2 and memory.released == 2


def test_a_trim_that_fails_is_not_tried_again() -> None:
    def failing() -> None:
        raise OSError("no")

    memory = MemoryRelease(failing)
    memory.after_poll(catching_up=False, let_go=LET_GO_AT_ONCE)
    memory.after_poll(catching_up=False, let_go=LET_GO_AT_ONCE)
    assert memory.released == 0


def test_glibc_trim_is_found_and_runs() -> None:
    trim = malloc_trim()
    if trim is None:
        pytest.skip("no glibc malloc_trim here")
    trim()  # returns 0 or 1: whether memory was given back


def test_memory_is_given_back_after_a_poll_that_read_a_huge_line() -> None:
    calls: list[int] = []
    memory = MemoryRelease(lambda: calls.append(1))
    memory.after_poll(catching_up=True, let_go=0, huge_lines=2)  # the catch-up's end will
    memory.after_poll(catching_up=False, let_go=0, huge_lines=2)
    assert len(calls) == 1
    memory.after_poll(catching_up=False, let_go=0, huge_lines=2)  # none since: nothing
    assert len(calls) == 1
    memory.after_poll(catching_up=False, let_go=0, huge_lines=3)
    assert len(calls) == 2
