"""MinimizeResult renders the spec's report panel (spec/cli-reference.txt "minimize")."""

from __future__ import annotations

from stepfork.analysis import MinimizeResult
from stepfork.analysis.minimize import Signature


def _result() -> MinimizeResult:
    return MinimizeResult(
        original="failure.sftrace",
        output="minimal.sftrace",
        agent_name="notify-agent",
        entrypoint="quickstart:run_agent",
        mode="frozen",
        original_events=8,
        minimized_events=5,
        replay_attempts=15,
        signature=Signature("output_mismatch", "should_notify"),
        minimal=True,
    )


def test_the_report_panel_has_the_spec_rows() -> None:
    text = str(_result())
    for row in (
        "Original Events     8",
        "Minimized Events    5",
        "Reduction           37.5%",
        "Replay Attempts     15",
        "Failure Signature   Output Mismatch",
        "Minimal             Yes",
    ):
        assert row in text
    assert text.splitlines()[0].startswith("╭─ Minimization Report ")
    assert text.endswith("✓ Minimized trace saved to: minimal.sftrace")


def test_json_and_html_forms() -> None:
    data = _result().to_dict()
    assert data["reduction"] == 37.5
    assert data["signature"] == {"kind": "output_mismatch", "detail": "should_notify"}
    assert "<table>" in _result()._repr_html_()


def test_an_exception_signature_names_its_type() -> None:
    assert str(Signature("exception", "KeyError")) == "Exception (KeyError)"
