"""Spec replay.txt "CLI": the report behind `stepfork replay` (replay_entrypoint) and its exit codes."""

from __future__ import annotations

import contextlib
import json

import pytest
import replay_agents as agents

from stepfork.replay import EntrypointError, exit_code_for_error, replay_entrypoint
from stepfork.trace import TraceStorageError, trace_tool


class CardDeclined(Exception):
    pass


@trace_tool(name="charge_card")
def declining_charge(amount: int) -> dict:
    raise CardDeclined("declined")


def failing_agent() -> dict:
    return declining_charge(5)


def test_a_matching_run_completes_with_exit_0(recorder) -> None:
    outcome = replay_entrypoint(recorder(agents.booking_agent), agents.booking_agent)
    assert outcome.execution.status == "COMPLETED"
    assert (outcome.matching.status, outcome.matching.matched, outcome.matching.total) == ("COMPLETE", 3, 3)
    assert outcome.behavior.status == "MATCHED"
    assert outcome.result == {"booked": "Paris-B"}
    assert [c.label for c in outcome.calls] == ["search_flights", "openai/gpt-test", "book_flight"]
    assert outcome.exit_code == 0
    assert json.loads(json.dumps(outcome.to_dict()))["behavior"]["status"] == "MATCHED"


def test_a_different_return_value_with_all_calls_matched_is_diverged_exit_1(recorder) -> None:
    path = recorder(agents.booking_agent)
    outcome = replay_entrypoint(path, lambda: {**agents.booking_agent(), "extra": 1})
    assert outcome.matching.status == "COMPLETE"
    assert (outcome.behavior.status, outcome.behavior.path) == ("DIVERGED", "extra")
    assert outcome.exit_code == 1


def test_no_recorded_output_is_not_recorded_exit_0(recorder) -> None:
    outcome = replay_entrypoint(recorder(agents.booking_agent, set_output=False), agents.booking_agent)
    assert (outcome.behavior.status, outcome.exit_code) == ("NOT RECORDED", 0)


def test_a_divergence_is_reported_with_its_diagnostic_exit_1(recorder) -> None:
    outcome = replay_entrypoint(recorder(agents.booking_agent), lambda: agents.booking_agent("Rome"))
    assert outcome.execution.status == "RAISED"
    assert outcome.execution.error_type == "stepfork.replay.errors.ReplayMismatchError"
    assert (outcome.matching.status, outcome.matching.code) == ("DIVERGED", "input_diverged")
    assert outcome.matching.diagnostic.difference.path == "$.city"
    assert outcome.behavior.status == "NOT COMPARED"
    assert outcome.exit_code == 1


def test_skipped_recorded_calls_are_incomplete_exit_1(recorder) -> None:
    outcome = replay_entrypoint(recorder(agents.booking_agent), lambda: agents.search_flights("Paris"))
    assert outcome.matching.status == "INCOMPLETE"
    assert outcome.matching.remaining == ("openai/gpt-test", "book_flight")
    assert outcome.exit_code == 1


def test_reproducing_the_recorded_failure_exits_0(recorder) -> None:
    path = recorder(failing_agent, raises=True)
    outcome = replay_entrypoint(path, failing_agent)
    assert outcome.execution.status == "RAISED"
    assert outcome.behavior.status == "REPRODUCED FAILURE"
    assert outcome.exit_code == 0


def test_completing_a_run_recorded_as_failed_is_diverged(recorder) -> None:
    path = recorder(failing_agent, raises=True)

    def fixed() -> str:
        try:
            declining_charge(5)
        except Exception:
            return "handled"
        return "?"

    outcome = replay_entrypoint(path, fixed)
    assert (outcome.behavior.status, outcome.exit_code) == ("DIVERGED", 1)


def test_a_tampered_fingerprint_rejects_the_bundle_with_exit_2(recorder) -> None:
    from stepfork.trace import Trace

    trace = Trace.load(recorder(agents.booking_agent))
    call = trace.events[1]
    trace.events[1] = call.model_copy(update={"input": {"city": "Paris", "limit": 99}})
    outcome = replay_entrypoint(trace, agents.booking_agent)
    assert outcome.matching.code == "invalid_input_fingerprint"
    assert outcome.exit_code == 2


def test_errors_before_the_run_map_to_exit_2(recorder, tmp_path) -> None:
    with pytest.raises(TraceStorageError) as unreadable:
        replay_entrypoint(tmp_path / "missing.sftrace", agents.booking_agent)
    with pytest.raises(ValueError) as bad_mode:
        replay_entrypoint(recorder(agents.booking_agent), agents.booking_agent, mode="derived")
    with pytest.raises(EntrypointError) as bad_entry:
        replay_entrypoint(recorder(agents.booking_agent), "nomodule")
    assert {exit_code_for_error(e.value) for e in (unreadable, bad_mode, bad_entry)} == {2}


def test_secrets_in_the_result_are_redacted(recorder) -> None:
    secret = "sk-live0123456789abcdefghijKLMN"
    outcome = replay_entrypoint(recorder(agents.booking_agent), lambda: {"token": f"Bearer {secret}"})
    assert secret not in json.dumps(outcome.to_dict())


def _recovering_agent(result: object):
    """An agent that calls with another city, catches the divergence, and completes with ``result``."""

    def agent() -> object:
        with contextlib.suppress(Exception):
            agents.booking_agent("Rome")
        return result

    return agent


def test_a_completed_entrypoint_keeps_its_result_when_the_replay_diverged(recorder) -> None:
    secret = "sk-live0123456789abcdefghijKLMN"
    path = recorder(agents.booking_agent)
    outcome = replay_entrypoint(path, _recovering_agent({"decision": "refund", "token": secret}))
    assert (outcome.execution.status, outcome.matching.status) == ("COMPLETED", "DIVERGED")
    assert outcome.behavior.status == "NOT COMPARED"
    # the actual value is shown, redacted like every other value, never a null that reads as "returned None"
    assert outcome.result == {"decision": "refund", "token": "[REDACTED]"}
    assert outcome.result_error is None
    assert outcome.to_dict()["result"] == outcome.result
    assert outcome.exit_code == 1


def test_a_diverged_result_without_a_json_form_says_why_instead_of_null(recorder) -> None:
    outcome = replay_entrypoint(recorder(agents.booking_agent), _recovering_agent(object()))
    assert outcome.behavior.status == "NOT COMPARED"
    assert outcome.result is None
    assert outcome.result_error
    assert outcome.to_dict()["result_error"] == outcome.result_error


class Stop(BaseException):
    """A BaseException that is not an Exception, raised by the agent itself."""


@pytest.mark.parametrize("raised", [SystemExit(3), Stop("halt")], ids=["sys-exit", "own-base-exception"])
def test_an_entrypoint_raising_a_base_exception_is_reported_as_raised(recorder, raised) -> None:
    def agent() -> None:
        agents.booking_agent()
        raise raised

    outcome = replay_entrypoint(recorder(agents.booking_agent), agent)
    assert outcome.execution.status == "RAISED"
    # the type as the traceback prints it: a builtin without its module (docs/decisions.md, issue 32)
    qualified = f"{type(raised).__module__}.{type(raised).__qualname__}"
    assert outcome.execution.error_type == ("SystemExit" if isinstance(raised, SystemExit) else qualified)
    assert (outcome.behavior.status, outcome.exit_code) == ("DIVERGED", 1)
