"""stepfork.replay.noise (issue 28): what an opaque id, a timing value and a rule are, and the output
comparison replay, exported tests, check and minimize share (docs/diff.md "Noise rules")."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from stepfork.replay import ReplaySession, replay_entrypoint, run_regression_case
from stepfork.replay.noise import NoiseRules, Origins, compare_output, is_opaque_id, read_rules_file
from stepfork.replay.noise.data import shipped
from stepfork.replay.noise.timing import is_clock, is_epoch, timing_shaped
from stepfork.trace import record, trace_tool

FRESH = [
    "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
    "call_kzTNxAq5ycLEZUNVeRMnbE4B",
    "toolu_01A09q90qw90lq917835lq9",
    "msg_01XFDUDYJgAACzvnptvVoYEL",
    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "lc_run--019a2490-6bd6-777a-b2a8-bdb8e76f0e57-0",
    "run-3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
    "pyd_ai_5f0e3d2c1b0a49788796a5b4c3d2e1f0",
    "3f1b2c4d5e6f4a7b8c9d0e1f2a3b4c5d",
    "01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "call_AbcDefGhiJklMnoPqrStuVwx",
]
NOT_IDS = [
    "call_weather_1",
    "msg_01",
    "chatcmpl-tool1",
    "ORD-1001",
    "Paris",
    "claude-sonnet-4-5-20250929",
    "gpt-4o-mini",
    "20260105",
    "getWeatherForecast",
    "call_weatherforecastlookup",
    "2026-01-05",
]


@pytest.mark.parametrize("token", FRESH)
def test_opaque_ids_are_recognised_by_shape(token: str) -> None:
    assert is_opaque_id(token)


@pytest.mark.parametrize("token", NOT_IDS)
def test_words_numbers_dates_and_readable_ids_are_not_opaque_ids(token: str) -> None:
    assert not is_opaque_id(token)


def test_clock_and_duration_shapes() -> None:
    assert is_clock("2026-12-06T01:50:13.148718Z")
    assert is_clock("Tue, 01 Dec 2026 12:00:00 GMT")
    assert is_clock("PT0.001298S")
    assert is_clock({"$stepfork": "datetime", "value": "2026-12-06T01:50:13"})
    assert not is_clock("2026-01-05")  # a date alone: a booking date is behaviour
    assert not is_clock("2024-13-45T10:00")
    assert is_epoch(1767225600)
    assert is_epoch(1767225600123)
    assert not is_epoch(42)
    assert not is_epoch(True)
    assert timing_shaped(412, duration_key=True)
    assert timing_shaped("412", duration_key=True)
    assert not timing_shaped(412, duration_key=False)


def test_every_shipped_rule_says_why_and_shows_a_real_example() -> None:
    rules = NoiseRules.shipped().rules
    assert {r.sdk for r in rules} >= {"openai", "anthropic", "langchain", "pydantic-ai"}
    for rule in rules:
        assert all((rule.reason, rule.example, rule.paths)), rule.name
    data = shipped()
    assert all(data[table]["reason"] for table in ("timing", "ids", "new_fields"))


def test_a_users_rules_file_adds_rules_and_a_malformed_one_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "noise.toml"
    good.write_text(
        '[[rule]]\nname = "acme"\nwhere = "body"\npaths = ["trace_token"]\n'
        'reason = "Acme\'s gateway stamps it"\n'
    )
    rules = NoiseRules.with_files([good])
    assert rules.body_rule("trace_token") is not None
    assert NoiseRules.shipped().body_rule("trace_token") is None
    for text, message in [
        ('[[rule]]\nname = "x"\nwhere = "nowhere"\npaths = ["a"]\nreason = "r"\n', "'where' must be one of"),
        ('[[rule]]\nname = "x"\nwhere = "body"\npaths = ["a["]\nreason = "r"\n', "invalid path 'a['"),
        ('[[rule]]\nname = "x"\nwhere = "message"\npaths = ["id"]\nreason = "r"\n', "names its message"),
        ('[[rule]]\nname = "x"\nwhere = "body"\npaths = ["id"]\n', "'reason' must be"),
        ("[[rule]\n", "is not TOML"),
        ("[timing]\nkeys = []\n", "unknown table(s) timing"),
    ]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(ValueError, match=re.escape(message)):
            read_rules_file(bad)
    with pytest.raises(ValueError, match="cannot read"):
        read_rules_file(tmp_path / "missing.toml")


def real(expected: object, actual: object, origins: Origins | None = None) -> list[str]:
    return [str(d.path) for d in compare_output(expected, actual, origins) if d.noise is None]


def test_fresh_ids_compare_up_to_a_one_to_one_renaming() -> None:
    a, b, c = (f"lc_run--{uuid.uuid4()}-0" for _ in range(3))
    assert real({"ids": [a, b], "text": f"reply to {a}"}, {"ids": [c, b], "text": ""})
    assert not real({"ids": [a, b], "text": f"reply to {a}"}, {"ids": [c, b], "text": f"reply to {c}"})
    # two ids never map to one, nor one to two
    assert real([a, b], [c, c]) == ["(1,)"]
    assert real([a, a], [b, c]) == ["(1,)"]
    # an equal id binds to itself: it cannot be another id elsewhere
    assert real([a, a], [a, c]) == ["(1,)"]


def test_an_id_the_recording_handed_out_must_match_exactly() -> None:
    booking, other = "bk_9f8e7d6c5b4a39281706", "bk_0a1b2c3d4e5f60718293"
    handed = Origins(values=[{"bookings": [booking, other]}])
    assert real({"booking": booking}, {"booking": other}, handed) == ["('booking',)"]
    assert not real({"booking": booking}, {"booking": booking}, handed)
    fresh = f"run-{uuid.uuid4()}"
    assert real({"booking": fresh}, {"booking": booking}, handed) == ["('booking',)"]
    assert real({"booking": booking}, {"booking": fresh}, handed) == ["('booking',)"]
    # embedded ids count: a JSON-encoded tool argument hands out the id inside it
    inside = Origins(values=['{"booking": "bk_9f8e7d6c5b4a39281706"}'])
    assert real(booking, fresh, inside) == ["()"]


def test_framework_message_clocks_and_new_fields_are_noise_but_a_time_the_agent_returns_is_not() -> None:
    def response(**extra: object) -> dict[str, object]:
        value = {"kind": "response", "parts": [], "timestamp": "2026-12-06T01:50:13Z", **extra}
        return {"$stepfork": "model", "type": "ModelResponse", "value": value}

    old = response()
    new = response(request_timestamp="2026-12-06T01:50:14Z", duration="PT0.0013S", ui_visibility=None)
    assert not real([old], [new])
    assert not real(
        [response(timestamp="2026-12-06T01:50:13Z")], [response(timestamp="2026-12-07T09:00:00Z")]
    )
    assert real([old], [response(ui_visibility="hidden")])  # a new field with a value is a change
    assert real({"meeting_at": "2026-01-05T10:00:00Z"}, {"meeting_at": "2026-01-05T11:00:00Z"})


@trace_tool
def make_booking(city: str) -> dict[str, str]:
    return {"city": city, "booking_id": f"bk_{uuid.uuid4().hex[:20]}"}


def minted_agent() -> dict[str, str]:
    booking = make_booking("Paris")
    return {"booking": booking["booking_id"], "request": f"req-{uuid.uuid4()}"}


def wrong_id_agent() -> dict[str, str]:
    make_booking("Paris")
    return {"booking": f"bk_{uuid.uuid4().hex[:20]}", "request": f"req-{uuid.uuid4()}"}


def test_replay_report_and_exported_assertion_rename_fresh_ids_and_catch_a_wrong_handed_out_id(
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "run.sftrace"
    with record("minted", output=bundle) as session:
        session.set_output(minted_agent())
    outcome = replay_entrypoint(bundle, minted_agent)
    assert outcome.behavior.status == "MATCHED", outcome.behavior.message
    assert [d.path for d in outcome.behavior.ignored] == ["$.request"]
    assert outcome.behavior.ignored[0].noise == "renamed id"
    assert outcome.to_dict()["behavior"]["ignored_count"] == 1
    recorded = ReplaySession.from_trace(bundle).trace.events[-1].output
    assert run_regression_case(minted_agent, bundle, expectation=recorded)
    wrong = replay_entrypoint(bundle, wrong_id_agent)
    assert (wrong.behavior.status, wrong.behavior.path) == ("DIVERGED", "booking")
    with pytest.raises(AssertionError, match="behavior mismatch at 'booking'"):
        run_regression_case(wrong_id_agent, bundle, expectation=recorded)
