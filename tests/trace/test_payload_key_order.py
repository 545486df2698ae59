"""Payloads keep their recorded key order in events.jsonl; hashes cover the sorted bytes (notes 2.2, C1).

A tool returning ``{"zeta": 1, "alpha": 2}`` must load back in that order, or an agent that puts
``json.dumps(output)`` in a prompt sees another text on replay (docs/format.md).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import stepfork.trace as stepfork  # the trace tests run with stepfork-trace alone (.ci/run)
from stepfork.trace import Trace, trace_tool
from stepfork.trace.bundle import serialize_event
from stepfork.trace.canonical import canonical_json, compact_json, fingerprint, loads_json
from stepfork.trace.redaction import REPLACEMENT, Redactor

# Key orders that sorting would change, nested included.
UNSORTED: dict[str, Any] = {"zeta": 1, "alpha": 2, "mid": {"y": [{"k2": 1, "k1": 2}], "b": None}}
SORTED_COPY: dict[str, Any] = json.loads(json.dumps(UNSORTED, sort_keys=True))


@trace_tool
def lookup(query: dict[str, Any]) -> Any:
    return query["answer"]


def record_run(path: Path, answer: Any, *, redactor: Redactor | None = None) -> Path:
    """One run: run_input, a tool call and result, an LLM call and response, run_end output."""
    run_input = {"zeta": "in", "alpha": {"y": 1, "b": 2}}
    with stepfork.record("order", output=path, run_input=run_input, redactor=redactor) as session:
        found = lookup({"zz": 1, "answer": answer})
        reply = stepfork.llm_request(
            model="m",
            provider="openai",
            input={"messages": [{"role": "user", "content": "hi"}], "model": "m"},
            call=lambda: {"zeta": "out", "alpha": {"y": 1, "b": 2}},
        )
        session.set_output({"zeta": found, "alpha": reply})
    return path


def events_by_type(path: Path) -> dict[str, Any]:
    return {event.type.value: event for event in Trace.load(path).events}


def keys_all_the_way_down(value: Any) -> list[Any]:
    """Every dict's key list, depth first, so two values compare in key order too."""
    if isinstance(value, dict):
        return [list(value), *(keys_all_the_way_down(v) for v in value.values())]
    if isinstance(value, list):
        return [keys_all_the_way_down(v) for v in value]
    return []


def test_tool_llm_run_input_and_run_output_load_back_in_their_recorded_key_order(tmp_path: Path) -> None:
    events = events_by_type(record_run(tmp_path / "run.sftrace", UNSORTED))
    assert list(events["run_start"].input) == ["zeta", "alpha"]
    assert list(events["run_start"].input["alpha"]) == ["y", "b"]
    assert list(events["tool_call"].input["query"]) == ["zz", "answer"]
    output = events["tool_result"].output
    assert output == UNSORTED
    assert keys_all_the_way_down(output) == keys_all_the_way_down(UNSORTED)
    assert keys_all_the_way_down(output) != keys_all_the_way_down(SORTED_COPY)  # the check can fail
    assert list(events["llm_request"].input["messages"][0]) == ["role", "content"]
    assert list(events["llm_response"].output) == ["zeta", "alpha"]
    assert list(events["llm_response"].output["alpha"]) == ["y", "b"]
    assert list(events["run_end"].output) == ["zeta", "alpha"]
    assert keys_all_the_way_down(events["run_end"].output["zeta"]) == keys_all_the_way_down(UNSORTED)


def test_the_line_holds_the_compact_recorded_order_and_the_hash_covers_the_sorted_bytes(
    tmp_path: Path,
) -> None:
    path = record_run(tmp_path / "run.sftrace", UNSORTED)
    line = next(
        raw
        for raw in (path / "events.jsonl").read_bytes().splitlines()
        if loads_json(raw)["type"] == "tool_result"
    )
    assert line.endswith(b'"output":' + compact_json(UNSORTED) + b"}")
    assert compact_json(UNSORTED) != canonical_json(UNSORTED)
    assert events_by_type(path)["tool_result"].output_hash == fingerprint(UNSORTED)
    assert stepfork.validate_bundle(path, verify_integrity=True).valid


def test_the_same_value_in_any_key_order_gets_the_same_hashes(tmp_path: Path) -> None:
    first = events_by_type(record_run(tmp_path / "a.sftrace", UNSORTED))
    second = events_by_type(record_run(tmp_path / "b.sftrace", SORTED_COPY))
    assert first["tool_result"].output_hash == second["tool_result"].output_hash
    assert first["tool_call"].input_hash == second["tool_call"].input_hash
    assert first["tool_result"].output_hash == hashlib_of_sorted(UNSORTED)
    assert list(first["tool_result"].output) != list(second["tool_result"].output)


def hashlib_of_sorted(value: Any) -> str:
    """SHA-256 of Python's sorted json.dumps text: the rule of notes 2.1 restated, not our encoder."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_floats_orjson_spells_differently_keep_python_text_and_key_order(tmp_path: Path) -> None:
    value = {"zeta": 1e-05, "alpha": [1e-07, 0.5], "m": 1e16}
    path = record_run(tmp_path / "run.sftrace", value)
    raw = (path / "events.jsonl").read_text("utf-8")
    assert '"output":{"zeta":1e-05,"alpha":[1e-07,0.5],"m":1e+16}' in raw
    assert events_by_type(path)["tool_result"].output_hash == hashlib_of_sorted(value)


@pytest.mark.parametrize(
    "answer",
    [
        {"zeta": 1, "api_key": "sk-abcdefgh12345678", "alpha": 2},  # a sensitive key
        {"zeta": "token sk-abcdefgh12345678", "mid": 0, "alpha": 2},  # a secret in a string
        {"zeta": 1, "acme-internal": 3, "alpha": 2},  # a registered secret used as a key
    ],
)
def test_redaction_rewrites_values_in_place_without_reordering_keys(tmp_path: Path, answer: Any) -> None:
    redactor = Redactor(secrets=["acme-internal"])
    path = record_run(tmp_path / "run.sftrace", answer, redactor=redactor)
    output = events_by_type(path)["tool_result"].output
    assert len(output) == 3
    keys = list(output)
    assert (keys[0], keys[2]) == ("zeta", "alpha")
    assert REPLACEMENT in json.dumps(output)
    assert "acme-internal" not in (path / "events.jsonl").read_text("utf-8")
    assert "sk-abcdefgh12345678" not in (path / "events.jsonl").read_text("utf-8")


def test_resaving_a_loaded_recording_reproduces_its_events_file(tmp_path: Path) -> None:
    path = record_run(tmp_path / "run.sftrace", UNSORTED)
    original = (path / "events.jsonl").read_bytes()
    trace = Trace.load(path)
    assert b"".join(serialize_event(event) for event in trace.events) == original
    again = trace.save(tmp_path / "again.sftrace")
    assert (again / "events.jsonl").read_bytes() == original
