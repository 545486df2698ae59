"""The bytes a recording writes are those the recorder wrote before the hot-path work of issue 31.

tests/trace/data/recorded_bytes.jsonl holds events.jsonl and redactions.json of one recording made through
the public API (``record``, ``@trace_tool``, ``llm_request``), written by the recorder as it was before
issue 31 (commit 75f937b), with one deliberate change since (issue 32: a builtin exception's type is
written ``ValueError``, as the format documents, not ``builtins.ValueError``), and normalized (ids
numbered by first appearance, timestamps and durations fixed). The recording passes every payload of the
reference bundles (the 52 events of the conformance data, tests/interop) as a tool's input and output and
as an LLM call's input, plus the shapes the fast paths must get right: big integers, NaN and infinities
(C2), bytes (C3), floats orjson writes otherwise than the canonical rule, lone surrogates, ``$stepfork``
keys, secrets by key, by pattern and in keys (C5), structured arguments, and texts that look like what the
fast paths search for (``null``, ``0.00001``, ``e-5``). Each reference payload's recorded fingerprint must
also equal the one stored in its reference bundle.

Regenerate only for a deliberate format change, never to make this test pass after an optimisation:
``python tests/trace/test_recorded_bytes_golden.py`` writes the file from the current code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
import re
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

from stepfork.trace import llm_request, record, trace_tool
from stepfork.trace.canonical import loads_json
from stepfork.trace.models import HASHED_FIELDS

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "data" / "recorded_bytes.jsonl"
FLOAT_MAX = sys.float_info.max
REFERENCE = HERE.parent / "interop" / "data" / "reference-bundles"


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: float


def reference_payloads() -> list[tuple[str, Any, str]]:
    """(where, payload, stored fingerprint) of every hashed field of the reference bundles' 52 events."""
    found: list[tuple[str, Any, str]] = []
    for bundle in sorted(REFERENCE.rglob("*.sftrace")):
        lines = (bundle / "events.jsonl").read_bytes().splitlines()
        for number, line in enumerate(lines, 1):
            event = loads_json(line)
            fields = zip(HASHED_FIELDS[event["type"]], ("input_hash", "output_hash"), strict=True)
            for field, hash_name in fields:
                if field is not None:
                    found.append((f"{bundle.name}:{number}:{field}", event[field], event[hash_name]))
    return found


def structured(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": 1000 + i,
            "sku": f"SKU-{i:05d}",
            "qty": i % 7,
            "price": round(12.5 + i * 0.37, 2),
            "weight_kg": 0.25 * (i % 5) + 0.1,
            "tags": ["blue", "sale"] if i % 2 else ["new"],
            "in_stock": i % 3 != 0,
            "dims": [1.5, 2.25, float(i % 4)],
            "note": None,
        }
        for i in range(count)
    ]


def nested(depth: int) -> Any:
    value: Any = {"leaf": 1.5e-05}
    for i in range(depth):
        value = {"z": i, "level": [value], "a": None} if i % 2 else [value, i]
    return value


def edge_payloads() -> list[Any]:
    """Values whose bytes the fast paths must leave as the slow paths wrote them."""
    return [
        structured(3),
        structured(40),
        {"zeta": 1, "alpha": {"y": [{"k2": 1, "k1": 2}], "b": None}},
        {"big": 2**70, "neg": -(2**64), "edge": [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]},
        {"logprob": float("-inf"), "up": float("inf"), "nan": float("nan"), "id": 2**70},
        {"outer": {"inner": {"blob": b"\xff\xfe\x00binary", "text": b"plain"}}},
        [1e-05, -1e-05, 1e-07, 1.5e-09, 9.99e-05, 1e-04, 5e-324, 1e16, 1e22, 0.0, -0.0, 0.1, FLOAT_MAX],
        {"floats": {"tiny": 3e-06, "list": [0.5, 2.5e-08]}, "ok": 12.25},
        {"lone": "a\ud800b", "\udfffkey": 1, "fine": "é😀\u2028"},
        {"$stepfork": "bytes", "value": "not a tag"},
        {"nested": {"$stepfork": "x"}, "keep": [1, 2]},
        (1, 2, "tuple"),
        {"set": {3, 1, 2}, "frozen": frozenset({"b", "a"})},
        {"when": dt.datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=dt.UTC), "day": dt.date(2026, 1, 2)},
        {"money": Decimal("12.3400"), "id": uuid.UUID(int=7), "colour": Colour.RED, "at": Point(1, 2.5)},
        {"api_key": "abc123", "headers": {"Authorization": "Bearer abcdefghijklmnop1234", "X-Api-Key": "k"}},
        {"note": "use sk-proj-abcdefghijklmnopqrstuvwx1234 here", "max_tokens": 5, "prompt_tokens": 3},
        {"sk-abcdefghijklmnopqrstuvwx1234": "a secret used as a key"},
        {"text": "null", "also": "0.00001 and 1e-5 and e-5 and type-1e-7", "n": None, "dollar": "$5"},
        {"AKIAIOSFODNN7EXAMPLE": 1, "url": "https://user:pass@example.com/x?sig=abc"},
        nested(60),
        {},
        [],
        [[[]], {"": ""}],
        "just a string",
        12345678901234567890123,
        -0.0,
        None,
        True,
    ]


@trace_tool
def echo(value: Any, limit: int = 10) -> Any:
    return value


@trace_tool
def fails(value: Any) -> Any:
    raise ValueError(f"could not handle {type(value).__name__}")


def record_all(path: Path) -> Path:
    """One recording of every payload: a tool's input and output and an LLM call's input."""
    run_input = {"zeta": "in", "alpha": {"y": 1, "b": 2}}
    with record("golden", output=path, run_input=run_input) as session:
        for _, payload, _ in reference_payloads():
            echo(payload)
            llm_request(model="m", provider="openai", input=payload, call=lambda p=payload: p)
        for payload in edge_payloads():
            echo(payload)
            echo(value=payload, limit=3)
            messages = {"messages": [{"role": "user", "content": payload}]}
            llm_request(model="gpt-x", input=messages, call=lambda: "ok")
        with contextlib.suppress(ValueError):
            fails({"password": "hunter22", "items": structured(2)})
        session.set_output({"done": True, "count": 2**65})
    return path


_EVT = re.compile(rb"evt_[0-9a-f]{32}")
_RUN = re.compile(rb"run_[0-9a-f]{32}")
_TIME = re.compile(rb'"timestamp":"[0-9T:.Z-]+"')
_DURATION = re.compile(rb'"duration_ms":[0-9]+')


def normalized(path: Path) -> bytes:
    """events.jsonl then redactions.json, ids numbered in order of appearance, times and durations fixed."""
    events, redactions = (path / "events.jsonl").read_bytes(), (path / "redactions.json").read_bytes()
    data = events + b"--- redactions.json\n" + redactions
    numbers: dict[bytes, bytes] = {}

    def number(match: re.Match[bytes]) -> bytes:
        return numbers.setdefault(match.group(), b"evt_%032d" % len(numbers))

    data = _EVT.sub(number, data)
    data = _RUN.sub(b"run_" + b"0" * 32, data)
    data = _TIME.sub(b'"timestamp":"T"', data)
    return _DURATION.sub(b'"duration_ms":0', data)


def test_a_recording_writes_the_same_bytes_as_before_the_hot_path_work(tmp_path: Path) -> None:
    got = normalized(record_all(tmp_path / "golden.sftrace"))
    expected = GOLDEN.read_bytes()
    if got != expected:  # name the first line that differs, not a wall of bytes
        for number, (a, b) in enumerate(zip(got.splitlines(), expected.splitlines(), strict=False), 1):
            assert a == b, f"line {number} differs"
    assert got == expected


def test_every_reference_payload_is_recorded_with_its_stored_fingerprint(tmp_path: Path) -> None:
    path = record_all(tmp_path / "golden.sftrace")
    events = [loads_json(line) for line in (path / "events.jsonl").read_bytes().splitlines()]
    results = [e["output_hash"] for e in events if e["type"] == "tool_result"]
    requests = [e["input_hash"] for e in events if e["type"] == "llm_request"]
    expected = reference_payloads()
    assert len({where.rsplit(":", 1)[0] for where, _, _ in expected}) == 52  # every reference event
    for index, (where, _, stored) in enumerate(expected):
        assert results[index] == stored, where  # the tool's output is the payload itself
        assert requests[index] == stored, where  # and so is the LLM call's input


if __name__ == "__main__":  # regenerate (a deliberate format change only; see the module docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_bytes(normalized(record_all(Path(tmp) / "golden.sftrace")))
    sys.stdout.write(f"wrote {GOLDEN}\n")
