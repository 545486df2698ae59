"""score_test (spec/cli-reference.txt "score"; issue 5): ast-only reading, battery, verdict, pins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepfork.analysis import ScoreError, export_pytest_test, score_test
from stepfork.analysis.score import build_battery

from ..conftest import GOLDEN


def _export(bundle: Path, tmp_path: Path, expectation=None) -> Path:
    kwargs = {} if expectation is None else {"expectation": expectation, "has_expectation": True}
    return export_pytest_test(
        trace_path=bundle, entrypoint="nowhere:run", output_path=tmp_path / "test_x_regression.py", **kwargs
    ).path


def test_an_expectation_with_a_live_pin_is_claim_pinned(record_notify, tmp_path: Path) -> None:
    bundle = record_notify("notify")  # recorded output {"order_id": "ORD-1001", "should_notify": False}
    test = _export(bundle, tmp_path, {"order_id": "ORD-1001", "should_notify": False, "carrier": "FedEx"})
    result = score_test(test)
    assert result.verdict == "claim_pinned"
    assert result.exit_code == 0
    assert len(result.battery) == 7  # 1 claim + 3 leaves perturbed + 3 keys removed
    assert all(m.killed for m in result.battery)
    assert result.battery[0].source == "claim"
    assert result.battery[0].difference == "carrier"
    assert result.live_pins == ("carrier",)
    assert result.reproduced == ("order_id", "should_notify")


def test_an_expectation_copied_from_the_run_is_run_pinned(record_notify, tmp_path: Path) -> None:
    test = _export(record_notify("notify"), tmp_path)  # no --expect-output: the recorded output
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps({"order_id": "ORD-1001", "should_notify": False}))
    result = score_test(test, expect_output=expected)
    assert result.verdict == "run_pinned"
    assert result.exit_code == 1
    assert result.battery[0].killed is False
    assert result.live_pins == ()
    assert "run-pinned: the expectation accepts the claim-drawn mutant(s) the recorded run" in str(result)
    assert str(result).endswith("pins: 0 live (none); 2 leaf(s) reproduce the run (order_id, should_notify)")


def test_a_test_asserting_the_recorded_run_has_no_expectation_to_score(tmp_path: Path) -> None:
    test = tmp_path / "test_case.py"
    bundle = GOLDEN / "successful_run.sftrace"
    test.write_text(
        f"TRACE_PATH = {str(bundle)!r}\nEXPECTATION = {{'answer': 'x'}}\nHAS_EXPECTATION = True\n"
        "EXPECTATION_SOURCE = 'recorded'\n"
    )
    with pytest.raises(ScoreError) as info:
        score_test(test)
    assert info.value.code == "no_expectation"


def test_human_output_lines_follow_the_spec(record_notify, tmp_path: Path) -> None:
    test = _export(record_notify("notify"), tmp_path, {"order_id": "ORD-1001", "should_notify": True})
    text = str(score_test(test))
    assert text.splitlines()[0] == (
        "battery: 1 claim-drawn + 4 code-drawn mutant(s), "
        "derived from test_x_regression.py and notify.sftrace"
    )
    assert "  claim the recorded run                     killed  (first difference at should_notify)" in text
    assert "  code  should_notify: flipped               killed  (first difference at should_notify)" in text
    assert "claim-pinned: rejected 5/5 mutants, including every claim-drawn mutant" in text


def test_the_battery_perturbs_each_leaf_by_type() -> None:
    expectation = {"s": "x", "b": True, "n": 1, "f": 0.5, "z": None, "items": [1, 2]}
    labels = {m.label for m in build_battery(expectation, recorded={})}
    assert {"s: with a suffix", "b: flipped", "n: shifted", "f: shifted", "z: filled"} <= labels
    assert {"items[0]: dropped", "items[1]: dropped", "items[0]: shifted", "s: removed"} <= labels


def test_the_test_is_never_imported(tmp_path: Path) -> None:
    bundle = GOLDEN / "successful_run.sftrace"
    test = tmp_path / "test_boom.py"
    marker = tmp_path / "imported"
    test.write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        f"TRACE_PATH = {str(bundle)!r}\nEXPECTATION = {{'x': 1}}\nHAS_EXPECTATION = True\n"
    )
    result = score_test(test)
    assert not marker.exists()
    assert result.verdict == "claim_pinned"


@pytest.mark.parametrize(
    ("body", "code", "line"),
    [
        (
            "TRACE_PATH = 'a.sftrace'\nEXPECTATION = {'a': compute()}\nHAS_EXPECTATION = True\n",
            "not_a_literal",
            2,
        ),
        (
            "TRACE_PATH = find_bundle()\nEXPECTATION = {'a': 1}\nHAS_EXPECTATION = True\n",
            "bundle_expression",
            1,
        ),
        (
            "TRACE_PATH = 'nowhere.sftrace'\nEXPECTATION = {'a': 1}\nHAS_EXPECTATION = True\n",
            "bundle_not_found",
            None,
        ),
        ("TRACE_PATH = 'a.sftrace'\nEXPECTATION = None\nHAS_EXPECTATION = False\n", "no_expectation", None),
        ("def broken(:\n", "unreadable_test", 1),
    ],
)
def test_cases_score_cannot_answer_raise_a_coded_error(tmp_path: Path, body: str, code: str, line) -> None:
    test = tmp_path / "test_case.py"
    test.write_text(body)
    with pytest.raises(ScoreError) as info:
        score_test(test)
    assert info.value.code == code
    assert info.value.line == line


def test_a_run_without_a_completed_output_has_no_claim_drawn_mutant(tmp_path: Path) -> None:
    test = tmp_path / "test_case.py"
    test.write_text("TRACE_PATH = 'x'\nEXPECTATION = {'a': 1}\nHAS_EXPECTATION = True\n")
    with pytest.raises(ScoreError) as info:
        score_test(test, bundle=GOLDEN / "failed_tool_run.sftrace")
    assert info.value.code == "no_recorded_run"


def test_result_renders_as_json_and_html(record_notify, tmp_path: Path) -> None:
    result = score_test(_export(record_notify("notify"), tmp_path, {"should_notify": True}))
    data = result.to_dict()
    assert data["verdict"] == "claim_pinned"
    assert (data["claim_drawn"], data["code_drawn"], data["killed"]) == (1, 2, 3)
    assert data["pins"] == {"live": ["should_notify"], "reproduce": []}
    assert "<table>" in result._repr_html_()
    assert '<iframe sandbox="allow-scripts"' in result._repr_html_()  # the scored run's view
    printed: list[str] = []
    result._repr_pretty_(type("Printer", (), {"text": lambda self, t: printed.append(t)})(), False)
    assert printed == [str(result)]
