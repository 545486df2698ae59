"""diff_traces (spec/cli-reference.txt "diff"; issue 5): alignment by identity, paths, null vs absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepfork.analysis import DiffResult, diff_traces, first_difference, values_equal
from stepfork.analysis._shared.render import ABSENT
from stepfork.trace import Trace, TraceStorageError

from ..conftest import GOLDEN


def test_golden_pair_shows_the_price_change_at_its_path() -> None:
    result = diff_traces(GOLDEN / "diff_baseline.sftrace", GOLDEN / "diff_changed.sftrace")
    changes = {c.path: (c.expected, c.actual) for c in result.changes}
    assert changes["output.price"] == (320, 450)
    assert changes["output.selected_flight"] == ("B", "A")
    assert not result.equivalent
    assert result.exit_code == 1
    assert (result.changed, result.added, result.removed, result.unchanged) == (2, 0, 0, 0)


def test_a_trace_diffed_with_itself_is_equivalent() -> None:
    result = diff_traces(GOLDEN / "successful_run.sftrace", Trace.load(GOLDEN / "successful_run.sftrace"))
    assert result.equivalent
    assert result.exit_code == 0
    assert result.changes == []
    assert result.unchanged == len(result.steps)


def test_volatile_fields_never_count_as_change(record_notify) -> None:
    first = record_notify("a")
    second = record_notify("b")  # other run id, event ids, timestamps, durations
    result = diff_traces(first, second)
    assert result.equivalent, str(result)


def test_one_inserted_call_is_one_added_step_not_a_cascade(record_notify) -> None:
    result = diff_traces(record_notify("base"), record_notify("cand", log=True))
    assert (result.added, result.removed, result.changed) == (1, 0, 0)
    added = [s for s in result.steps if s.kind == "added"]
    assert [(s.step_type, s.label) for s in added] == [("tool", "log_event")]


def test_a_changed_llm_decision_reports_the_output_path_and_both_values(record_notify) -> None:
    result = diff_traces(record_notify("base"), record_notify("cand", notify=True))
    paths = {c.path: (c.expected, c.actual) for c in result.changes}
    assert paths["output.notify"] == (False, True)
    assert paths["output.should_notify"] == (False, True)
    run = result.steps[-1]
    assert run.step_type == "run"
    assert run.fields == {"output": "changed", "run_status": "unchanged"}


def test_null_and_an_absent_key_are_different_and_print_differently(record_notify) -> None:
    result = diff_traces(record_notify("base", extra={"carrier": None}), record_notify("cand"))
    (change,) = [c for c in result.changes if c.path == "output.carrier"]
    assert change.kind == "removed"
    assert change.expected is None
    assert change.actual is ABSENT
    assert change.to_dict() == {"path": "output.carrier", "kind": "removed", "expected": None}
    text = str(result)
    assert "  output.carrier (first)\n    baseline:  null\n    candidate: (absent)" in text


def test_human_output_has_the_spec_shape(record_notify) -> None:
    text = str(diff_traces(record_notify("base"), record_notify("cand", notify=True)))
    # issue 13: path first, one block per change, baseline/candidate (docs/decisions.md)
    assert "  output.should_notify\n    baseline:  false\n    candidate: true" in text
    assert text.count("(first)") == 1
    assert "  unchanged: run_status" in text
    assert "Steps: 3 total (2 changed, 0 added, 0 removed, 1 unchanged)" in text
    assert text.endswith("Result: BEHAVIOR CHANGED")


def test_result_renders_for_notebooks_and_json(record_notify) -> None:
    result: DiffResult = diff_traces(record_notify("base"), record_notify("cand", log=True))
    assert "<table>" in result._repr_html_()
    data = result.to_dict()
    counts = {"total": 4, "changed": 0, "added": 1, "removed": 0, "unchanged": 3, "ignored": 0, "renamed": 0}
    counts["not_compared"] = 0
    assert data["counts"] == counts
    assert data["steps"][1]["kind"] == "added"
    assert data["steps"][1]["candidate"]["input"] == {"name": "checked"}


def test_secrets_never_reach_the_diff(record_notify) -> None:
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    result = diff_traces(record_notify("base"), record_notify("cand", extra={"note": secret}))
    assert secret not in str(result)
    assert secret not in repr(result.to_dict())


def test_an_unreadable_bundle_raises_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(TraceStorageError):
        diff_traces(tmp_path / "missing.sftrace", GOLDEN / "diff_baseline.sftrace")


@pytest.mark.parametrize(
    ("expected", "actual", "difference"),
    [
        ({"a": 1}, {"a": 1}, None),
        ({"a": 1}, {"a": 1.0}, ("a", 1, 1.0)),
        ({"a": True}, {"a": 1}, ("a", True, 1)),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}, ("a.b[1]", 2, 3)),
        (1, 2, ("$", 1, 2)),
        ({"a": None}, {}, ("a", None, ABSENT)),
    ],
)
def test_first_difference_is_canonical_and_names_the_path(expected, actual, difference) -> None:
    assert first_difference(expected, actual) == difference
    assert values_equal(expected, actual) is (difference is None)


def test_provider_generated_values_are_ignored_counted_and_shown_on_request() -> None:
    """Issue 12: ids and timestamps a provider makes on every run are not behaviour; --strict counts them."""
    from stepfork.trace.models import LLMRequest, LLMResponse, RunEnd, RunStart

    def run(response_id: str, created: int, prompt: str) -> Trace:
        trace = Trace(run_id="run_x", agent_name="a")
        trace.add(RunStart(id="s", run_id="run_x", input=None))
        trace.add(
            LLMRequest(
                id="q",
                run_id="run_x",
                parent_id="s",
                provider="openai",
                model="gpt-test",
                input={"messages": [{"role": "user", "content": prompt}]},
            )
        )
        trace.add(
            LLMResponse(
                id="r",
                run_id="run_x",
                parent_id="q",
                model="gpt-test",
                output={"id": response_id, "created": created, "choices": [{"message": {"content": "hi"}}]},
            )
        )
        trace.add(RunEnd(id="e", run_id="run_x", parent_id="s", run_status="completed", output=None))
        return trace

    base = run("chatcmpl-1", 1700000000, "hello")
    same = diff_traces(base, run("chatcmpl-2", 1700000009, "hello"))
    assert same.equivalent
    assert same.ignored == 2
    assert "Ignored: 2 difference(s) as noise" in str(same)
    assert "ignored: output.id" not in str(same)
    shown = diff_traces(base, run("chatcmpl-2", 1700000009, "hello"), show_ignored=True)
    assert "ignored: output.created: 1700000000 -> 1700000009" in str(shown)
    strict = diff_traces(base, run("chatcmpl-2", 1700000009, "hello"), strict=True)
    assert not strict.equivalent
    assert sorted(c.path for c in strict.changes) == ["output.created", "output.id"]
    changed = diff_traces(base, run("chatcmpl-2", 1700000009, "bye"))
    assert not changed.equivalent
    assert [c.path for c in changed.changes] == ["input.messages[0].content"]
    extra = diff_traces(base, run("chatcmpl-1", 1700000000, "bye"), ignore=["input.messages[*].content"])
    assert extra.equivalent
    assert extra.ignored == 1
