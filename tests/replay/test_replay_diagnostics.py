"""Diagnostics (C7): the JSON path of the first difference, previews, and their properties."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stepfork.replay import MISSING, first_difference
from stepfork.replay.diagnostics import display_path, preview
from stepfork.trace import canonical_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4),
    max_leaves=20,
)

_STEP = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def _resolve(value: Any, path: str) -> Any:
    """Follow a ``$.a[0]["b c"]`` path; MISSING when a step does not exist."""
    import json

    assert path.startswith("$")
    for match in _STEP.finditer(path[1:]):
        name, index, quoted = match.groups()
        key: Any = name if name is not None else int(index) if index is not None else json.loads(quoted)
        in_list = isinstance(key, int) and isinstance(value, list) and key < len(value)
        in_dict = isinstance(key, str) and isinstance(value, dict) and key in value
        if in_list or in_dict:
            value = value[key]
        else:
            return MISSING
    return value


@settings(max_examples=200, deadline=None)
@given(json_values, json_values)
def test_first_difference_is_none_exactly_when_canonical_bytes_are_equal(a: Any, b: Any) -> None:
    difference = first_difference(a, b)
    assert (difference is None) == (canonical_json(a) == canonical_json(b))
    if difference is not None:
        assert _resolve(a, difference.path) == difference.expected or difference.expected is MISSING
        assert _resolve(b, difference.path) == difference.actual or difference.actual is MISSING


def test_key_order_is_ignored_and_types_are_not() -> None:
    assert first_difference({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}) is None
    assert first_difference({"a": 1}, {"a": 1.0}).path == "$.a"
    assert first_difference([True], [1]).path == "$[0]"
    assert first_difference({"t": 0.0}, {"t": -0.0}).path == "$.t"
    missing = first_difference({"x": {"y": 1}}, {"x": {}})
    assert (missing.path, missing.expected, missing.actual) == ("$.x.y", 1, MISSING)
    assert first_difference({"a b": 1}, {"a b": 2}).path == '$["a b"]'


def test_display_path_is_the_references_form() -> None:
    assert display_path("$") == "$"
    assert display_path("$.escalation_required") == "escalation_required"
    assert display_path("$.items[0].id") == "items[0].id"


def test_previews_are_canonical_and_bounded() -> None:
    assert preview({"b": 1, "a": "x"}) == '{"a":"x","b":1}'
    assert preview(MISSING) == "<missing>"
    long = preview("x" * 1000)
    assert len(long) == 200
    assert long.endswith("...")


def test_a_call_past_the_end_renders_words_not_none() -> None:
    from stepfork.replay import Diagnostic

    text = Diagnostic(
        actual_kind="tool", actual_label="noise", actual_input='{"i":0}', actual_input_fingerprint="e" * 64
    ).render()
    assert "None" not in text
    assert text.splitlines()[:3] == [
        "call past the end of the recording",
        "  recorded: no further call (the recording ended)",
        '  live:     tool noise  input {"i":0}',
    ]
    assert "  actual input fingerprint:   eeeeeeeeeeee…" in text.splitlines()
    assert "recorded input fingerprint" not in text  # no recorded call, no recorded fingerprint


def test_a_replay_that_stopped_early_renders_the_missing_actual_call_in_words() -> None:
    from stepfork.replay import Diagnostic

    text = Diagnostic(
        index=1, step=3, expected_kind="tool", expected_label="lookup", expected_input='{"k":"beta"}'
    ).render(verbose=True)
    assert "None" not in text
    assert text.splitlines()[:3] == [
        "call #2 (step 3)",
        '  recorded: tool lookup  input {"k":"beta"}',
        "  live:     no further call (the run ended)",
    ]
