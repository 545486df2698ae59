"""A call still running when the run ends (a daemon thread's request at exit, a pool task the agent did not
wait for) gets an outcome: the recorder writes it as failed with ``UnfinishedCallError``, so the bundle
stays valid (strict validation's ``unpaired_call`` refused it, and replay with it), and the thread, when its
call returns after the end, gets its own result untouched (docs/recording.md, "Calls still running when
the run ends")."""

from __future__ import annotations

import contextvars
import threading
from pathlib import Path
from typing import Any

from stepfork.trace import UnfinishedCallError, llm_request, record, trace_tool, validate_bundle
from stepfork.trace.canonical import loads_json

UNFINISHED = "stepfork.trace.errors.UnfinishedCallError"


def lines(path: Path) -> list[dict[str, Any]]:
    return [loads_json(line) for line in (path / "events.jsonl").read_bytes().splitlines()]


def test_a_tool_running_at_the_end_is_recorded_unfinished_and_its_thread_gets_its_own_result(
    tmp_path: Path,
) -> None:
    gate, started = threading.Event(), threading.Event()
    got: list[Any] = []

    @trace_tool
    def fetch_flags(url: str) -> dict[str, bool]:
        started.set()
        gate.wait()
        return {"beta": True}

    out = tmp_path / "run.sftrace"
    with record("agent", output=out) as session:
        worker = threading.Thread(
            target=contextvars.copy_context().run,
            args=(lambda: got.append(fetch_flags("/flags")),),
            daemon=True,
        )
        worker.start()
        started.wait()
        session.set_output("done")
    gate.set()
    worker.join()

    assert got == [{"beta": True}]  # the late result reaches its caller; recording never breaks the agent
    result = validate_bundle(out, strict=True)
    assert result.valid, result.issues
    events = lines(out)
    assert events[-1]["type"] == "run_end"  # nothing written after the end
    call = next(e for e in events if e["type"] == "tool_call")
    outcome = next(e for e in events if e["type"] == "tool_result")
    assert outcome["parent_id"] == call["id"]
    assert outcome["status"] == "error"
    message = "the run ended before this call returned"
    assert outcome["output"] == {"error_type": UNFINISHED, "message": message}
    error = next(e for e in events if e["type"] == "error")
    assert error["parent_id"] == outcome["id"]
    assert error["error_type"] == UNFINISHED
    assert events.index(outcome) < events.index(events[-1])


def test_an_llm_request_running_at_the_end_gets_an_error_under_it(tmp_path: Path) -> None:
    gate, started = threading.Event(), threading.Event()

    def reply() -> str:
        started.set()
        gate.wait()
        return "hello"

    def ask(messages: list[dict[str, str]]) -> str:
        return llm_request(model="gpt-4o-mini", provider="openai", input=messages, call=reply)  # type: ignore[no-any-return]

    out = tmp_path / "llm.sftrace"
    with record("agent", output=out):
        worker = threading.Thread(
            target=contextvars.copy_context().run,
            args=(ask, [{"role": "user", "content": "hi"}]),
            daemon=True,
        )
        worker.start()
        started.wait()
    gate.set()
    worker.join()
    assert validate_bundle(out, strict=True).valid
    events = lines(out)
    request = next(e for e in events if e["type"] == "llm_request")
    error = next(e for e in events if e["type"] == "error")
    assert error["parent_id"] == request["id"]
    assert error["error_type"] == UNFINISHED
    assert not [e for e in events if e["type"] == "llm_response"]


def test_a_thread_calling_in_a_loop_as_the_run_ends_leaves_a_valid_bundle_and_never_sees_an_error(
    tmp_path: Path,
) -> None:
    """The race at the end itself: a thread with the session's context calls a tool over and over while
    the session ends. Before, its call event could land without an outcome (the bundle refused by strict
    validation) or its result could meet the closed log (a RuntimeError raised into the agent)."""

    @trace_tool
    def heartbeat(n: int) -> int:
        return n

    def loop(stop: threading.Event, first: threading.Event, errors: list[BaseException]) -> None:
        n = 0
        try:
            while not stop.is_set():
                heartbeat(n)
                n += 1
                first.set()
        except BaseException as exc:  # anything here is recording breaking the agent
            errors.append(exc)
        finally:
            first.set()

    for attempt in range(12):
        out = tmp_path / f"race{attempt}.sftrace"
        stop, first = threading.Event(), threading.Event()
        errors: list[BaseException] = []
        with record("agent", output=out):
            worker = threading.Thread(
                target=contextvars.copy_context().run, args=(loop, stop, first, errors), daemon=True
            )
            worker.start()
            first.wait()
        stop.set()
        worker.join()
        assert errors == [], attempt
        result = validate_bundle(out, strict=True)
        assert result.valid, (attempt, result.issues)


def test_the_error_class_is_public_and_says_what_happened() -> None:
    error = UnfinishedCallError()
    assert error.code == "unfinished_call"
    assert str(error) == "the run ended before this call returned"
