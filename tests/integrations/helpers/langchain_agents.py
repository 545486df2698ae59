"""LangChain and LangGraph agents as their docs write them, on the real ``ChatOpenAI``/``ChatAnthropic`` whose
HTTP client is a fake provider (issue 11). Used in-process by tests/integrations/test_langchain_capture.py
and, copied beside fake_providers.py, as the entrypoint of an exported test (``run_agent``).

    python langchain_agents.py record run.sftrace
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any
from unittest import mock

import httpx2
import pydantic
from fake_providers import FakeProvider
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import StructuredTool, tool
from langchain_openai import ChatOpenAI

from stepfork.integrations.langchain import instrument_chat_model
from stepfork.trace import record, trace_tool

with warnings.catch_warnings():  # LangGraph 1.x deprecates it in favour of langchain's create_agent
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

QUESTION = "What is the weather in Paris and Lyon?"


class Weather(pydantic.BaseModel):
    """The weather in a city."""

    city: str
    celsius: int


def _with_rain() -> type[pydantic.BaseModel]:
    class Weather(pydantic.BaseModel):  # the same name: only the fields change
        """The weather in a city."""

        city: str
        celsius: int
        rain: bool = False

    return Weather


WeatherWithRain = _with_rain()
"""``Weather`` with one more field: a changed output schema."""


@tool
@trace_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: sunny, 21C"


# the same tool with another description (what the model reads about it)
get_weather_forecast = StructuredTool.from_function(
    get_weather.func, name="get_weather", description="Weather forecast of a city."
)


def openai_chat(fake: FakeProvider) -> Any:
    """``ChatOpenAI`` as the docs build it, its HTTP clients on ``fake``, wrapped by Stepfork (one line)."""
    llm = ChatOpenAI(
        model="gpt-4o-mini",
        temperature=0,
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.Client(transport=fake.transport()),
        http_async_client=httpx2.AsyncClient(transport=fake.transport()),
    )
    return instrument_chat_model(llm)


def anthropic_chat(fake: FakeProvider) -> Any:
    """``ChatAnthropic`` as the docs build it; its (lazily made) SDK clients get ``fake`` as transport."""
    from langchain_anthropic import ChatAnthropic, chat_models  # imported when used: it is slow to import

    llm = ChatAnthropic(model="claude-sonnet-4-5", api_key="sk-ant-test", max_retries=0)

    def client(**kwargs: Any) -> Any:
        return httpx2.Client(transport=fake.transport(), base_url=kwargs["base_url"])

    def aclient(**kwargs: Any) -> Any:
        return httpx2.AsyncClient(transport=fake.transport(), base_url=kwargs["base_url"])

    with (
        mock.patch.object(chat_models, "_get_default_httpx_client", client),
        mock.patch.object(chat_models, "_get_default_async_httpx_client", aclient),
    ):
        llm._client, llm._async_client  # noqa: B018 - the cached SDK clients, made on the fake
    return instrument_chat_model(llm)


def tools_agent(llm: Any, tools: list[Any] | None = None, question: str = QUESTION) -> list[BaseMessage]:
    """LangChain's tool-calling how-to: bind_tools, invoke, run the tool calls, invoke again."""
    chosen = tools or [get_weather]
    llm_with_tools = llm.bind_tools(chosen)
    messages: list[BaseMessage] = [HumanMessage(question)]
    ai_msg = llm_with_tools.invoke(messages)
    messages.append(ai_msg)
    for tool_call in ai_msg.tool_calls:
        messages.append(chosen[0].invoke(tool_call))
    messages.append(llm_with_tools.invoke(messages))
    return messages


def stream_agent(llm: Any) -> list[Any]:
    """``llm.stream(...)``: the chunks."""
    return list(llm.stream("What is the weather in Paris?"))


def structured_agent(llm: Any, schema: type[pydantic.BaseModel] = Weather) -> Any:
    """``llm.with_structured_output(Schema).invoke(...)``: a ``Schema`` instance."""
    return llm.with_structured_output(schema).invoke("What is the weather in Paris?")


async def async_agent(llm: Any) -> list[Any]:
    """``ainvoke`` with tools and ``astream``."""
    ai_msg = await llm.bind_tools([get_weather]).ainvoke(QUESTION)
    chunks = [chunk async for chunk in llm.astream("What is the weather in Paris?")]
    return [ai_msg, chunks]


def react_agent(llm: Any, tools: list[Any] | None = None, question: str = QUESTION) -> list[BaseMessage]:
    """LangGraph's prebuilt ReAct agent: ``create_react_agent(model, tools)``; the final state's messages."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(llm, tools or [get_weather])
    state = agent.invoke({"messages": [{"role": "user", "content": question}]})
    messages: list[BaseMessage] = state["messages"]
    return messages


def run_agent(question: str = QUESTION) -> dict[str, Any]:
    """The exported test's entrypoint: the ReAct agent and a structured answer on ChatOpenAI."""
    llm = openai_chat(FakeProvider())
    messages = react_agent(llm, question=question)
    weather = structured_agent(llm)
    return {
        "answer": messages[-1].content,
        "tools": [m.content for m in messages if m.type == "tool"],
        "weather": weather.model_dump(),
    }


def record_run(bundle: str) -> dict[str, Any]:
    """Run :func:`run_agent` under ``stepfork.record`` into ``bundle``; return its result."""
    with record("langchain-agent", output=bundle, overwrite=True, run_input=QUESTION) as session:
        result = run_agent(QUESTION)
        session.set_output(result)
    return result


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "record":
        sys.exit("usage: python langchain_agents.py record BUNDLE.sftrace")
    import langchain_agents  # record through the imported module

    print(json.dumps(langchain_agents.record_run(sys.argv[2])))
