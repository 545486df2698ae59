"""Type-faithful frozen replay (C4, C3): recorded outputs come back as the tool's declared type."""

from __future__ import annotations

import dataclasses
import enum
from datetime import UTC, datetime
from decimal import Decimal

import pydantic
import pytest

from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import trace_tool


class Cabin(enum.Enum):
    ECONOMY = "economy"
    BUSINESS = "business"


class Booking(pydantic.BaseModel):
    ref: str
    departs: datetime
    price: Decimal
    cabin: Cabin


BOOKING = Booking(
    ref="B1", departs=datetime(2026, 5, 1, 9, 30, tzinfo=UTC), price=Decimal("199.90"), cabin=Cabin.BUSINESS
)


@dataclasses.dataclass
class Receipt:
    ref: str
    total: int


@trace_tool(name="book")
def book(ref: str) -> Booking:
    return BOOKING


@trace_tool(name="download")
def download(url: str) -> dict[str, dict[str, bytes]]:
    return {"outer": {"inner": b"\xff\x00\xfe binary"}}


@trace_tool(name="raw")
def raw(url: str):  # no annotation: the documented JSON form comes back
    return {"when": datetime(2026, 1, 1, tzinfo=UTC), "n": 2**70}


def test_c4_a_tool_annotated_with_a_model_gets_the_model_back(recorder) -> None:
    path = recorder(lambda: book("B1"))
    with ReplaySession.from_trace(path) as replay:
        result = book("B1")
        replay.verify_complete()
    assert isinstance(result, Booking)
    assert result == BOOKING
    assert isinstance(result.price, Decimal)
    assert result.cabin is Cabin.BUSINESS


def test_c3_bytes_nested_two_levels_deep_come_back_as_bytes(recorder) -> None:
    path = recorder(lambda: download("u"))
    with ReplaySession.from_trace(path):
        assert download("u") == {"outer": {"inner": b"\xff\x00\xfe binary"}}


def test_without_annotation_tags_are_decoded_and_big_ints_stay_exact(recorder) -> None:
    path = recorder(lambda: raw("u"))
    with ReplaySession.from_trace(path):
        result = raw("u")
    assert result["n"] == 2**70
    assert result["when"] == datetime(2026, 1, 1, tzinfo=UTC)


def test_an_output_that_no_longer_fits_the_annotation_names_the_tool_and_path(recorder) -> None:
    path = recorder(lambda: book("B1"))

    @trace_tool(name="book")
    def book_v2(ref: str) -> Receipt:
        raise AssertionError("not run")

    with ReplaySession.from_trace(path) as replay, pytest.raises(ReplayMismatchError) as info:
        book_v2("B1")
    assert info.value.code == "output_annotation_mismatch"
    assert info.value.path is not None
    assert "'book'" in str(info.value)
    assert replay.divergence is info.value
