"""Spec replay.txt "Errors": the hierarchy, and recorded failures raised again (C8)."""

from __future__ import annotations

import contextlib

import pytest

from stepfork.replay import (
    RecordedDependencyError,
    ReplayError,
    ReplayExhaustedError,
    ReplayMismatchError,
    ReplayPolicyError,
    ReplaySession,
)
from stepfork.trace import llm_request, trace_tool

SECRET = "sk-live0123456789abcdefghijKLMN"


class RateLimited(Exception):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def test_the_hierarchy_is_the_specs() -> None:
    assert issubclass(ReplayMismatchError, ReplayError)
    assert issubclass(ReplayExhaustedError, ReplayMismatchError)
    assert issubclass(ReplayPolicyError, ReplayError)
    assert issubclass(RecordedDependencyError, ReplayError)
    assert not issubclass(ReplayPolicyError, ReplayMismatchError)


@trace_tool(name="fetch_rates")
def fetch_rates(currency: str) -> dict:
    try:
        raise TimeoutError(f"upstream timed out, token {SECRET}")
    except TimeoutError as exc:
        raise RateLimited(f"slow down {SECRET}", retry_after=3) from exc


def _agent() -> str:
    try:
        fetch_rates("EUR")
    except RateLimited:
        return "fallback"
    return "unreachable"


def test_c8_a_recorded_tool_failure_is_raised_again_with_type_message_and_chain(recorder) -> None:
    path = recorder(_agent)
    with ReplaySession.from_trace(path) as replay:
        with pytest.raises(RecordedDependencyError) as info:
            fetch_rates("EUR")
        replay.verify_complete()
    err = info.value
    assert err.kind == "tool"
    assert err.name == "fetch_rates"
    assert err.error_type == f"{RateLimited.__module__}.RateLimited"
    assert err.short_type == "RateLimited"
    assert SECRET not in err.message
    assert err.message.startswith("slow down")
    assert [entry["type"] for entry in err.chain] == ["TimeoutError"]
    assert SECRET not in str(err.chain)
    assert str(err).startswith("recorded tool failure for 'fetch_rates': ")
    assert replay.divergence is None  # a recorded failure is not a divergence
    assert replay.executed_calls[0].status == "error"


def test_c8_the_agents_except_path_can_run_on_a_tool_catching_its_own_type(recorder) -> None:
    path = recorder(_agent)

    @trace_tool(name="fetch_rates")
    def replayed(currency: str) -> dict:
        return {}

    with ReplaySession.from_trace(path) as replay:
        try:
            replayed("EUR")
        except RecordedDependencyError as exc:
            assert exc.short_type == "RateLimited"
        replay.verify_complete()


def test_a_recorded_llm_failure_is_raised_again(recorder) -> None:
    def boom() -> None:
        raise ConnectionError("model unavailable")

    def agent() -> None:
        with contextlib.suppress(ConnectionError):
            llm_request(model="gpt-test", input={"q": 1}, call=boom)

    path = recorder(agent)
    with ReplaySession.from_trace(path), pytest.raises(RecordedDependencyError) as info:
        llm_request(model="gpt-test", input={"q": 1}, call=boom)
    assert (info.value.kind, info.value.name, info.value.error_type) == (
        "llm",
        "gpt-test",
        "ConnectionError",
    )
    assert info.value.message == "model unavailable"


def test_errors_carry_codes_and_diagnostics_not_only_prose(recorder) -> None:
    path = recorder(lambda: None)
    with ReplaySession.from_trace(path), pytest.raises(ReplayExhaustedError) as info:
        llm_request(model="m", input={}, call=lambda: None)
    assert info.value.code == "exhausted"
    assert info.value.diagnostic.actual_label == "m"
    assert info.value.diagnostic.to_dict()["actual_kind"] == "llm"
