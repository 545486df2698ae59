"""run_regression_case: the exported test's body (hybrid-replay.txt; REFERENCE-API.md stepfork.export)."""

from __future__ import annotations

import contextlib
import itertools
import textwrap
from pathlib import Path

import pytest
import replay_agents as agents

from stepfork.replay import EntrypointError, resolve_entrypoint, run_regression_case

_ids = itertools.count()

MODULE = """
from stepfork.trace import trace_tool

@trace_tool
def lookup(order_id: str) -> dict:
    return {"order_id": order_id, "carrier": "FedEx"}

def run():
    info = lookup("ORD-1")
    return {"order_id": info["order_id"], "should_notify": {notify}}

async def arun():
    return run()
"""


def _module(tmp_path: Path, notify: str = "True") -> str:
    name = f"regression_agent_{next(_ids)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE.replace("{notify}", notify)))
    return name


def test_a_matching_run_returns_the_redacted_json_output(recorder) -> None:
    path = recorder(agents.booking_agent)
    assert run_regression_case(agents.booking_agent, path, expectation={"booked": "Paris-B"}) == {
        "booked": "Paris-B"
    }


def test_a_different_output_reports_the_first_difference_path(recorder) -> None:
    path = recorder(agents.booking_agent)
    with pytest.raises(AssertionError) as info:
        run_regression_case(agents.booking_agent, path, expectation={"booked": "Paris-A"})
    assert str(info.value) == 'behavior mismatch at \'booked\': expected "Paris-A", got "Paris-B"'


def test_a_root_difference_uses_dollar(recorder) -> None:
    path = recorder(agents.booking_agent)
    with pytest.raises(AssertionError, match=r"^behavior mismatch at '\$': expected 1, got "):
        run_regression_case(agents.booking_agent, path, expectation=1)


def test_has_expectation_false_skips_the_output_comparison(recorder) -> None:
    path = recorder(agents.booking_agent)
    assert run_regression_case(agents.booking_agent, path, expectation=None, has_expectation=False)


def test_a_divergence_is_reported_with_the_replay_divergence_prefix(recorder) -> None:
    path = recorder(agents.booking_agent)
    with pytest.raises(AssertionError, match=r"^stepfork replay divergence: "):
        run_regression_case(lambda: agents.booking_agent("Rome"), path, expectation=None)


def test_a_caught_divergence_still_fails_the_case(recorder) -> None:
    path = recorder(agents.booking_agent)

    def sneaky() -> dict:
        with contextlib.suppress(Exception):
            agents.booking_agent("Rome")
        return agents.booking_agent()

    with pytest.raises(AssertionError, match=r"^stepfork replay divergence: "):
        run_regression_case(sneaky, path, expectation={"booked": "Paris-B"})


def test_unconsumed_calls_are_a_divergence(recorder) -> None:
    path = recorder(agents.booking_agent)
    with pytest.raises(AssertionError, match=r"^stepfork replay divergence: .*book_flight"):
        run_regression_case(lambda: agents.search_flights("Paris"), path, has_expectation=False)


def test_live_tool_without_authorization_is_a_policy_violation(recorder) -> None:
    path = recorder(agents.booking_agent)
    with pytest.raises(AssertionError, match=r"^stepfork replay policy violation: "):
        run_regression_case(agents.booking_agent, path, mode="live", has_expectation=False)


def test_the_trajectory_expectation_is_applied(recorder) -> None:
    path = recorder(agents.booking_agent)
    with pytest.raises(AssertionError, match="charge_card"):
        run_regression_case(
            agents.booking_agent,
            path,
            has_expectation=False,
            trajectory_expectation={"called": ["charge_card"]},
        )
    with pytest.raises(ValueError):
        run_regression_case(agents.booking_agent, path, trajectory_expectation={"bogus": 1})


def test_a_missing_or_unreadable_bundle_has_its_prefix(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"^stepfork: trace bundle not found: "):
        run_regression_case(agents.booking_agent, tmp_path / "nope.sftrace")
    broken = tmp_path / "broken.sftrace"
    broken.mkdir()
    with pytest.raises(AssertionError, match=r"^stepfork: trace bundle unreadable: "):
        run_regression_case(agents.booking_agent, broken)


def test_string_entrypoints_resolve_against_the_import_root_and_async_ones_run(
    recorder, tmp_path: Path
) -> None:
    name = _module(tmp_path)
    run = resolve_entrypoint(f"{name}:run", import_root=tmp_path)
    path = recorder(run)
    expectation = {"order_id": "ORD-1", "should_notify": True}
    assert (
        run_regression_case(f"{name}:run", path, import_root=tmp_path, expectation=expectation) == expectation
    )
    assert run_regression_case(f"{name}:arun", path, import_root=tmp_path, expectation=expectation)
    assert run_regression_case(
        entrypoint=f"{name}:run", trace_path=str(path), import_root=str(tmp_path), expectation=expectation
    )


def test_the_red_to_green_loop_names_the_regressed_field(recorder, tmp_path: Path) -> None:
    good = _module(tmp_path)
    path = recorder(resolve_entrypoint(f"{good}:run", import_root=tmp_path))
    bad = _module(tmp_path, notify="False")
    with pytest.raises(AssertionError) as info:
        run_regression_case(
            f"{bad}:run", path, import_root=tmp_path, expectation={"order_id": "ORD-1", "should_notify": True}
        )
    assert str(info.value) == "behavior mismatch at 'should_notify': expected true, got false"


@pytest.mark.parametrize(
    ("spec", "code"),
    [("no_colon", "bad_form"), ("a:b:c", "bad_form"), ("surely_missing_module_xyz:run", "import_failed")],
)
def test_unresolvable_entrypoints_raise_entrypoint_error_with_a_code(spec, code, tmp_path: Path) -> None:
    with pytest.raises(EntrypointError) as info:
        resolve_entrypoint(spec, import_root=tmp_path)
    assert info.value.code == code


def test_a_missing_attribute_is_reported(recorder, tmp_path: Path) -> None:
    name = _module(tmp_path)
    with pytest.raises(EntrypointError) as info:
        resolve_entrypoint(f"{name}:nope", import_root=tmp_path)
    assert info.value.code == "missing_attribute"
    with pytest.raises(AssertionError, match=r"^stepfork: entrypoint failed: "):
        run_regression_case(f"{name}:nope", recorder(agents.booking_agent), import_root=tmp_path)
