"""Where Stepfork answers an earlier test differently on purpose (docs/decisions.md, "The earlier
implementation's own tests"), the intent of that test, kept: the documented answer, and the way to get the
earlier behaviour where there is one (issue 32)."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import pytest

from stepfork import ReplaySession, Trace, record, trace_tool
from stepfork.export import generate_pytest_source
from stepfork.replay import ReplayMismatchError, ReplayPolicyError
from stepfork.trace import TraceStorageError, load_trace, to_json_value, validate_trace
from stepfork.trace.models import RunEnd, RunStart, RunStatus, ToolCall, ToolResult

from ..e2e.conftest import run_cli

SENT: list[str] = []


@trace_tool
async def weather(city: str) -> dict:
    await asyncio.sleep(0)
    return {"city": city}


@trace_tool
def send_email(to: str) -> str:
    SENT.append(to)
    return "sent"


def test_concurrent_calls_replay_in_any_order_by_default_and_in_order_with_strict(tmp_path: Path) -> None:
    bundle = tmp_path / "gather.sftrace"

    async def agent(first: str, second: str) -> None:
        await asyncio.gather(weather(first), weather(second))

    async def recorded() -> None:
        async with record("gather", output=bundle):
            await agent("NYC", "SF")

    async def replayed(ordering: str) -> None:
        async with ReplaySession.from_trace(bundle, ordering=ordering) as replay:
            await asyncio.gather(weather("SF"), weather("NYC"))  # started in the other order
        replay.verify_complete()

    asyncio.run(recorded())
    asyncio.run(replayed("auto"))  # the recording proves the calls overlapped (issue 12)
    with pytest.raises(ReplayMismatchError):
        asyncio.run(replayed("strict"))  # the earlier rule: the recorded order, always


def test_live_mode_denies_a_tool_not_named_and_runs_a_named_one(tmp_path: Path) -> None:
    bundle = tmp_path / "email.sftrace"
    with record("mailer", output=bundle):
        send_email("a@example.com")
    SENT.clear()
    with (
        ReplaySession.from_trace(bundle, mode="live"),
        pytest.raises(ReplayPolicyError, match="authorization"),
    ):
        send_email("a@example.com")
    assert SENT == []  # denied before the body ran (spec replay.txt: live mode denies tools by default)
    with ReplaySession.from_trace(bundle, mode="live", allow_live_tools={"send_email"}) as replay:
        assert send_email("a@example.com") == "sent"
    replay.verify_complete()
    assert SENT == ["a@example.com"]


def test_values_without_a_plain_json_form_are_tagged_never_written_as_invalid_json() -> None:
    assert to_json_value(float("nan")) == {"$stepfork": "float", "value": "nan"}
    assert to_json_value({1: "a"}) == {"$stepfork": "dict", "value": [[1, "a"]]}


def test_exported_name_sets_are_sorted_lists_read_back_as_literals(tmp_path: Path) -> None:
    source = generate_pytest_source(
        trace_path=tmp_path / "run.sftrace", output_path=tmp_path / "test_run.py", entrypoint="agent:run",
        mode="live", allow_live_tools={"b_tool", "a_tool"},
    )  # fmt: skip
    line = next(line for line in source.splitlines() if line.startswith("ALLOW_LIVE_TOOLS = "))
    assert ast.literal_eval(line.split(" = ", 1)[1]) == ["a_tool", "b_tool"]


def test_strict_validation_wants_step_equal_to_position_partial_does_not() -> None:
    trace = Trace(agent_name="a")
    start = trace.add(RunStart())
    call = trace.add(ToolCall(name="t", input={}, parent_id=start.id))
    result = trace.add(ToolResult(name="t", output={}, parent_id=call.id))
    trace.add(RunEnd(run_status=RunStatus.COMPLETED, parent_id=result.id))
    trace.events[2] = trace.events[2].model_copy(update={"step": 10})
    trace.events[3] = trace.events[3].model_copy(update={"step": 11})
    assert "step_mismatch" in [issue.code for issue in validate_trace(trace).issues]
    assert validate_trace(trace, strict=False).valid  # the earlier rule: non-decreasing steps


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda b: (b / "manifest.json").write_text("[]", encoding="utf-8"), "invalid_manifest"),
        (lambda b: (b / "events.jsonl").write_text("\n", encoding="utf-8"), "invalid_json"),
        (
            lambda b: (b / "redactions.json").write_text(
                json.dumps({"schema_version": "9.9", "entries": []}), encoding="utf-8"
            ),
            "unsupported_schema",
        ),
    ],
    ids=["manifest-not-object", "blank-line", "redactions-schema"],
)
def test_storage_errors_keep_their_codes(tmp_path: Path, damage: object, code: str) -> None:
    bundle = Trace(agent_name="a").save(tmp_path / "b.sftrace")
    (bundle / "integrity.json").unlink()  # a legacy bundle: read, not refused by integrity first
    damage(bundle)  # type: ignore[operator]
    with pytest.raises(TraceStorageError) as info:
        load_trace(bundle)
    assert info.value.code == code


def _bundle(directory: Path, name: str, status: str) -> Path:
    trace = Trace(agent_name="demo")
    start = trace.add(RunStart())
    call = trace.add(ToolCall(name="lookup", input={"q": name}, parent_id=start.id))
    result = trace.add(ToolResult(name="lookup", output={"status": status}, parent_id=call.id))
    trace.add(RunEnd(run_status=RunStatus.COMPLETED, output={"status": status}, parent_id=result.id))
    return trace.save(directory / f"{name}.sftrace", status=RunStatus.COMPLETED)


def test_diff_says_behavior_equivalent_and_keeps_the_earlier_json_counts(tmp_path: Path) -> None:
    one, other = _bundle(tmp_path, "a", "ok"), _bundle(tmp_path, "c", "late")
    equal = run_cli("diff", one, one)
    assert equal.code == 0
    assert equal.out.rstrip().endswith("Result: BEHAVIOR EQUIVALENT")
    changed = run_cli("diff", one, other, "--json")
    assert changed.code == 1
    data = json.loads(changed.out)
    assert data["equivalent"] is False
    assert data["changed"] >= 1
    assert {k: data[k] for k in ("changed", "added", "removed", "unchanged")} == {
        k: data["counts"][k] for k in ("changed", "added", "removed", "unchanged")
    }


def test_export_of_a_run_with_no_output_says_expectation_none(tmp_path: Path) -> None:
    trace = Trace(agent_name="failing")
    trace.add(RunStart())
    trace.add(RunEnd(run_status=RunStatus.COMPLETED))
    bundle = trace.save(tmp_path / "empty.sftrace", status=RunStatus.COMPLETED)
    result = run_cli("export", bundle, "--pytest", "--entrypoint", "agent:run", "-o", tmp_path / "test_e.py")
    assert result.code == 0, result.text
    assert "Expectation: none" in result.out.splitlines()
