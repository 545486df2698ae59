"""The tagged forms of docs/architecture.md, errors naming the path, decoding by annotation (C2-C4)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import inspect
import uuid
from decimal import Decimal

import pytest
from pydantic import BaseModel

from stepfork.trace.canonical import canonical_json
from stepfork.trace.errors import TraceSerializationError
from stepfork.trace.jsonable import MAX_DEPTH, from_jsonable, to_jsonable


class Status(enum.Enum):
    CONFIRMED = "confirmed"


class Priority(enum.IntEnum):
    HIGH = 1


class Booking(BaseModel):
    when: dt.datetime
    price: Decimal
    status: Status


@dataclasses.dataclass
class Point:
    x: int
    label: bytes


BOOKING = Booking(
    when=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), price=Decimal("10.50"), status=Status.CONFIRMED
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"\x00\xff", {"$stepfork": "bytes", "value": "AP8="}),
        (bytearray(b"ab"), {"$stepfork": "bytes", "value": "YWI="}),
        (dt.datetime(2026, 1, 2, 3, 4, 5), {"$stepfork": "datetime", "value": "2026-01-02T03:04:05"}),
        (dt.date(2026, 1, 2), {"$stepfork": "date", "value": "2026-01-02"}),
        (dt.time(3, 4, 5, 6), {"$stepfork": "time", "value": "03:04:05.000006"}),
        (dt.timedelta(days=-1, seconds=5, microseconds=7), {"$stepfork": "timedelta", "value": [-1, 5, 7]}),
        (Decimal("1.10"), {"$stepfork": "decimal", "value": "1.10"}),
        (uuid.UUID(int=1), {"$stepfork": "uuid", "value": "00000000-0000-0000-0000-000000000001"}),
        (Status.CONFIRMED, {"$stepfork": "enum", "value": "confirmed", "type": "Status"}),
        (Priority.HIGH, {"$stepfork": "enum", "value": 1, "type": "Priority"}),
        ({3, 1, "a"}, {"$stepfork": "set", "value": ["a", 1, 3]}),
        (frozenset({2}), {"$stepfork": "frozenset", "value": [2]}),
        ((1, [2]), {"$stepfork": "tuple", "value": [1, [2]]}),
        (
            Point(1, b"a"),
            {
                "$stepfork": "dataclass",
                "type": "Point",
                "value": {"x": 1, "label": {"$stepfork": "bytes", "value": "YQ=="}},
            },
        ),
        (float("nan"), {"$stepfork": "float", "value": "nan"}),
        (float("-inf"), {"$stepfork": "float", "value": "-inf"}),
        ("a\ud800", {"$stepfork": "str", "value": "Ye2ggA=="}),
        ({1: "x"}, {"$stepfork": "dict", "value": [[1, "x"]]}),
        ({"$stepfork": "x"}, {"$stepfork": "dict", "value": [["$stepfork", "x"]]}),
    ],
)
def test_each_non_json_value_has_its_documented_tagged_form(value, expected):
    assert to_jsonable(value) == expected


def test_set_members_are_sorted_by_their_canonical_bytes():
    encoded = to_jsonable({10, 9, "b", "a"})
    members = encoded["value"]
    assert [canonical_json(m) for m in members] == sorted(canonical_json(m) for m in members)


def test_a_pydantic_model_is_tagged_with_its_python_dump():
    encoded = to_jsonable(BOOKING)
    assert encoded["$stepfork"] == "model"
    assert encoded["type"] == "Booking"  # qualname only: the module depends on how the agent was started
    assert encoded["value"]["price"] == {"$stepfork": "decimal", "value": "10.50"}


def test_plain_json_comes_back_as_the_same_object_and_big_ints_stay_ints():
    value = {"a": [1, 2.5, None, True, "x", {"b": 2**100}]}
    assert to_jsonable(value) is value


def test_scoring_tool_output_with_minus_inf_and_a_huge_id_round_trips_exactly():
    # CASES C2: never null, never a float for the integer.
    value = {"logprob": float("-inf"), "id": 2**70}
    decoded = from_jsonable(to_jsonable(value))
    assert decoded["logprob"] == float("-inf")
    assert decoded["id"] == 2**70
    assert type(decoded["id"]) is int


def test_non_utf8_bytes_two_levels_deep_round_trip_as_bytes():
    # CASES C3
    value = {"download": {"body": b"\x89PNG\xff\xfe"}}
    assert from_jsonable(to_jsonable(value)) == value


def test_a_cycle_raises_naming_the_path_of_the_repeat():
    value: dict[str, object] = {"a": [1, {}]}
    value["a"][1]["back"] = value  # type: ignore[index]
    with pytest.raises(TraceSerializationError) as info:
        to_jsonable(value)
    assert (info.value.code, info.value.path) == ("cycle", "$.a[1].back")


def test_an_unsupported_type_raises_naming_its_path_from_the_given_root():
    with pytest.raises(TraceSerializationError) as info:
        to_jsonable({"x y": [object()]}, path="$.input")
    assert (info.value.code, info.value.path) == ("unsupported_type", '$.input["x y"][0]')


def test_nesting_deeper_than_max_depth_raises_too_deep():
    value: list[object] = []
    for _ in range(MAX_DEPTH + 1):
        value = [value]
    with pytest.raises(TraceSerializationError) as info:
        to_jsonable(value)
    assert info.value.code == "too_deep"


def test_nesting_at_max_depth_is_accepted_and_canonical():
    value: object = 1
    for _ in range(MAX_DEPTH):
        value = {"$stepfork": value}  # the deepest tag form: 3 JSON levels per Python level
    encoded = to_jsonable(value)
    assert canonical_json(encoded).startswith(b"{")
    assert from_jsonable(encoded) == value  # accepted whole, not cut at the limit


def test_a_returned_booking_is_a_booking_again_with_its_field_types():
    # CASES C4: the annotation turns the recorded JSON back into the model.
    restored = from_jsonable(to_jsonable(BOOKING), Booking)
    assert isinstance(restored, Booking)
    assert restored == BOOKING
    assert type(restored.price) is Decimal
    assert restored.status is Status.CONFIRMED


def test_containers_of_models_and_decimals_validate_through_the_annotation():
    assert from_jsonable(to_jsonable([BOOKING]), list[Booking]) == [BOOKING]
    assert from_jsonable(to_jsonable({"a": Decimal("1.5")}), dict[str, Decimal]) == {"a": Decimal("1.5")}
    assert from_jsonable(to_jsonable(Point(1, b"z")), Point) == Point(1, b"z")
    assert from_jsonable(to_jsonable(b"\xff"), bytes) == b"\xff"


def test_without_an_annotation_model_and_enum_tags_decode_to_their_json_value():
    decoded = from_jsonable(to_jsonable(BOOKING))
    assert decoded == {"when": BOOKING.when, "price": Decimal("10.50"), "status": "confirmed"}
    assert from_jsonable(to_jsonable(BOOKING), inspect.Signature.empty) == decoded


def test_a_value_that_does_not_fit_the_annotation_names_the_first_bad_field():
    with pytest.raises(TraceSerializationError) as info:
        from_jsonable({"when": "not a date", "price": "1", "status": "confirmed"}, Booking)
    assert (info.value.code, info.value.path) == ("annotation_mismatch", "$.when")


@pytest.mark.parametrize(
    ("value", "code", "path"),
    [
        ({"a": {"$stepfork": "pickle", "value": "x"}}, "unknown_tag", "$.a"),
        ({"a": [{"$stepfork": "bytes", "value": "***"}]}, "invalid_tag", "$.a[0]"),
        ({"$stepfork": "bytes"}, "invalid_tag", "$"),
        ({"$stepfork": "timedelta", "value": "1 day"}, "invalid_tag", "$"),
    ],
)
def test_malformed_tags_raise_naming_their_path(value, code, path):
    with pytest.raises(TraceSerializationError) as info:
        from_jsonable(value)
    assert (info.value.code, info.value.path) == (code, path)


class Opaque:
    pass


@pytest.mark.parametrize("annotation", [Opaque, list[Opaque], "Undefined"])
def test_an_annotation_pydantic_cannot_handle_is_reported_as_unsupported(annotation):
    with pytest.raises(TraceSerializationError) as info:
        from_jsonable(1, annotation)
    assert info.value.code == "annotation_unsupported"
