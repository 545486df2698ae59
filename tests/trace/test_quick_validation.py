"""The quick verdict of ``stepfork validate`` (``_quick_validation``) is the full one, or no verdict.

``quick_validate`` proves "valid, nothing to warn about" without pydantic; whenever it answers, the full
validation (``validate_bundle``, the pydantic models) must give that very result. Checked on every bundle of
the test data and the examples, in strict and partial mode, and on many mutations of a recorded bundle
(one field changed, removed or added, lines cut, swapped or repeated). And its tables of fields are the
models' own.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))  # the shared strategies (importlib import mode)
from json_strategies import all_keys, json_scalars, json_text, json_values, same

from stepfork.trace import LLMOutput, _format, _quick_validation, llm_request, models, record, trace_tool
from stepfork.trace._files import pretty_json
from stepfork.trace._quick_validation import EVENT_FIELDS, quick_validate
from stepfork.trace.canonical import compact_json, loads_json
from stepfork.trace.redaction import default_redactor
from stepfork.trace.validation import validate_bundle

REPO = Path(__file__).resolve().parents[2]
BUNDLES = sorted(
    path
    for root in (REPO / "tests", REPO / "examples")
    for path in root.rglob("*.sftrace")
    if path.is_dir() and ".stepfork" not in path.parts
)


def agrees(path: Path, *, strict: bool) -> bool:
    """True when the quick verdict is the full one; returns whether there was a quick verdict."""
    quick = quick_validate(str(path), strict=strict)
    if quick is None:
        return False
    full = validate_bundle(path, strict=strict)
    assert full.valid, (path, full.codes)
    assert full.warnings == [], (path, [w.code for w in full.warnings])
    assert not full.incomplete
    assert quick == full
    return True


def test_the_field_tables_are_the_models() -> None:
    assert tuple(models.EventBase.model_fields) == _format.COMMON_EVENT_FIELDS
    for kind, (own, required) in EVENT_FIELDS.items():
        model = models.EVENT_CLASSES[kind]
        assert set(_format.COMMON_EVENT_FIELDS) | set(own) == set(model.model_fields), kind
        model_required = {name for name, field in model.model_fields.items() if field.is_required()}
        assert model_required - {"type"} <= set(required), kind  # the quick check may require more
    assert set(EVENT_FIELDS) == set(models.EventType)


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "partial"])
def test_every_bundle_of_the_test_data_gets_the_full_verdict_or_none(strict: bool) -> None:
    answered = [path for path in BUNDLES if agrees(path, strict=strict)]
    assert len(BUNDLES) >= 10
    assert answered  # the quick verdict is given for real bundles, not only refused


@trace_tool
def lookup(query: dict[str, Any], limit: int = 3) -> list[dict[str, Any]]:
    return [{"id": i, "score": 0.5 / (i + 1), "title": f"hit {i}", "tags": ["a"]} for i in range(limit)]


@trace_tool
def explode(reason: str) -> None:
    raise ValueError(reason)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quick") / "run.sftrace"
    with record("quick", output=path, run_input={"ask": "flights"}) as session:
        lookup({"q": "oslo", "max_tokens": 5})
        lookup({"q": "bergen"}, limit=1)
        reply = LLMOutput({"text": "ok"}, prompt_tokens=3, completion_tokens=1, total_tokens=4, cost_usd=0.25)
        llm_request(model="m", provider="openai", input={"messages": []}, call=lambda: reply)
        session.record_state_change(key="stage", before="a", after="b")
        with contextlib.suppress(ValueError):
            explode("no seats")
        session.set_output({"answer": "none", "count": 0})
    assert agrees(path, strict=True)  # a fresh recording is proven
    assert agrees(path, strict=False)
    return path


_VALUES = st.one_of(
    st.sampled_from(
        [None, True, False, 0, -1, 1, 2**70, 1.5, -0.0, "", "x", "ok", "error", "frozen", "running", "failed"]
    ),
    st.sampled_from(
        [
            "2026-10-08T10:00:00Z",
            "2026-10-08T10:00:00.123456Z",
            "2026-10-08T10:00:00+00:00",
            "2026-10-08T10:00:00.1Z",
            "2026-13-08T10:00:00Z",
            "2026-10-08 10:00:00Z",
            "Bearer abcdefghijklmnop1234",
            "sk-abcdefghijklmnopqrstuvwx",
        ]
    ),
    st.just([]),
    st.just(["/input/x"]),
    st.just({}),
    st.just({"api_key": "v"}),
)
_EDITS = st.sampled_from(["set", "remove", "add", "cut", "swap", "repeat", "manifest", "redactions"])


def _mutated(source: Path, target: Path, edit: str, index: int, field_index: int, value: Any) -> None:
    shutil.copytree(source, target)
    lines = (target / "events.jsonl").read_bytes().splitlines()
    pick = index % len(lines)
    if edit in ("set", "remove", "add"):
        event = json.loads(lines[pick])
        name = sorted(event)[field_index % len(event)]
        if edit == "set":
            event[name] = value
        elif edit == "remove":
            del event[name]
        else:
            event["extra_field"] = value
        lines[pick] = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()
    elif edit == "cut":
        del lines[pick]
    elif edit == "swap":
        other = (pick + 1) % len(lines)
        lines[pick], lines[other] = lines[other], lines[pick]
    elif edit == "repeat":
        lines.insert(pick, lines[pick])
    elif edit in ("manifest", "redactions"):
        file = target / f"{edit}.json"
        obj = json.loads(file.read_bytes())
        if edit == "redactions":
            obj = {**obj, "entries": [{"event_id": "e", "path": "/x", "reason": "r", "replacement": value}]}
        else:
            obj[sorted(obj)[field_index % len(obj)]] = value
        file.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (target / "events.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit=_EDITS, index=st.integers(0, 20), field_index=st.integers(0, 20), value=_VALUES)
def test_a_mutated_bundle_gets_the_full_verdict_or_none(
    recorded: Path,
    tmp_path_factory: pytest.TempPathFactory,
    edit: str,
    index: int,
    field_index: int,
    value: Any,
) -> None:
    target = tmp_path_factory.mktemp("mutant") / "run.sftrace"
    _mutated(recorded, target, edit, index, field_index, value)
    for strict in (True, False):
        agrees(target, strict=strict)


# Values of the wrong JSON type for some field, or of the right type but out of the models' bounds.
_CONFUSING = [None, True, 0, -1, 1.0, 2**53 + 1, "", "x", "ok", [], ["x"], {}, "2026-10-08T10:00:00"]


def test_every_field_of_every_event_type_set_to_a_confusing_value_gets_the_full_verdict_or_none(
    recorded: Path, tmp_path: Path
) -> None:
    # systematic: one line of each event type, each of its fields, each confusing value
    lines = (recorded / "events.jsonl").read_bytes().splitlines()
    firsts: dict[str, int] = {}
    for number, line in enumerate(lines):
        firsts.setdefault(json.loads(line)["type"], number)
    target = tmp_path / "run.sftrace"
    shutil.copytree(recorded, target)
    answered = 0
    for number in firsts.values():
        event = json.loads(lines[number])
        for name in event:
            for value in _CONFUSING:
                changed = [*lines]
                changed[number] = json.dumps({**event, name: value}, separators=(",", ":")).encode()
                (target / "events.jsonl").write_bytes(b"".join(line + b"\n" for line in changed))
                answered += agrees(target, strict=False)
    (target / "events.jsonl").write_bytes((recorded / "events.jsonl").read_bytes())
    manifest = json.loads((recorded / "manifest.json").read_bytes())
    for name in manifest:
        for value in [*_CONFUSING, {"events": -1}, {"type": "x", "message": "y", "step": 0}, {"python": 3}]:
            text = json.dumps({**manifest, name: value}, indent=2)
            (target / "manifest.json").write_text(text + "\n", encoding="utf-8")
            answered += agrees(target, strict=True)
    assert answered  # some of them (a null parent_id of run_start...) are still proven valid


def test_no_verdict_for_a_torn_line_a_symlink_or_a_url(recorded: Path, tmp_path: Path) -> None:
    torn = tmp_path / "torn.sftrace"
    shutil.copytree(recorded, torn)
    with (torn / "events.jsonl").open("ab") as handle:
        handle.write(b'{"id":')
    linked = tmp_path / "linked.sftrace"
    shutil.copytree(recorded, linked)
    (linked / "manifest.json").unlink()
    (linked / "manifest.json").symlink_to(recorded / "manifest.json")
    for path in (torn, linked, Path("s3://bucket/run.sftrace"), tmp_path / "absent.sftrace"):
        assert quick_validate(str(path), strict=True) is None
        assert quick_validate(str(path), strict=False) is None


# The quick reader and screen (issue 31: the cold start without orjson) against the library's own.
_SECRETS = st.sampled_from(
    [
        *("Bearer abcdefghijklmnop1234", "sk-abcdefghijklmnopqrstuvwx", "password=hunter22", "x", "token"),
        "",
        *("gsk_abcdefghijklmnopqrstuvwx", "the password is Hunter2Tr0ub4dor", "db_password=Pa55word-Prod"),
    ]
)
_KEYS = st.one_of(
    json_text,
    st.sampled_from(["api_key", "Authorization", "max_tokens", "total_tokens", "q"]),
    # secret names (strings only) and the counts and cursors beside them (NEWCOMER2 finding 8)
    st.sampled_from(["openai_api_key", "githubToken", "AccountKey", "next_page_token", "promptTokenCount"]),
)
_RECORDS = st.recursive(
    st.one_of(json_scalars, _SECRETS),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_KEYS, children, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_the_quick_reader_reads_what_the_writers_write_as_loads_json_does(value: Any) -> None:
    compact = compact_json(value)  # the event lines' rule
    assert _quick_validation._compact(value).encode() == compact  # the quick reader's check writes alike
    assert same(_quick_validation._exact(compact.decode(), pretty=False), loads_json(compact))
    pretty = pretty_json(value)  # manifest.json and redactions.json
    assert same(_quick_validation._exact(pretty.decode(), pretty=True), loads_json(pretty))


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_text_another_writer_wrote_is_read_as_loads_json_reads_it_or_refused(value: Any) -> None:
    sorted_text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS) if _fits_orjson(value) else b""
    for text in (sorted_text, b" [1, 2]", b'{"a":1,"a":2}', b"[1E5]", b"[NaN]"):
        try:
            read = _quick_validation._exact(text.decode(), pretty=False)
        except _quick_validation._NotProven:
            continue
        assert same(read, loads_json(text))


def _fits_orjson(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(value=_RECORDS)
def test_the_quick_secret_screen_answers_as_the_default_redactor(value: Any) -> None:
    compact = compact_json(value)
    keys = _quick_validation._keys(value)
    assert keys == all_keys(value)
    assert _quick_validation._may_hold_secret(value, compact) == default_redactor.may_change(keys, compact)
