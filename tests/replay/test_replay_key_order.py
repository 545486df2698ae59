"""Frozen replay serves recorded values exactly: dict key order kept, tag "type" independent of __main__.

Two fidelity bugs: payloads were written with sorted keys, so ``json.dumps(tool_output)`` in a prompt
changed on replay; and the informational ``"type"`` of a tagged model/dataclass/enum held the module, so
an agent recorded as ``python agent.py`` (``__main__.Report``) diverged when replayed by import
(docs/format.md, docs/values.md "Tagged forms").
"""

from __future__ import annotations

import importlib
import json
import runpy
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepfork
from stepfork.trace import Trace

CALLS: list[str] = []


@stepfork.trace_tool
def fetch_account(user: str) -> dict[str, Any]:
    CALLS.append("fetch_account")
    return {"zeta": 1, "alpha": {"y": [{"k2": 1, "k1": 2}], "b": None}, "name": user}


@stepfork.trace_tool
def fetch_untyped(user: str):  # type: ignore[no-untyped-def]  # no return annotation: JSON as decoded
    CALLS.append("fetch_untyped")
    return {"zeta": user, "alpha": 2}


def prompt_agent() -> dict[str, Any]:
    """Builds its prompt from the tool outputs' JSON text, as many agents do."""
    account = fetch_account("ada")
    extra = fetch_untyped("ada")
    prompt = json.dumps(account) + json.dumps(extra)

    def call() -> dict[str, Any]:
        CALLS.append("llm")
        return {"zeta": "done", "alpha": {"y": 1, "b": 2}}

    reply = stepfork.llm_request(
        model="m", provider="openai", input={"messages": [{"role": "user", "content": prompt}]}, call=call
    )
    return {"prompt": prompt, "reply": reply, "account": account, "extra": extra}


def record(path: Path) -> dict[str, Any]:
    with stepfork.record("prompt", output=path) as session:
        result = prompt_agent()
        session.set_output(result)
    return result


def test_an_agent_putting_json_dumps_of_tool_outputs_in_its_prompt_replays_frozen(tmp_path: Path) -> None:
    path = tmp_path / "prompt.sftrace"
    recorded = record(path)
    CALLS.clear()
    with stepfork.ReplaySession.from_trace(path) as replay:
        replayed = prompt_agent()
        replay.verify_complete()
    assert replay.divergence is None
    assert CALLS == []
    assert replayed["prompt"] == recorded["prompt"]
    assert json.dumps(replayed) == json.dumps(recorded)  # every dict, in its recorded key order


def test_replayed_tool_and_llm_outputs_keep_their_recorded_key_order(tmp_path: Path) -> None:
    path = tmp_path / "prompt.sftrace"
    record(path)
    with stepfork.ReplaySession.from_trace(path):
        replayed = prompt_agent()
    assert list(replayed["account"]) == ["zeta", "alpha", "name"]
    assert list(replayed["account"]["alpha"]) == ["y", "b"]
    assert list(replayed["account"]["alpha"]["y"][0]) == ["k2", "k1"]
    assert list(replayed["extra"]) == ["zeta", "alpha"]
    assert list(replayed["reply"]) == ["zeta", "alpha"]
    assert list(replayed["reply"]["alpha"]) == ["y", "b"]
    assert list(Trace.load(path).events[-1].output) == ["prompt", "reply", "account", "extra"]  # type: ignore[union-attr]


@stepfork.trace_tool
def search(filters: dict[str, Any]) -> list[str]:
    CALLS.append("search")
    return [f"{key}={value}" for key, value in filters.items()]


def test_a_live_input_in_another_key_order_still_matches_the_recorded_call(tmp_path: Path) -> None:
    path = tmp_path / "c1.sftrace"
    with stepfork.record("c1", output=path):
        recorded = search({"lang": "en", "year": 2024})
    assert list(Trace.load(path).events[1].input["filters"]) == ["lang", "year"]  # type: ignore[union-attr]
    CALLS.clear()
    with stepfork.ReplaySession.from_trace(path) as replay:
        replayed = search({"year": 2024, "lang": "en"})  # CASES C1: keys in the other order
        replay.verify_complete()
    assert replay.divergence is None
    assert CALLS == []
    assert replayed == recorded == ["lang=en", "year=2024"]


AGENT_SOURCE = '''
    """An agent passing a pydantic model, a dataclass and an enum to a tool (the tool input is hashed)."""
    import dataclasses
    import enum
    import sys

    from pydantic import BaseModel

    import stepfork


    class Level(enum.Enum):
        HIGH = "high"


    @dataclasses.dataclass
    class Window:
        start: int
        end: int


    class Report(BaseModel):
        title: str
        level: Level


    @stepfork.trace_tool
    def file_report(report: Report, window: Window, level: Level) -> dict:
        return {"filed": report.title, "span": window.end - window.start}


    def main() -> dict:
        return file_report(Report(title="outage", level=Level.HIGH), Window(1, 4), Level.HIGH)


    if __name__ == "__main__":
        with stepfork.record("tags", output=sys.argv[1]) as session:
            session.set_output(main())
'''


@pytest.fixture
def agent_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    name = "sf_tagged_agent"
    source = tmp_path / f"{name}.py"
    source.write_text(textwrap.dedent(AGENT_SOURCE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield source, name
    sys.modules.pop(name, None)


def test_an_agent_recorded_as_main_replays_by_import_without_divergence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent_module: tuple[Path, str]
) -> None:
    source, name = agent_module
    bundle = tmp_path / "tags.sftrace"
    monkeypatch.setattr(sys, "argv", [str(source), str(bundle)])
    runpy.run_path(str(source), run_name="__main__")  # `python agent.py`: its classes live in __main__

    call = next(e for e in Trace.load(bundle).events if e.type.value == "tool_call")
    assert call.input["report"]["type"] == "Report"  # type: ignore[union-attr]
    assert call.input["window"]["type"] == "Window"  # type: ignore[union-attr]
    assert call.input["level"]["type"] == "Level"  # type: ignore[union-attr]
    assert "__main__" not in (bundle / "events.jsonl").read_text("utf-8")

    agent = importlib.import_module(name)  # replay by import: the classes live in sf_tagged_agent
    assert agent.Report.__module__ == name
    with stepfork.ReplaySession.from_trace(bundle) as replay:
        result = agent.main()
        replay.verify_complete()
    assert replay.divergence is None
    assert result == {"filed": "outage", "span": 3}
