"""OpenInference spans whose ``input.value`` is not the request body: the flattened ``llm.*`` attributes.

Framework instrumentors (``openinference-instrumentation-langchain``) put the framework's own run inputs
in ``input.value`` (LangChain: ``{"messages": [[<serialized messages>]]}``) and its result in
``output.value`` (an ``LLMResult``). The request the SDK sent is in the flattened attributes, which every
OpenInference instrumentor writes alike (openinference-semantic-conventions):

- ``llm.input_messages.N.message.role`` / ``.content`` / ``.tool_call_id`` /
  ``.tool_calls.M.tool_call.{id,function.name,function.arguments}``: the request's messages;
- ``llm.invocation_parameters`` (JSON): the sampling parameters and ``tools`` as the SDK got them;
- ``llm.tools.N.tool.json_schema``: the tool definitions (when not in the parameters);
- ``llm.output_messages.*`` (same shape), ``llm.finish_reason``, ``llm.token_count.*``: the response.

Such a call is partial (stepfork.replay.imported): the body holds the messages (compared in the GenAI form,
which drops fields the attributes do not keep, such as a tool message's ``name``) and the parameters of the
Chat Completions request, never the framework's own keys (LangChain's ``_type``, ``model_name``).

Tool spans of the same instrumentors record the tool's input as LangChain handed it (the single argument's
value for a one-argument tool) and its output as the ``ToolMessage``; :func:`tool_arguments` reads the
arguments from the model's tool call with the message's ``tool_call_id``, :func:`tool_output` the content.
"""

from __future__ import annotations

from typing import Any

from stepfork.analysis.otlp.decode import Span
from stepfork.replay.imported import normalize_messages, parse_json_text

CHAT_BODY_FIELDS = frozenset(
    {
        "model",
        "temperature",
        "top_p",
        "n",
        "stop",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "response_format",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
        "service_tier",
        "stream",
        "user",
    }
)
"""OpenAI Chat Completions body fields read from ``llm.invocation_parameters`` (the API reference); other
keys there are the framework's own."""


def _items(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The flattened list under ``prefix`` (``llm.input_messages.``) as dicts of the remaining keys."""
    items: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix) :].partition(".")
            if index.isdigit():
                items.setdefault(int(index), {})[rest] = value
    return [items[i] for i in sorted(items)]


def has_messages(span: Span) -> bool:
    """True when the span holds flattened input messages."""
    return any(key.startswith("llm.input_messages.") for key in span.attributes)


def _message(flat: dict[str, Any]) -> dict[str, Any]:
    """One flattened ``message.*`` dict as a Chat Completions message."""
    message: dict[str, Any] = {"role": flat.get("message.role"), "content": flat.get("message.content")}
    calls = _items(flat, "message.tool_calls.")
    if calls:
        message["tool_calls"] = [
            {
                "id": call.get("tool_call.id"),
                "type": "function",
                "function": {
                    "name": call.get("tool_call.function.name"),
                    "arguments": call.get("tool_call.function.arguments") or "{}",
                },
            }
            for call in calls
        ]
    if "message.tool_call_id" in flat:
        message["tool_call_id"] = flat["message.tool_call_id"]
    return message


def request_body(span: Span, model: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The partial Chat Completions body of the span and its ``normalize`` rules (module docstring)."""
    attrs = span.attributes
    params = parse_json_text(attrs.get("llm.invocation_parameters"))
    body: dict[str, Any] = {
        key: value
        for key, value in (params.items() if isinstance(params, dict) else ())
        if key in CHAT_BODY_FIELDS and value is not None
    }
    body["model"] = str(body.get("model") or model)
    messages = [_message(m) for m in _items(attrs, "llm.input_messages.")]
    normalize: dict[str, str] = {}
    if messages:
        body["messages"] = normalize_messages(messages)
        normalize["messages"] = "genai"
    if "tools" not in body:
        tools = [parse_json_text(t.get("tool.json_schema")) for t in _items(attrs, "llm.tools.")]
        if tools:
            body["tools"] = tools
    return body, normalize


def completion(span: Span, model: str, usage: dict[str, int | None]) -> dict[str, Any] | None:
    """The ``chat.completion`` response body of the span, from ``llm.output_messages.*`` (None when the
    span holds no output message). The response id and model come from LangChain's ``response_metadata``
    in ``output.value`` when it is there."""
    attrs = span.attributes
    outputs = _items(attrs, "llm.output_messages.")
    if not outputs:
        return None
    metadata: dict[str, Any] = {}
    result = parse_json_text(attrs.get("output.value"))
    try:
        metadata = result["generations"][0][0]["message"]["kwargs"]["response_metadata"]
    except (KeyError, IndexError, TypeError):
        metadata = {}
    metadata = metadata if isinstance(metadata, dict) else {}
    choices = []
    for index, flat in enumerate(outputs):
        message = _message(flat)
        message["role"] = message.get("role") or "assistant"
        message["refusal"] = None
        reason = attrs.get("llm.finish_reason") or ("tool_calls" if "tool_calls" in message else "stop")
        choices.append({"index": index, "message": message, "finish_reason": reason, "logprobs": None})
    body: dict[str, Any] = {
        "id": str(metadata.get("id") or f"chatcmpl-{span.span_id}"),
        "object": "chat.completion",
        "created": span.start_ns // 1_000_000_000,
        "model": str(metadata.get("model_name") or model),
        "choices": choices,
    }
    if usage.get("prompt_tokens") is not None:
        body["usage"] = {k: v for k, v in usage.items() if v is not None}
    return body


def tool_calls_by_id(spans: list[Span]) -> dict[str, Any]:
    """``{tool call id: parsed arguments}`` over the LLM spans' output messages (the model's tool calls)."""
    found: dict[str, Any] = {}
    for span in spans:
        for flat in _items(span.attributes, "llm.output_messages."):
            for call in _items(flat, "message.tool_calls."):
                if isinstance(call.get("tool_call.id"), str):
                    found[call["tool_call.id"]] = parse_json_text(call.get("tool_call.function.arguments"))
    return found


def tool_message(output: Any) -> dict[str, Any] | None:
    """The data of a LangChain ``ToolMessage`` as OpenInference serializes it
    (``{"type": "tool", "data": {"content", "tool_call_id", ...}}``), else None."""
    data = output.get("data") if isinstance(output, dict) and output.get("type") == "tool" else None
    return data if isinstance(data, dict) else None


def tool_arguments(raw: Any, output: Any, calls: dict[str, Any]) -> Any:
    """A tool span's arguments: its ``input.value`` when that is a JSON object, else the arguments of the
    model's tool call whose id the tool's ``ToolMessage`` names; else the value as recorded."""
    value = parse_json_text(raw)
    if isinstance(value, dict):
        return value
    message = tool_message(output)
    if message is not None and isinstance(calls.get(str(message.get("tool_call_id"))), dict):
        return calls[str(message["tool_call_id"])]
    return value
