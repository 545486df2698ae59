"""LangGraph's prebuilt ReAct agent on ``ChatOpenAI``, as LangGraph's docs write it (issue 28).

``create_react_agent(model, tools, prompt=...)`` with a ``ToolNode`` running ``get_weather`` (a plain
``@tool``: a recording or a replay makes it an instrumented boundary, docs/integrations.md "Framework
tools"); the model is ``langchain_openai.ChatOpenAI`` whose HTTP client is the local fake OpenAI API of
``examples/openai_agent/fake_openai.py`` (fresh completion and tool-call ids, ``created``, request-id and
date headers per response, as the real API). The entrypoint returns the run's ``AIMessage`` objects, ids
included: LangChain mints a new ``lc_run--<uuid7>-0`` id for each on every run, and the weather service
hands out a new report id per call, so a replay's output is compared up to a renaming of the fresh ids
(stepfork.replay.noise) while every id the recording handed out must come back exactly.

    python react_openai.py record run.sftrace            # or record-stream (ChatOpenAI streaming=True)
    stepfork replay run.sftrace --entrypoint react_openai:run_agent
"""

from __future__ import annotations

import json
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "openai_agent"))  # the fake OpenAI API

import httpx2
from fake_openai import FakeOpenAI
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from stepfork.integrations.langchain import instrument_chat_model
from stepfork.trace import record, record_main, to_jsonable

with warnings.catch_warnings():  # LangGraph 1.x keeps it in langgraph.prebuilt, deprecated for langchain's
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

SYSTEM = "You are a concise weather assistant."
QUESTION = "Should I take an umbrella in Paris today?"


@tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    report = {"city": city, "celsius": 21, "sky": "sunny", "report_id": f"wr_{uuid.uuid4().hex[:20]}"}
    return json.dumps(report)


def make_model(*, streaming: bool = False) -> Any:
    """``ChatOpenAI`` as the docs build it, on the fake API, wrapped by Stepfork (one line)."""
    fake = FakeOpenAI()
    llm = ChatOpenAI(
        model="gpt-4o-mini",
        temperature=0,
        api_key="sk-local-example",
        max_retries=0,
        streaming=streaming,
        http_client=httpx2.Client(transport=fake.transport()),
        http_async_client=httpx2.AsyncClient(transport=fake.transport()),
    )
    return instrument_chat_model(llm)


def answer(question: str = QUESTION, *, streaming: bool = False) -> list[Any]:
    """Run the agent; return the final state's messages."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(make_model(streaming=streaming), [get_weather], prompt=SYSTEM)
    state = agent.invoke({"messages": [{"role": "user", "content": question}]})
    messages: list[Any] = state["messages"]
    return messages


def _result(messages: list[Any]) -> dict[str, Any]:
    ai = [m for m in messages if isinstance(m, AIMessage)]
    reports = [json.loads(m.content) for m in messages if isinstance(m, ToolMessage)]
    return {"messages": ai, "answer_id": ai[-1].id, "reports": [r["city"] for r in reports]}


def run_agent(question: str = QUESTION) -> dict[str, Any]:
    """The replay entrypoint: ``{"messages": [AIMessage...], "answer_id", "reports"}``."""
    return _result(answer(question))


def run_agent_streaming(question: str = QUESTION) -> dict[str, Any]:
    """The same agent on a streaming ``ChatOpenAI`` (Server-Sent Events)."""
    return _result(answer(question, streaming=True))


def record_run(bundle: str, *, overwrite: bool = False, streaming: bool = False) -> dict[str, Any]:
    """Run the agent under ``stepfork.record`` into ``bundle``; return its result."""
    with record("langgraph-openai-agent", output=bundle, overwrite=overwrite, run_input=QUESTION) as session:
        result = run_agent_streaming() if streaming else run_agent()
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record|record-stream BUNDLE.sftrace [--overwrite]``: record, print the result as JSON."""
    import functools

    import react_openai  # record through the imported module (tagged values name their class)

    stream = functools.partial(react_openai.record_run, streaming=True)

    def show(result: Any) -> str:  # the messages are LangChain objects: print their JSON form
        return json.dumps(to_jsonable(result))

    return record_main(argv, {"record": react_openai.record_run, "record-stream": stream}, show=show)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
