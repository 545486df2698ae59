"""fork() as a library call (issue 5, "fork"): frozen before the step, live after, lineage in fork.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepfork.analysis import ForkError, diff_traces, fork
from stepfork.analysis.forking import read_fork_info
from stepfork.trace import LLMOutput, Trace, llm_request, record, trace_tool, verify_bundle_integrity
from stepfork.trace.integrity import write_integrity

from ..conftest import as_legacy_bundle

RAN: list[str] = []
PRICE = {"value": 320}


@trace_tool
def quote(destination: str) -> dict:
    RAN.append("quote")
    return {"price": PRICE["value"]}


@trace_tool
def book(price: int) -> str:
    RAN.append("book")
    return f"booked at {price}"


def agent() -> dict:
    offer = quote("Lisbon")
    decision = llm_request(model="m", input=offer, call=lambda: {"book": offer["price"] < 400})
    return {"booked": book(offer["price"]) if decision["book"] else None}


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    out = tmp_path / "trip.sftrace"
    with record("trip", output=out) as session:
        session.set_output(agent())
    RAN.clear()
    return out


def test_calls_before_the_step_are_frozen_and_later_ones_live(recorded: Path, tmp_path: Path) -> None:
    PRICE["value"] = 999  # a live quote would now refuse to book
    try:
        result = fork(
            recorded, step=3, entrypoint=agent, output=tmp_path / "f.sftrace", allow_live_tools=["book"]
        )
    finally:
        PRICE["value"] = 320
    assert RAN == ["book"]  # quote (step 1) was served from the recording
    assert (result.status, result.frozen_calls, result.live_calls) == ("completed", 1, 2)
    assert result.result == {"booked": "booked at 320"}
    assert diff_traces(recorded, result.output).equivalent


def test_an_override_replaces_a_recorded_output_and_is_kept_in_the_lineage(
    recorded: Path, tmp_path: Path
) -> None:
    result = fork(
        recorded, step=3, entrypoint=agent, output=tmp_path / "f.sftrace", overrides={2: {"price": 450}}
    )
    assert result.result == {"booked": None}
    info = read_fork_info(result.output)
    assert info is not None
    assert (info["fork_step"], info["overrides"]) == (3, [{"step": 2, "output": {"price": 450}}])
    assert verify_bundle_integrity(result.output).status == "verified"
    assert Trace.load(result.output).events[2].output == {"price": 450}


def test_a_tool_not_allowed_live_is_refused_before_its_body(recorded: Path, tmp_path: Path) -> None:
    result = fork(recorded, step=5, entrypoint=agent, output=tmp_path / "f.sftrace")
    assert result.status == "failed"
    assert result.exit_code == 1
    assert "ReplayPolicyError" in (result.error or "")
    assert "book" not in RAN


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [({"step": 42}, "invalid_step"), ({"step": 3, "overrides": {5: 1}}, "invalid_override")],
)
def test_invalid_input_raises_a_coded_error(recorded: Path, tmp_path: Path, kwargs: dict, code: str) -> None:
    with pytest.raises(ForkError) as info:
        fork(recorded, entrypoint=agent, output=tmp_path / "f.sftrace", **kwargs)
    assert info.value.code == code


def test_a_bundle_with_no_events_is_refused_not_an_internal_error(recorded: Path, tmp_path: Path) -> None:
    # found by the reliability soak: events.jsonl truncated to nothing still loads (0 events); with its
    # manifest's count of events and its integrity.json written again, so that neither integrity refusal
    # answers first (tests/trace/test_verified_loading.py). A finished run without run_start or run_end
    # fails strict validation, which the loader refuses, as export does
    (recorded / "events.jsonl").write_bytes(b"")
    manifest = json.loads((recorded / "manifest.json").read_text())
    manifest["totals"] = {**manifest["totals"], "events": 0, "llm_calls": 0, "tool_calls": 0}
    (recorded / "manifest.json").write_text(json.dumps(manifest))
    write_integrity(recorded)
    with pytest.raises(ForkError) as info:
        fork(recorded, step=0, entrypoint=agent, output=tmp_path / "f.sftrace")
    assert info.value.code == "integrity_mismatch"
    assert "fails strict validation (run_end_position, run_start_count)" in str(info.value)


def test_a_run_that_cannot_be_recorded_is_a_coded_error_not_an_internal_one(
    recorded: Path, tmp_path: Path
) -> None:
    # found by the reliability soak: a run_start input nested deeper than to_jsonable allows (a damaged
    # bundle) stops the forked recording before it writes a bundle
    import json

    events = (recorded / "events.jsonl").read_text().splitlines()
    first = json.loads(events[0])
    deep: object = 1
    for _ in range(200):
        deep = [deep]
    first["input"] = deep
    first["input_hash"] = None  # no stored hash to refuse it by: the loader accepts it (a legacy bundle)
    events[0] = json.dumps(first)
    (recorded / "events.jsonl").write_text("\n".join(events) + "\n")
    as_legacy_bundle(recorded)  # the damage changed the bytes; no integrity claim remains
    with pytest.raises(ForkError) as info:
        fork(recorded, step=3, entrypoint=agent, output=tmp_path / "f.sftrace")
    assert info.value.code == "record_failed"


def test_result_renders_three_ways(recorded: Path, tmp_path: Path) -> None:
    result = fork(
        recorded, step=3, entrypoint=agent, output=tmp_path / "f.sftrace", overrides={2: {"price": 450}}
    )
    assert "Fork step:    3" in str(result)
    assert "<table>" in result._repr_html_()
    assert result.to_dict()["overrides"] == [2]


@trace_tool
def rate(city: str) -> int:
    RAN.append(f"rate {city}")
    return len(city)


def pool_agent() -> dict:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:  # the agent's own fan-out, in its context
        rates = list(pool.map(rate, ["Lisbon", "Porto"]))
    return {"booked": book(sum(rates))}


def test_a_thread_pools_calls_before_the_step_are_frozen_like_the_agents(tmp_path: Path) -> None:
    recorded = tmp_path / "pool.sftrace"
    with record("pool", output=recorded) as session:
        session.set_output(pool_agent())
    RAN.clear()
    book_step = next(e.step for e in Trace.load(recorded).events if getattr(e, "name", None) == "book")
    output = tmp_path / "f.sftrace"
    result = fork(recorded, step=book_step, entrypoint=pool_agent, output=output, allow_live_tools=["book"])
    assert (result.status, result.error) == ("completed", None)
    assert RAN == ["book"]  # both rates were served from the recording
    assert (result.frozen_calls, result.live_calls) == (2, 1)


def priced_agent() -> dict:
    """Two LLM calls reporting their usage (``LLMOutput``), as an agent's own client wrapper does."""
    first = llm_request(
        model="m-1",
        provider="local",
        input={"q": "plan"},
        call=lambda: LLMOutput("plan", prompt_tokens=12, completion_tokens=3, total_tokens=15, cost_usd=2e-3),
    )
    second = llm_request(
        model="m-1",
        provider="local",
        input={"q": first},
        call=lambda: LLMOutput("done", prompt_tokens=20, completion_tokens=4, total_tokens=24, cost_usd=3e-3),
    )
    return {"first": first, "second": second}


def _usage(bundle: Path) -> list[tuple[object, ...]]:
    return [
        (e.model, e.prompt_tokens, e.completion_tokens, e.total_tokens, e.cost_usd)
        for e in Trace.load(bundle).events
        if e.type == "llm_response"
    ]


def test_frozen_llm_calls_keep_their_recorded_usage_in_the_forked_bundle(tmp_path: Path) -> None:
    recorded = tmp_path / "priced.sftrace"
    with record("priced", output=recorded) as session:
        session.set_output(priced_agent())
    second = [e.step for e in Trace.load(recorded).events if e.type == "llm_request"][1]
    result = fork(recorded, step=second, entrypoint=priced_agent, output=tmp_path / "f.sftrace")
    assert (result.status, result.frozen_calls, result.live_calls) == ("completed", 1, 1)
    assert result.result == {"first": "plan", "second": "done"}  # the caller gets the value, not LLMOutput
    assert _usage(result.output) == _usage(recorded) == [("m-1", 12, 3, 15, 0.002), ("m-1", 20, 4, 24, 0.003)]
    requests = [e for e in Trace.load(result.output).events if e.type == "llm_request"]
    assert [(e.provider, e.model) for e in requests] == [("local", "m-1")] * 2
    assert Trace.load(result.output).manifest.totals.cost_usd == pytest.approx(0.005)
    # an overridden output is not what the model answered: it has no recorded usage
    changed = fork(
        recorded, step=second, entrypoint=priced_agent, output=tmp_path / "o.sftrace", overrides={1: "other"}
    )
    assert changed.result == {"first": "other", "second": "done"}
    assert _usage(changed.output)[0] == ("m-1", None, None, None, None)


def fanned_agent() -> list[str]:
    """Two LLM calls at once from a thread pool, each reporting its own usage."""
    from concurrent.futures import ThreadPoolExecutor

    def ask(n: int) -> str:
        return llm_request(  # type: ignore[no-any-return]
            model="m-1",
            provider="local",
            input={"q": n},
            call=lambda: LLMOutput(f"a{n}", prompt_tokens=10 * n, completion_tokens=n, total_tokens=11 * n),
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(ask, [1, 2]))


def _usage_by_answer(events: object) -> dict[object, tuple[object, object]]:
    return {e.output: (e.prompt_tokens, e.total_tokens) for e in events if e.type == "llm_response"}  # type: ignore[attr-defined]


def test_concurrent_frozen_llm_calls_each_keep_their_own_usage(tmp_path: Path) -> None:
    recorded = tmp_path / "fanned.sftrace"
    with record("fanned", output=recorded) as session:
        session.set_output(fanned_agent())
    events = Trace.load(recorded).events
    by_answer = _usage_by_answer(events)
    last = max(e.step for e in events)
    for attempt in range(5):
        result = fork(recorded, step=last, entrypoint=fanned_agent, output=tmp_path / f"f{attempt}.sftrace")
        assert result.result == ["a1", "a2"]
        forked = Trace.load(result.output).events
        assert _usage_by_answer(forked) == by_answer
