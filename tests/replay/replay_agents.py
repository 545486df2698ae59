"""Small instrumented agents used by the replay tests (the seed examples of the spec)."""

from __future__ import annotations

from typing import Any

from stepfork.trace import allm_request, llm_request, trace_tool

CALLS: list[str] = []  # names of tool bodies that really ran


@trace_tool
def search_flights(city: str, limit: int = 10) -> list[str]:
    CALLS.append("search_flights")
    return [f"{city}-A", f"{city}-B"][:limit]


@trace_tool
def book_flight(flight: str) -> dict[str, Any]:
    CALLS.append("book_flight")
    return {"booked": flight}


@trace_tool
def charge_card(amount: int) -> dict[str, Any]:
    CALLS.append("charge_card")
    return {"charged": amount}


def pick(flights: list[str], *, content: str | None = None, model: str = "gpt-test") -> dict[str, Any]:
    def call() -> dict[str, Any]:
        CALLS.append("llm")
        return {"pick": flights[-1]}

    return llm_request(  # type: ignore[no-any-return]
        model=model,
        provider="openai",
        input={"messages": [{"role": "user", "content": content or ",".join(flights)}]},
        call=call,
    )


def booking_agent(city: str = "Paris", *, content: str | None = None) -> dict[str, Any]:
    flights = search_flights(city)
    choice = pick(flights, content=content)
    return book_flight(choice["pick"])


@trace_tool
async def asearch_flights(city: str) -> list[str]:
    CALLS.append("asearch_flights")
    return [f"{city}-A", f"{city}-B"]


@trace_tool
async def abook_flight(flight: str) -> dict[str, Any]:
    CALLS.append("abook_flight")
    return {"booked": flight}


async def async_booking_agent(city: str = "Paris") -> dict[str, Any]:
    flights = await asearch_flights(city)

    async def call() -> dict[str, Any]:
        CALLS.append("allm")
        return {"pick": flights[0]}

    choice = await allm_request(
        model="gpt-test",
        provider="openai",
        input={"messages": [{"role": "user", "content": ",".join(flights)}]},
        call=call,
    )
    return await abook_flight(choice["pick"])
