"""run_in_session: the entrypoint call shared by replay_entrypoint and minimize (spec replay.txt, "CLI")."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from stepfork.replay import run_in_session


@contextmanager
def _session(exits: list[str]) -> Iterator[None]:
    try:
        yield
    except BaseException as exc:
        exits.append(type(exc).__name__)
        raise
    exits.append("clean")


def test_a_raising_entrypoint_is_returned_and_the_session_closes_cleanly() -> None:
    exits: list[str] = []

    def agent() -> str:
        raise ValueError("boom")

    result, raised = run_in_session(_session(exits), agent)
    assert result is None
    assert isinstance(raised, ValueError)
    assert exits == ["clean"]


def test_an_async_entrypoint_returns_its_awaited_result() -> None:
    exits: list[str] = []

    async def agent() -> int:
        return 7

    assert run_in_session(_session(exits), agent) == (7, None)
    assert exits == ["clean"]


def test_a_keyboard_interrupt_propagates_through_the_session() -> None:
    exits: list[str] = []

    def agent() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_in_session(_session(exits), agent)
    assert exits == ["KeyboardInterrupt"]


class Halt(BaseException):
    """An agent's own BaseException that is not an Exception."""


@pytest.mark.parametrize("raised", [SystemExit(0), Halt("stop")], ids=["sys-exit", "own-base-exception"])
def test_other_base_exceptions_are_returned_and_the_session_closes_cleanly(raised: BaseException) -> None:
    exits: list[str] = []

    def agent() -> None:
        raise raised

    assert run_in_session(_session(exits), agent) == (None, raised)
    assert exits == ["clean"]
