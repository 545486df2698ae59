"""LangGraph's prebuilt ReAct agent with a model turn asking for three tools at once (issue 12).

``create_react_agent(model, tools)`` as LangGraph's docs write it: its ``ToolNode`` runs one message's tool
calls in a thread pool, so the three ``@tool`` calls of the first turn run concurrently and may reach the
recorder, or a replay, in any order. The tools carry no Stepfork line: a recording or a replay makes each
``@tool`` an instrumented boundary (docs/integrations.md, "Framework tools"). The default replay ordering
(``auto``) matches them by identity because ``concurrency.json`` shows they were made from pool threads.
The chat model is LangChain's ``GenericFakeChatModel`` (scripted); no network.

    python react_agent.py record run.sftrace  # add --overwrite to replace an existing bundle
    stepfork replay run.sftrace --entrypoint react_agent:run_agent
    python react_agent.py record-messages msgs.sftrace  # the entrypoint returning its AIMessages
    stepfork replay msgs.sftrace --entrypoint react_agent:run_agent_messages
"""

from __future__ import annotations

import sys
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from stepfork.integrations.langchain import instrument_chat_model
from stepfork.trace import record, record_main, to_jsonable

SYSTEM = "You plan days out: check the weather, a museum and a table."
QUESTION = "Plan my Tuesday in Paris: weather, a museum and a restaurant."

try:  # LangGraph 1.x keeps create_react_agent in langgraph.prebuilt (deprecated in favour of langchain's)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent
except ImportError:  # pragma: no cover
    raise


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model with the ``bind_tools`` a tool-calling agent needs."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def scripted_model() -> ScriptedChatModel:
    """One turn asking for three tools at once, then the answer."""
    return ScriptedChatModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_weather"},
                        {
                            "name": "find_museum",
                            "args": {"city": "Paris", "day": "Tuesday"},
                            "id": "call_museum",
                        },
                        {"name": "book_table", "args": {"city": "Paris", "people": 2}, "id": "call_table"},
                    ],
                    usage_metadata={"input_tokens": 40, "output_tokens": 30, "total_tokens": 70},
                ),
                AIMessage(content="Sunny; the Musee d'Orsay is open; table booked for two at 20:00."),
            ]
        )
    )


@tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: sunny, 21C"


@tool
def find_museum(city: str, day: str) -> str:
    """A museum open on that day."""
    return "Musee d'Orsay" if day == "Tuesday" else "Louvre"


@tool
def book_table(city: str, people: int) -> dict[str, Any]:
    """Book a restaurant table."""
    return {"restaurant": "Chez Janou", "people": people, "time": "20:00"}


TOOLS = [get_weather, find_museum, book_table]


def run_agent(question: str = QUESTION, model: Any = None) -> dict[str, Any]:
    """Run the prebuilt agent; return ``{"answer", "tools"}`` (tool message contents, in call order)."""
    chat = instrument_chat_model(model if model is not None else scripted_model(), name="scripted-chat")
    agent = create_react_agent(chat, TOOLS, prompt=SYSTEM)
    state = agent.invoke({"messages": [HumanMessage(question)]})
    messages = state["messages"]
    tools = [m.content for m in messages if type(m).__name__ == "ToolMessage"]
    return {"answer": messages[-1].content, "tools": tools}


def run_agent_messages(question: str = QUESTION) -> dict[str, Any]:
    """The same agent returning its ``AIMessage`` objects, ids included (LangChain mints an
    ``lc_run--<uuid7>-0`` id for each inside the recorded model call, so a replay serves them back)."""
    chat = instrument_chat_model(scripted_model(), name="scripted-chat")
    state = create_react_agent(chat, TOOLS, prompt=SYSTEM).invoke({"messages": [HumanMessage(question)]})
    return {"messages": [m for m in state["messages"] if isinstance(m, AIMessage)]}


def record_run(bundle: str, question: str = QUESTION, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the agent under ``stepfork.record`` into ``bundle``; return its result.
    An existing bundle is replaced only with ``overwrite`` (else ``TraceStorageError``, code
    ``already_exists``, before the agent runs)."""
    with record("langgraph-react-agent", output=bundle, overwrite=overwrite, run_input=question) as session:
        result = run_agent(question)
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record BUNDLE.sftrace [--overwrite]``: record, print the result as JSON (exit 2: bad input)."""
    import react_agent  # record through the imported module (tagged values name their class)

    def record_messages(bundle: str, *, overwrite: bool = False) -> Any:
        with record(
            "langgraph-react-agent", output=bundle, overwrite=overwrite, run_input=QUESTION
        ) as session:
            result = react_agent.run_agent_messages()
            session.set_output(result)
        return to_jsonable(result)

    commands = {"record": react_agent.record_run, "record-messages": record_messages}
    return record_main(argv, commands)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
