"""Replay's "output differs at" line shows the first real difference of two long strings (as diff does,
NEWCOMER3 F1): a long answer whose first differing characters are a fresh id (renamed, noise) and whose real
change lies past the preview's 200 characters used to show two identical-looking cut previews."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from stepfork.replay import replay_entrypoint
from stepfork.trace import record, trace_tool

FILLER = "The forecast for the coming week stays stable across the region, " * 4


@trace_tool
def get_weather(city: str) -> str:
    return f"Sunny in {city}."


def answer_agent() -> str:
    weather = get_weather("Paris")
    report = f"report {uuid.uuid4().hex}"  # a fresh id early in the text: renamed, never the difference
    return f"{report}. {FILLER}{weather} Bring {os.environ.get('BRING', 'sunglasses')}."


def test_the_preview_shows_the_first_real_difference_of_a_long_string(tmp_path: Path, monkeypatch) -> None:
    bundle = tmp_path / "run.sftrace"
    with record("long", output=bundle) as session:
        session.set_output(answer_agent())
    assert replay_entrypoint(bundle, answer_agent).behavior.status == "MATCHED"
    monkeypatch.setenv("BRING", "an umbrella")
    behavior = replay_entrypoint(bundle, answer_agent).behavior
    assert behavior.status == "DIVERGED"
    assert behavior.expected.startswith('"...')
    assert behavior.actual.startswith('"...')
    assert 'Bring sunglasses."' in behavior.expected
    assert 'Bring an umbrella."' in behavior.actual
    assert "Sunny in Paris." in behavior.expected  # the text just before the difference is there
    assert len(behavior.expected) < 200
    assert behavior.message == f"output differs at '$': expected {behavior.expected}, got {behavior.actual}"
