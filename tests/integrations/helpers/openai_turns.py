"""What the local OpenAI-compatible server (local_openai.py) answers: a scripted model and the wire shapes.

The model is a plain rule over the request, so an agent framework's loop runs to its end as it would against
a real model, and a changed request changes the answer the way it would:

- the tools offered that the conversation has not called yet are called, all in one turn (parallel tool
  calls, as real models make them), except a handoff (``transfer_to_...``) or a ``final_answer`` tool, which
  is called alone: a handoff first, ``final_answer`` once every other tool was called;
- with nothing left to call, the answer is text: the city the user asked about and what the tools said;
- a smolagents ``CodeAgent`` (its system prompt asks for code between ``<code>`` tags) gets Python: first a
  call of each tool its prompt lists, then ``final_answer(...)`` of what they printed.

Arguments are made from each tool's JSON schema (a ``city``/``location`` string is the city asked about).
The wire shapes follow OpenAI's API reference: Chat Completions (JSON, and chunks with tool-call deltas and
the ``stream_options.include_usage`` chunk) and Responses (JSON, and the full named event sequence with
``sequence_number``). Every response is new: fresh ``chatcmpl-``/``resp_``/``msg_``/``fc_``/``call_`` ids and
``created`` times, as real providers make them; token counts are word counts.
"""

from __future__ import annotations

import json
import random
import re
import string
import time
from dataclasses import dataclass, field
from typing import Any

_random = random.SystemRandom()
FINAL_TOOLS = frozenset({"final_answer", "final_result"})
CITY_KEYS = frozenset({"city", "location", "place", "town", "city_name"})
WEATHER_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
"""The ``get_weather`` tool schema of OpenAI's function-calling guide, which agents in tests offer."""
WEATHER_TOOL_SOURCE = """
@trace_tool
def get_weather(city: str) -> dict:
    with open("tool-ran.log", "a") as log:
        log.write(city + "\\n")
    return {"city": city, "temperature_c": 21, "conditions": "sunny"}
"""
"""The guide's ``get_weather`` as a program's source (``trace_tool`` imported), noting each run in
``tool-ran.log`` so a test can tell a served tool from one that ran."""


def weather_program(template: str) -> str:
    """``template`` (a program's source) with ``{tools}`` replaced by :data:`WEATHER_TOOLS` and
    ``{weather_tool}`` by :data:`WEATHER_TOOL_SOURCE`."""
    return template.replace("{tools}", repr(WEATHER_TOOLS)).replace("{weather_tool}", WEATHER_TOOL_SOURCE)


_TOOL_LINE = re.compile(r"^\s*def (\w+)\(", re.MULTILINE)
_CALLED_IN_TEXT = re.compile(r"'name': '(\w+)'")


def random_id(prefix: str, size: int = 24, alphabet: str = string.ascii_letters + string.digits) -> str:
    """``prefix`` + ``size`` random characters: a fresh id per response."""
    return prefix + "".join(_random.choices(alphabet, k=size))


def _words(value: Any) -> int:
    """The prompt's size in words; an empty field (null, [], {}) is not read by the model, so it counts for
    nothing (an echoed message's ``annotations: []`` adds no token, as with a real tokenizer)."""
    return len(json.dumps(_read(value)).split()) if not isinstance(value, str) else len(value.split())


def _read(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _read(v) for k, v in value.items() if v is not None and v != [] and v != {}}
    if isinstance(value, list):
        return [_read(v) for v in value]
    return value


@dataclass
class Conversation:
    """A request in neutral form: what was said, which tools were called, what they returned."""

    model: str
    system: str = ""
    user: str = ""
    called: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)  # {"name", "description", "parameters"}
    observations: list[str] = field(default_factory=list)  # smolagents' "Observation:" messages
    words: int = 0

    @property
    def city(self) -> str:
        """The city the last user message asks about: the last capitalized word after ``in`` (``What is the
        weather in Paris?`` -> ``Paris``), else its last word."""
        named = re.findall(r"\b[Ii]n ([A-Z][\w-]*)", self.user)  # "... the weather in Paris?"
        found = named or re.findall(r"[A-Za-z][\w-]*", self.user)
        return found[-1] if found else "nowhere"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _observed(text: str) -> str:
    """The lines of a smolagents observation, without its labels and an empty last output."""
    skip = ("Observation:", "Execution logs:", "Last output from code snippet:", "None")
    return "\n".join(line for line in text.splitlines() if line.strip() and line.strip() not in skip)


def chat_conversation(body: dict[str, Any]) -> Conversation:
    """A Chat Completions request (``messages``, ``tools``) as a :class:`Conversation`."""
    talk = Conversation(model=str(body.get("model", "gpt-4o-mini")), words=_words(body.get("messages")))
    for message in body.get("messages") or []:
        role, text = message.get("role"), _text_of(message.get("content"))
        if role in ("system", "developer"):
            talk.system += text
        elif role == "user":
            if text.startswith("Observation:"):  # smolagents: what the tools or the code printed
                talk.observations.append(_observed(text))
            else:
                talk.user = text
        elif role == "assistant":
            talk.called += [c["function"]["name"] for c in message.get("tool_calls") or []]
            if text.startswith("Calling tools:"):  # smolagents' ToolCallingAgent writes its calls as text
                talk.called += _CALLED_IN_TEXT.findall(text)
        elif role == "tool":
            talk.results.append(text)
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        talk.tools.append({k: function.get(k) for k in ("name", "description", "parameters")})
    return talk


def responses_conversation(body: dict[str, Any]) -> Conversation:
    """A Responses request (``instructions``, ``input`` items, ``tools``) as a :class:`Conversation`."""
    items = body.get("input")
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items or []
    talk = Conversation(model=str(body.get("model", "gpt-4o-mini")), words=_words(items))
    talk.system = str(body.get("instructions") or "")
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            talk.user = _text_of(item.get("content"))
        elif kind == "message" and item.get("role") in ("system", "developer"):
            talk.system += _text_of(item.get("content"))
        elif kind == "function_call":
            talk.called.append(item["name"])
        elif kind == "function_call_output":
            talk.results.append(str(item.get("output")))
    for tool in body.get("tools") or []:
        if tool.get("type") == "function":
            talk.tools.append({k: tool.get(k) for k in ("name", "description", "parameters")})
    return talk


def _argument(name: str, schema: dict[str, Any], talk: Conversation, answer: str) -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    if name.lower() in CITY_KEYS:
        return talk.city
    return answer


def arguments(tool: dict[str, Any], talk: Conversation) -> dict[str, Any]:
    """The arguments of a call of ``tool``, from its JSON schema's properties."""
    properties = (tool.get("parameters") or {}).get("properties") or {}
    answer = final_text(talk)
    return {name: _argument(name, spec, talk, answer) for name, spec in properties.items()}


def final_text(talk: Conversation) -> str:
    """The text answer: the city asked about and what the tools returned."""
    said = "; ".join(r.strip() for r in [*talk.results, *talk.observations] if r.strip())
    if said:
        return f"The answer for {talk.city}: {said}"
    return f"It is 21 degrees and sunny in {talk.city}."


def tool_calls(talk: Conversation) -> list[dict[str, Any]]:
    """The tool calls of the next turn (``[{"name", "arguments"}]``), or ``[]`` for a text answer."""
    open_tools = [t for t in talk.tools if t["name"] not in talk.called]
    handoffs = [t for t in open_tools if t["name"].startswith("transfer_to_")]
    if handoffs and not any(name.startswith("transfer_to_") for name in talk.called):
        chosen = [handoffs[0]]
    else:
        chosen = [t for t in open_tools if t["name"] not in FINAL_TOOLS and t not in handoffs]
        if not chosen:
            chosen = [t for t in open_tools if t["name"] in FINAL_TOOLS][:1]
    return [{"name": t["name"], "arguments": json.dumps(arguments(t, talk))} for t in chosen]


def code_answer(talk: Conversation) -> str:
    """A smolagents CodeAgent turn: Python between ``<code>`` tags (the tools its prompt lists, then the
    final answer)."""
    if not talk.observations:
        names = [n for n in _TOOL_LINE.findall(talk.system) if n not in FINAL_TOOLS]
        lines = [f"print({name}({talk.city!r}))" for name in names]
        code = "\n".join(lines) or "print('no tools')"
        return f"Thought: I will ask the tools about {talk.city}.\n<code>\n{code}\n</code>"
    return f"Thought: I have what I need.\n<code>\nfinal_answer({final_text(talk)!r})\n</code>"


def is_code_agent(talk: Conversation) -> bool:
    """True for a smolagents CodeAgent's request (no tools; a system prompt asking for ``<code>``)."""
    return not talk.tools and "<code>" in talk.system and "final_answer" in talk.system


# -- Chat Completions ----------------------------------------------------------------------------------------


def _usage_chat(talk: Conversation, out: Any) -> dict[str, int]:
    prompt, completion = talk.words, max(1, _words(out))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _turn(talk: Conversation) -> tuple[str | None, list[dict[str, Any]]]:
    if is_code_agent(talk):
        return code_answer(talk), []
    calls = tool_calls(talk)
    return (None, calls) if calls else (final_text(talk), [])


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions JSON answer to ``body``."""
    talk = chat_conversation(body)
    text, calls = _turn(talk)
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = [
            {"id": random_id("call_"), "type": "function", "function": call} for call in calls
        ]
    return {
        "id": random_id("chatcmpl-", 29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": f"{talk.model}-2024-07-18",
        "system_fingerprint": random_id("fp_", 10, "0123456789abcdef"),
        "service_tier": "default",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": _usage_chat(talk, text or calls),
    }


def chat_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Chat Completions chunks answering ``body`` (``stream: true``): the role, the text in pieces or
    each tool call's id and name then its arguments in pieces, the finish reason, and the usage chunk when
    ``stream_options.include_usage`` asks for it."""
    talk = chat_conversation(body)
    text, calls = _turn(talk)
    base = {
        "id": random_id("chatcmpl-", 29),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": f"{talk.model}-2024-07-18",
        "system_fingerprint": random_id("fp_", 10, "0123456789abcdef"),
        "service_tier": "default",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": "" if text is not None else None, "refusal": None})]
    if text is not None:
        chunks += [chunk({"content": text[i : i + 12]}) for i in range(0, len(text), 12)]
    for index, call in enumerate(calls):
        head = {"index": index, "id": random_id("call_"), "type": "function"}
        chunks.append(chunk({"tool_calls": [{**head, "function": {"name": call["name"], "arguments": ""}}]}))
        arguments_ = call["arguments"]
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments_[i : i + 12]}}]})
            for i in range(0, len(arguments_), 12)
        ]
    chunks.append(chunk({}, "tool_calls" if calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": _usage_chat(talk, text or calls)})
    return chunks


# -- Responses ----------------------------------------------------------------------------------------------


def _usage_responses(talk: Conversation, out: Any) -> dict[str, Any]:
    prompt, completion = talk.words, max(1, _words(out))
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _output_items(text: str | None, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if text is not None:
        content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
        item = {"type": "message", "id": random_id("msg_", 48, "0123456789abcdef"), "status": "completed"}
        return [{**item, "role": "assistant", "content": content}]
    return [
        {
            "type": "function_call",
            "id": random_id("fc_", 48, "0123456789abcdef"),
            "call_id": random_id("call_"),
            "name": call["name"],
            "arguments": call["arguments"],
            "status": "completed",
        }
        for call in calls
    ]


def _response(body: dict[str, Any], talk: Conversation, ident: str, created: int, items: list[Any]) -> Any:
    done = bool(items)
    return {
        "id": ident,
        "object": "response",
        "created_at": created,
        "status": "completed" if done else "in_progress",
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": f"{talk.model}-2024-07-18",
        "output": items,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": _usage_responses(talk, [i.get("arguments") or i.get("content") for i in items])
        if done
        else None,
        "user": None,
        "metadata": {},
    }


def response(body: dict[str, Any]) -> dict[str, Any]:
    """The Responses JSON answer to ``body``."""
    talk = responses_conversation(body)
    text, calls = _turn(talk)
    ident = random_id("resp_", 48, "0123456789abcdef")
    return _response(body, talk, ident, int(time.time()), _output_items(text, calls))


def response_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Responses event stream answering ``body`` (``stream: true``): ``response.created``,
    ``response.in_progress``, per output item its ``added``, deltas and ``done`` events, then
    ``response.completed``; each with its ``type`` and ``sequence_number``."""
    talk = responses_conversation(body)
    text, calls = _turn(talk)
    ident, created = random_id("resp_", 48, "0123456789abcdef"), int(time.time())
    items = _output_items(text, calls)
    pending = _response(body, talk, ident, created, [])
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
    ]
    for index, item in enumerate(items):
        if item["type"] == "message":
            said = item["content"][0]["text"]
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            empty = {**item, "content": []}
            events += [
                {"type": "response.output_item.added", "output_index": index, "item": empty},
                {"type": "response.content_part.added", **ids, "part": part},
                *(
                    {"type": "response.output_text.delta", **ids, "delta": said[i : i + 12], "logprobs": []}
                    for i in range(0, len(said), 12)
                ),
                {"type": "response.output_text.done", **ids, "text": said, "logprobs": []},
                {"type": "response.content_part.done", **ids, "part": {**part, "text": said}},
            ]
        else:
            args = item["arguments"]
            ids = {"item_id": item["id"], "output_index": index}
            started = {**item, "arguments": "", "status": "in_progress"}
            events += [
                {"type": "response.output_item.added", "output_index": index, "item": started},
                *(
                    {"type": "response.function_call_arguments.delta", **ids, "delta": args[i : i + 12]}
                    for i in range(0, len(args), 12)
                ),
                {"type": "response.function_call_arguments.done", **ids, "arguments": args},
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": _response(body, talk, ident, created, items)})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def sse(events: list[dict[str, Any]], *, named: bool) -> bytes:
    """Server-Sent Events bytes: ``event: TYPE`` lines for the Responses API (``named``), the
    ``data: [DONE]`` terminator for Chat Completions."""
    lines = [(f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events]
    if not named:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()
