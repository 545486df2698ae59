"""A LangGraph human-in-the-loop graph: ``interrupt()`` inside a tool, resumed with ``Command(resume=...)``.

As LangGraph's docs write it (issue 12): a model node, a ``ToolNode`` whose ``book_hotel`` tool asks a
human to approve with ``interrupt(...)`` (a plain ``@tool``: a recording or a replay makes it an
instrumented boundary, docs/integrations.md "Framework tools"), a checkpointer, and a second ``invoke``
with ``Command(resume=...)``. The recorder writes the interrupt as control flow with its payload
(stepfork.trace.control_flow); a replay raises LangGraph's own ``GraphInterrupt`` with that payload, so the
graph pauses where it paused, and resumes. The chat model is LangChain's ``GenericFakeChatModel``.

    python hitl_agent.py record run.sftrace  # add --overwrite to replace an existing bundle
    stepfork replay run.sftrace --entrypoint hitl_agent:run_agent

The resumed run on its own, as a service records it (one run per ``invoke``): its input is the
``Command(resume=...)`` it was invoked with, and the entrypoint takes it back as a ``Command``:

    python hitl_agent.py resume resumed.sftrace
    stepfork replay resumed.sftrace --entrypoint hitl_agent:resume_agent
"""

from __future__ import annotations

import sys
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from stepfork.integrations.langchain import instrument_chat_model
from stepfork.trace import record, record_main

QUESTION = "Book me the Hotel Lutetia in Paris."
DECISION = {"type": "accept"}


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model with the ``bind_tools`` a tool-calling graph needs."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


ASK_TO_BOOK = AIMessage(
    content="",
    tool_calls=[{"name": "book_hotel", "args": {"hotel_name": "Hotel Lutetia"}, "id": "call_1"}],
    id="ai-1",
)


def scripted_model(*, resumed_only: bool = False) -> ScriptedChatModel:
    """The model's turns: ask for ``book_hotel``, then answer (only the answer for a resumed run)."""
    answer = AIMessage(content="Done: the Hotel Lutetia is booked.")
    return ScriptedChatModel(messages=iter([answer] if resumed_only else [ASK_TO_BOOK, answer]))


@tool
def book_hotel(hotel_name: str) -> str:
    """Book a hotel, after a human approved it."""
    response = interrupt({"question": f"Book {hotel_name}?", "args": {"hotel_name": hotel_name}})
    if response.get("type") != "accept":
        return f"Booking of {hotel_name} declined."
    return f"Booked a stay at {hotel_name}."


def build_graph(model: Any) -> Any:
    bound = model.bind_tools([book_hotel])

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode([book_hotel]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


def run_agent(question: str = QUESTION, decision: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run until the interrupt, then resume with the human's decision; return what happened."""
    chat = instrument_chat_model(scripted_model(), name="scripted-chat")
    graph = build_graph(chat)
    config = {"configurable": {"thread_id": "hitl-1"}}
    paused = graph.invoke({"messages": [HumanMessage(question)]}, config)
    pending = [i.value for i in paused.get("__interrupt__", [])]
    done = graph.invoke(Command(resume=decision or DECISION), config)
    tools = [m.content for m in done["messages"] if type(m).__name__ == "ToolMessage"]
    return {"asked": pending, "tool": tools, "answer": done["messages"][-1].content}


def paused_thread(graph: Any, config: dict[str, Any], question: str = QUESTION) -> None:
    """Put the thread where the first run left it: the question asked, the model's ``book_hotel`` call
    pending, the tools node next. A service finds this in its durable checkpointer; the example seeds an
    ``InMemorySaver`` with LangGraph's ``update_state``, as a test fixture would."""
    graph.update_state(
        config, {"messages": [HumanMessage(question, id="human-1"), ASK_TO_BOOK]}, as_node="agent"
    )


def resume_agent(command: Command) -> dict[str, Any]:
    """The resumed run: ``graph.invoke(Command(resume=...), config)`` on the paused thread.

    The replay entrypoint of a resumed run's bundle: its recorded input is the ``Command``
    (docs/integrations.md, "Human in the loop"), handed back as a ``Command``.
    """
    chat = instrument_chat_model(scripted_model(resumed_only=True), name="scripted-chat")
    graph = build_graph(chat)
    config = {"configurable": {"thread_id": "hitl-1"}}
    paused_thread(graph, config)
    done = graph.invoke(command, config)
    tools = [m.content for m in done["messages"] if type(m).__name__ == "ToolMessage"]
    return {"tool": tools, "answer": done["messages"][-1].content}


def record_resumed_run(
    bundle: str, decision: dict[str, Any] | None = None, *, overwrite: bool = False
) -> dict[str, Any]:
    """Record the resumed run into ``bundle``, its ``Command(resume=decision)`` as the run's input.
    An existing bundle is replaced only with ``overwrite``."""
    command = Command(resume=decision or DECISION)
    with record("langgraph-hitl-resume", output=bundle, overwrite=overwrite, run_input=command) as session:
        result = resume_agent(command)
        session.set_output(result)
    return result


def record_run(bundle: str, question: str = QUESTION, *, overwrite: bool = False) -> dict[str, Any]:
    """Run the agent on ``question`` under ``stepfork.record`` into ``bundle``; return its result.
    An existing bundle is replaced only with ``overwrite`` (else ``TraceStorageError``, code
    ``already_exists``, before the agent runs)."""
    with record("langgraph-hitl", output=bundle, overwrite=overwrite, run_input=question) as session:
        result = run_agent(question)
        session.set_output(result)
    return result


def main(argv: list[str]) -> int:
    """``record|resume BUNDLE.sftrace [--overwrite]``: record the first or the resumed run, print the result
    as JSON; 2 for bad input (one line)."""
    import hitl_agent  # record through the imported module (tagged values name their class)

    return record_main(argv, {"record": hitl_agent.record_run, "resume": hitl_agent.record_resumed_run})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
