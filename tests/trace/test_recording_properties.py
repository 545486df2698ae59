"""Property: for any JSON a tool takes and returns, the lines are those bundle saving would write."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))  # the shared strategies (importlib import mode)
from json_strategies import json_text, json_values, same

from stepfork.trace import record, trace_tool
from stepfork.trace.bundle import prepare_event, serialize_event
from stepfork.trace.canonical import loads_json
from stepfork.trace.jsonable import to_jsonable
from stepfork.trace.models import EVENT_ADAPTER
from stepfork.trace.redaction import default_redactor

SECRETS = st.sampled_from(["", " sk-abcdefgh12345678", " Bearer abcdefgh.12345678", " ghp_abcdefgh12345678"])


@trace_tool
def echo(value: Any, label: str = "x") -> Any:
    return value


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, label=json_text, secret=SECRETS)
def test_recorded_lines_equal_serialize_event_and_are_already_redacted_and_hashed(
    value: Any, label: str, secret: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "p.sftrace"
        with record("prop", output=out, run_input={"v": value}):
            assert same(echo(value, label + secret), value)
        lines = (out / "events.jsonl").read_bytes().splitlines(keepends=True)
        assert len(lines) == 4
        for line in lines:
            event = EVENT_ADAPTER.validate_python(loads_json(line))
            assert serialize_event(event) == line
            again, new_entries = prepare_event(event)
            assert again == line
            assert new_entries == []
        call = loads_json(lines[1])
        bound = to_jsonable({"value": value, "label": label + secret})
        expected = default_redactor.redact(bound, base_path="/input")
        assert same(call["input"], expected.value)
        assert call["redactions"] == list(dict.fromkeys(f.path for f in expected.findings))
        if secret:
            assert secret.split()[-1] not in lines[1].decode("utf-8")
            assert "/input/label" in call["redactions"]
