"""C8: a recorded failure's cause chain comes back as ``__cause__`` on replay (NEWCOMER2 16), so an agent's
``except`` path that reads ``e.__cause__`` does what it did live (stepfork/replay/causes.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepfork.replay import RecordedDependencyError, ReplaySession
from stepfork.trace import trace_tool


class RateLimited(Exception):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class UpstreamError(Exception):
    """An application's own error in the middle of the chain (no raise_as key names it)."""


class Backoff(Exception):
    """A user's class a raise_as key maps a cause to."""


UPSTREAM = f"{UpstreamError.__module__}.{UpstreamError.__qualname__}"


@trace_tool
def flaky(query: str) -> dict[str, Any]:
    try:
        raise TimeoutError("upstream timed out")
    except TimeoutError as exc:
        raise RateLimited("slow down", retry_after=3) from exc


@trace_tool
def deep(query: str) -> dict[str, Any]:
    try:
        try:
            raise ConnectionResetError("peer reset")
        except ConnectionResetError as exc:
            raise UpstreamError("bad gateway") from exc
    except UpstreamError:
        raise RateLimited("slow down", retry_after=1)  # noqa: B904 - the implicit context is the chain


def caught(tool: Any) -> list[tuple[str, str]]:
    """What the agent's except path sees: each exception of the chain, its type name and message."""
    try:
        tool("q")
    except Exception as exc:
        seen: list[tuple[str, str]] = []
        current: BaseException | None = exc
        while current is not None:
            seen.append((type(current).__name__, str(current)))
            current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
        return seen
    raise AssertionError("no failure")


def agent_reading_the_cause() -> dict[str, Any]:
    try:
        flaky("q")
    except RateLimited as exc:
        return {"cause": type(exc.__cause__).__name__, "timeout": isinstance(exc.__cause__, TimeoutError)}
    return {}


@pytest.fixture
def bundle(recorder: Any) -> Path:
    return recorder(lambda: caught(flaky))


def test_the_default_failure_carries_its_cause_as_a_builtin_exception(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle), pytest.raises(RecordedDependencyError) as raised:
        flaky("q")
    cause = raised.value.__cause__
    assert isinstance(cause, TimeoutError)
    assert isinstance(cause, RecordedDependencyError)  # still what replay raised, with what was recorded
    assert (type(cause).__name__, str(cause), cause.error_type) == (
        "TimeoutError",
        "upstream timed out",
        "TimeoutError",
    )
    assert cause.__cause__ is None
    assert raised.value.chain == ({"type": "TimeoutError", "message": "upstream timed out"},)


def test_with_raise_as_the_agents_except_path_sees_the_recorded_cause(recorder: Any) -> None:
    bundle = recorder(agent_reading_the_cause)
    with ReplaySession.from_trace(bundle, raise_as={"RateLimited": RateLimited}) as replay:
        assert agent_reading_the_cause() == {"cause": "TimeoutError", "timeout": True}
        replay.verify_complete()


def test_a_longer_chain_keeps_its_order_and_each_type(recorder: Any) -> None:
    bundle = recorder(lambda: caught(deep))
    with ReplaySession.from_trace(bundle, raise_as={"RateLimited": RateLimited}):
        seen = caught(deep)
    assert seen == [
        ("RateLimited", "slow down"),
        ("RecordedDependencyError", f"recorded tool failure for 'deep': {UPSTREAM}: bad gateway"),
        ("ConnectionResetError", "peer reset"),
    ]


def test_a_raise_as_key_covering_a_cause_gives_the_users_class(recorder: Any) -> None:
    bundle = recorder(lambda: caught(deep))
    with (
        ReplaySession.from_trace(bundle, raise_as={"UpstreamError": Backoff}),
        pytest.raises(RecordedDependencyError) as raised,
    ):
        deep("q")
    cause = raised.value.__cause__
    assert isinstance(cause, Backoff)
    assert str(cause) == "bad gateway"
    assert isinstance(cause.__cause__, ConnectionResetError)
