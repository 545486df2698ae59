"""MinimizeResult renders the spec's report panel (spec/cli-reference.txt "minimize") and says whether the
minimized bundle replays cleanly (docs/minimize.md "Clean Replay")."""

from __future__ import annotations

import pytest

from stepfork.analysis import MinimizeResult
from stepfork.analysis.minimize import Signature


def _result(**fields: object) -> MinimizeResult:
    values: dict[str, object] = {
        "original": "failure.sftrace",
        "output": "minimal.sftrace",
        "agent_name": "notify-agent",
        "entrypoint": "quickstart:run_agent",
        "mode": "frozen",
        "original_events": 8,
        "minimized_events": 5,
        "replay_attempts": 15,
        "signature": Signature("output_mismatch", "should_notify"),
        "minimal": True,
        "removed_calls": 1,
        "removed": ("step 1: tool order_status",),
    }
    return MinimizeResult(**{**values, **fields})  # type: ignore[arg-type]


def test_the_report_panel_has_the_spec_rows() -> None:
    text = str(_result())
    for row in (
        "Original Events     8",
        "Minimized Events    5",
        "Reduction           37.5%",
        "Replay Attempts     15",
        "Failure Signature   Output Mismatch",
        "Minimal             Yes",
        "Clean Replay        Yes",
    ):
        assert row in text
    names = [name for name, _ in _result().rows()]
    assert names == [
        "Original Events",
        "Minimized Events",
        "Reduction",
        "Replay Attempts",
        "Failure Signature",
        "Minimal",
        "Clean Replay",
    ]
    assert text.splitlines()[0].startswith("╭─ Minimization Report ")
    assert "Removed 1 call:\n  - step 1: tool order_status\n" in text
    assert text.endswith("✓ Minimized trace saved to: minimal.sftrace")


def test_a_result_that_removed_nothing_says_so_instead_of_saved() -> None:
    text = str(_result(removed_calls=0, removed=()))
    assert "Nothing could be removed: every recorded call is needed to reproduce the failure." in text
    assert "saved" not in text
    assert _result(removed_calls=0, removed=()).to_dict()["removed"] == []


def test_json_and_html_forms() -> None:
    data = _result().to_dict()
    assert data["reduction"] == 37.5
    assert data["signature"] == {"kind": "output_mismatch", "detail": "should_notify", "divergence": None}
    assert data["clean_replay"] == {
        "required": False,
        "clean": True,
        "matching": "COMPLETE",
        "removed_calls_made": 0,
        "unconsumed": 0,
    }
    assert "<table>" in _result()._repr_html_()
    assert "Clean Replay" in _result()._repr_html_()


def test_a_final_replay_with_removed_calls_still_made_is_not_clean() -> None:
    final = Signature("output_mismatch", "should_notify", "input_diverged", "x", divergences=3)
    result = _result(replay=final)
    assert (result.replays_cleanly, result.removed_calls_made) == (False, 3)
    assert dict(result.rows())["Clean Replay"] == (
        "No (3 removed calls are still made; `stepfork replay` reports DIVERGED)"
    )
    assert result.to_dict()["clean_replay"] == {
        "required": False,
        "clean": False,
        "matching": "DIVERGED",
        "removed_calls_made": 3,
        "unconsumed": 0,
    }
    one = _result(replay=Signature("output_mismatch", "should_notify", "input_diverged", "x", divergences=1))
    assert dict(one.rows())["Clean Replay"].startswith("No (1 removed call is still made;")


def test_a_final_replay_that_leaves_calls_unconsumed_is_not_clean() -> None:
    result = _result(replay=Signature("output_mismatch", "should_notify", pending=2))
    assert dict(result.rows())["Clean Replay"] == (
        "No (2 recorded calls are left unconsumed; `stepfork replay` reports INCOMPLETE)"
    )


def test_a_final_replay_that_diverges_as_the_original_did_is_clean() -> None:
    diverged = Signature("exception", "ValueError", "input_diverged", "input_diverged e 1", divergences=1)
    result = _result(signature=diverged, replay=diverged, clean_replay=True)
    assert result.replays_cleanly
    assert result.to_dict()["clean_replay"]["matching"] == "DIVERGED"
    assert dict(result.rows())["Clean Replay"] == "Yes"


def test_an_exception_signature_names_its_type() -> None:
    assert str(Signature("exception", "KeyError")) == "Exception (KeyError)"


def test_a_signature_with_a_divergence_names_it() -> None:
    signature = Signature("exception", "ValueError", "input_diverged", "input_diverged evt_1 fetch 00")
    assert str(signature) == "Exception (ValueError), diverged (input_diverged)"


def test_signatures_are_equal_on_what_failed_and_how_the_replay_diverged_only() -> None:
    clean = Signature("exception", "ValueError", complete=True, reached=("evt_1", "evt_2"))
    assert clean == Signature("exception", "ValueError", complete=False, reached=())
    assert clean != Signature("exception", "ValueError", "input_diverged", "input_diverged evt_1 fetch 00")
    at_one = Signature("exception", "ValueError", "input_diverged", "input_diverged evt_1 fetch 00")
    assert at_one != Signature("exception", "ValueError", "input_diverged", "input_diverged evt_2 fetch 00")


def test_the_same_failure_ignores_how_the_replay_went_and_a_replay_error_is_never_one() -> None:
    original = Signature("exception", "ValueError")
    diverged = Signature("exception", "ValueError", "input_diverged", "x", divergences=4, pending=1)
    assert original.same_failure(diverged)
    assert not original.same_failure(Signature("exception", "KeyError"))
    replay_error = Signature("replay_error", "input_diverged")
    assert not replay_error.same_failure(replay_error)
    assert not original.replays_like(diverged)
    assert original.replays_like(Signature("exception", "KeyError"))  # how the replay went, only
    assert not original.replays_like(Signature("exception", "ValueError", pending=1))
    assert Signature("exception", "ValueError", pending=1).replays_like(Signature("exception", "ValueError"))


def test_a_signature_crosses_the_pipe_unchanged() -> None:
    signature = Signature(
        "output_mismatch", "alert", "name_mismatch", "x", divergences=2, pending=1, complete=False,
        reached=("a",),
    )  # fmt: skip
    back = Signature.from_json({**signature.to_json(), "id": 3})
    assert (back, back.divergences, back.pending) == (signature, 2, 1)
    assert (back.complete, back.reached) == (False, ("a",))
    with pytest.raises(ValueError, match="kind"):
        Signature.from_json({"detail": "x"})
    with pytest.raises(ValueError, match="malformed"):
        Signature.from_json({"kind": "exception", "detail": 3})
    with pytest.raises(ValueError, match="malformed"):
        Signature.from_json({"kind": "exception", "divergences": -1})
