"""Issue 12, "Context arguments": framework context parameters stay out of the recorded and matched input."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

import pytest

from stepfork.replay import ReplaySession
from stepfork.trace import record, trace_tool
from stepfork.trace.canonical import loads_json


def _inputs(path: Path) -> list[Any]:
    events = [loads_json(line) for line in (path / "events.jsonl").read_bytes().splitlines()]
    return [e["input"] for e in events if e["type"] == "tool_call"]


class Session:
    """Something with no JSON form, as a framework context holds (a client, a function)."""

    def __init__(self) -> None:
        self.client = lambda: None


@trace_tool(exclude={"ctx"})
def lookup(ctx: Session, key: str, limit: int = 3) -> str:
    return f"{key}:{limit}"


def test_a_named_parameter_is_left_out_and_listed(tmp_path: Path) -> None:
    path = tmp_path / "named.sftrace"
    with record("ctx", output=path):
        assert lookup(Session(), "a") == "a:3"
    assert _inputs(path) == [{"key": "a", "limit": 3, "$excluded": ["ctx"]}]
    with ReplaySession.from_trace(path) as session:  # another context object: still the same call
        assert lookup(Session(), "a") == "a:3"
    session.verify_complete()


def test_exclude_must_name_parameters() -> None:
    with pytest.raises(TypeError, match="collection"):
        trace_tool(exclude="ctx")
    with pytest.raises(TypeError, match="strings"):
        trace_tool(exclude={1})


def test_pydantic_ai_run_context_is_left_out_without_being_named(tmp_path: Path) -> None:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    @trace_tool
    def where(ctx: RunContext[Session], city: str) -> str:
        return city.upper()

    context = RunContext(deps=Session(), model=TestModel(), usage=RunUsage())
    path = tmp_path / "pai.sftrace"
    with record("pai", output=path):
        where(context, "oslo")
    assert _inputs(path) == [{"city": "oslo", "$excluded": ["ctx"]}]


def test_langchain_and_langgraph_context_parameters_are_left_out(tmp_path: Path) -> None:
    from langchain_core.callbacks.manager import CallbackManagerForToolRun
    from langchain_core.runnables import RunnableConfig
    from langgraph.prebuilt import InjectedState, InjectedStore
    from langgraph.store.memory import InMemoryStore

    @trace_tool
    def act(
        query: str,
        config: RunnableConfig,
        state: Annotated[dict[str, Any], InjectedState],
        store: Annotated[Any, InjectedStore()],
        run_manager: Any = None,
    ) -> str:
        return query

    path = tmp_path / "lc.sftrace"
    manager = CallbackManagerForToolRun(run_id=uuid.UUID(int=1), handlers=[], inheritable_handlers=[])
    with record("lc", output=path):
        act("q", {"configurable": {"thread_id": "1"}}, {"messages": []}, InMemoryStore(), manager)
    assert _inputs(path) == [{"query": "q", "$excluded": ["config", "run_manager", "state", "store"]}]


def test_plain_arguments_are_untouched(tmp_path: Path) -> None:
    @trace_tool
    def plain(a: int, b: dict[str, Any]) -> int:
        return a

    path = tmp_path / "plain.sftrace"
    with record("plain", output=path):
        plain(1, {"x": 1})
    assert _inputs(path) == [{"a": 1, "b": {"x": 1}}]


def test_importing_stepfork_trace_imports_no_framework() -> None:
    code = (
        "import sys, stepfork.trace, stepfork.trace.context_args;"
        "from stepfork.trace import trace_tool, record;"
        "bad = [m for m in ('pydantic_ai', 'langchain_core', 'langgraph') if m in sys.modules];"
        "print(bad)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
