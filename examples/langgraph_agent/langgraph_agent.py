"""A LangGraph agent recorded and replayed by Stepfork (docs/integrations.md).

A two-node graph (``agent`` -> ``tools`` -> ``agent``) on LangChain's own test chat model
(``GenericFakeChatModel``, scripted: a ``get_weather`` tool call, then the answer); no network, no key.
The model is wrapped once, ``instrument_chat_model(model)``; the tool is ``@tool`` over ``@trace_tool``.

    python langgraph_agent.py record weather.sftrace  # add --overwrite to replace an existing bundle
    stepfork replay weather.sftrace --entrypoint langgraph_agent:run_agent
"""

from __future__ import annotations

import sys
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from stepfork.integrations.langchain import instrument_chat_model
from stepfork.trace import record, record_main, trace_tool

QUESTION = "Should I take an umbrella in Paris today?"


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model with the ``bind_tools`` a tool-calling graph needs."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def scripted_model() -> ScriptedChatModel:
    """The model's answers, in order: a tool call, then the final text."""
    return ScriptedChatModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}],
                    usage_metadata={"input_tokens": 30, "output_tokens": 8, "total_tokens": 38},
                ),
                AIMessage(content="Sunny and 21 degrees in Paris: no umbrella needed."),
            ]
        )
    )


@tool
@trace_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: sunny, 21C"


def build_graph(model: Any) -> Any:
    """The compiled graph: the model node, the tool node, and the edge back."""
    bound = model.bind_tools([get_weather])

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def run_agent(question: str = QUESTION, model: Any = None) -> dict[str, Any]:
    """Run the graph; return ``{"answer", "steps"}`` (the message types in order)."""
    chat = instrument_chat_model(model if model is not None else scripted_model(), name="scripted-chat")
    state = build_graph(chat).invoke({"messages": [HumanMessage(question)]})
    messages = state["messages"]
    return {"answer": messages[-1].content, "steps": [type(m).__name__ for m in messages]}


def record_run(bundle: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the agent under ``stepfork.record`` into ``bundle``; return its result.
    An existing bundle is replaced only with ``overwrite`` (else ``TraceStorageError``, code
    ``already_exists``, before the agent runs)."""
    with record("langgraph-weather-agent", output=bundle, overwrite=overwrite, run_input=QUESTION) as session:
        result = run_agent()
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record BUNDLE.sftrace [--overwrite]``: record, print the result as JSON (exit 2: bad input)."""
    import langgraph_agent  # record through the imported module (tagged values name their class)

    return record_main(argv, {"record": langgraph_agent.record_run})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
