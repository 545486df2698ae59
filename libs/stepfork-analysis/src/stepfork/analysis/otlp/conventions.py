"""What one span means under each convention: OpenInference and the OTel GenAI semantic conventions.

Every function here reads a :class:`~stepfork.analysis.otlp.decode.Span` and returns plain JSON; the
tables of docs/import.md describe the same mapping. An LLM call becomes the input and output the HTTP
capture records (``stepfork.integrations._http_exchange``): ``{"method", "path", "headers", "body"}`` and
``{"status", "headers", "json"}``, so the agent's SDK, replayed through ``instrument_openai``, builds its own
objects from the imported response.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stepfork.analysis.otlp import flattened
from stepfork.analysis.otlp.decode import Span
from stepfork.replay.imported import genai_to_openai, normalize_tools, parse_json_text, streamed_output

OI_KIND = "openinference.span.kind"
STEPFORK_KIND = "stepfork.kind"
GENAI_OPERATION = "gen_ai.operation.name"
LLM_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})

OI_PATHS = {
    "ChatCompletion": "/v1/chat/completions",
    "Completion": "/v1/completions",
    "Response": "/v1/responses",
    "Embedding": "/v1/embeddings",
    "Messages": "/v1/messages",
}
"""OpenInference span name -> request path (the instrumentations record the body, not the URL)."""

GENAI_PARAMS = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.presence_penalty": "presence_penalty",
    "gen_ai.request.stop_sequences": "stop",
    "gen_ai.request.choice.count": "n",
}
"""GenAI request attributes -> the OpenAI Chat Completions body field they record."""

GENAI_STREAM = "gen_ai.request.stream"
"""Semconv's "the request was streamed" (``stream``); opentelemetry-instrumentation-openai-v2 does not set
it, so replay serves a streamed live request the held completion as a stream (stepfork.replay.imported)."""

FINISH_REASONS = {"tool_call": "tool_calls", "max_tokens": "length", "content_filtered": "content_filter"}
"""GenAI finish reasons (as some instrumentations normalize them) -> the OpenAI value."""

OLD_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
"""The older event-based GenAI form: one span event per input message, ``gen_ai.choice`` per output."""


@dataclass
class LLMCall:
    """An imported LLM call: ``provider``, ``model``, the capture-shaped ``input``/``output`` (output None
    when not captured), token counts, and what the call holds (``content_captured``, held ``fields``: None
    for the whole request, ``normalize``: the comparison form per field)."""

    provider: str
    model: str
    input: dict[str, Any]
    output: dict[str, Any] | None
    usage: dict[str, int | None] = field(default_factory=dict)
    content_captured: bool = True
    fields: list[str] | None = None
    normalize: dict[str, str] | None = None
    missing: bool = False  # no result recorded (a Stepfork export of a call that never returned)


@dataclass
class ToolCall:
    """An imported tool call: ``name``, ``input`` (the bound arguments, a JSON object), ``output``, and
    ``content_captured`` (False: the span had no arguments or result)."""

    name: str
    input: Any
    output: Any
    content_captured: bool = True
    missing: bool = False


def convention_of(span: Span) -> str | None:
    """``"stepfork"`` (a span ``stepfork export --otlp`` wrote: read exactly), ``"openinference"``,
    ``"genai"`` or None (a span of neither convention)."""
    if STEPFORK_KIND in span.attributes:
        return "stepfork"
    if OI_KIND in span.attributes:
        return "openinference"
    if GENAI_OPERATION in span.attributes or "gen_ai.system" in span.attributes:
        return "genai"
    return None


def role_of(span: Span, convention: str) -> str | None:
    """``"llm"``, ``"tool"``, ``"agent"`` or None for ``span`` read under ``convention``."""
    attrs = span.attributes
    if convention == "stepfork":
        return {"llm": "llm", "tool": "tool", "run": "agent"}.get(str(attrs.get(STEPFORK_KIND)))
    if convention == "openinference":
        kind = str(attrs.get(OI_KIND, "")).upper()
        return {"LLM": "llm", "TOOL": "tool", "AGENT": "agent", "CHAIN": "agent"}.get(kind)
    operation = attrs.get(GENAI_OPERATION)
    if operation in LLM_OPERATIONS:
        return "llm"
    if operation == "execute_tool":
        return "tool"
    if operation in AGENT_OPERATIONS:
        return "agent"
    return None


# -- run input/output ---------------------------------------------------------------------------------


def run_io(span: Span, convention: str | None) -> tuple[Any, Any]:
    """The run's ``(input, output)`` from its root or agent span: ``input.value``/``output.value``
    (OpenInference, also honoured on any span), else the text of ``gen_ai.input.messages`` /
    ``gen_ai.output.messages`` (GenAI)."""
    attrs = span.attributes
    if STEPFORK_KIND in attrs:
        run_input = parse_json_text(attrs.get("stepfork.input", "null"))
        return run_input, parse_json_text(attrs.get("stepfork.output", "null"))
    run_input = _io_value(attrs, "input")
    run_output = _io_value(attrs, "output")
    if run_input is None and "gen_ai.input.messages" in attrs:
        run_input = _messages_text(parse_json_text(attrs["gen_ai.input.messages"]))
    if run_output is None and "gen_ai.output.messages" in attrs:
        run_output = _messages_text(parse_json_text(attrs["gen_ai.output.messages"]))
    return run_input, run_output


def _io_value(attrs: dict[str, Any], which: str) -> Any:
    """OpenInference ``input.value``/``output.value``: parsed when its mime type is JSON, else the text."""
    value = attrs.get(f"{which}.value")
    if attrs.get(f"{which}.mime_type") == "application/json":
        return parse_json_text(value)
    return value


def _messages_text(messages: Any) -> Any:
    texts = [
        str(part.get("content", ""))
        for message in (messages if isinstance(messages, list) else ())
        if isinstance(message, dict)
        for part in message.get("parts") or ()
        if isinstance(part, dict) and part.get("type") == "text"
    ]
    return "".join(texts) if texts else messages


# -- LLM calls --------------------------------------------------------------------------------------------


def _http_input(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"method": "POST", "path": path, "headers": {}, "body": body}


def _http_output(body: Any) -> dict[str, Any]:
    return {"status": 200, "headers": {"content-type": "application/json"}, "json": body}


def _usage(prompt: Any, completion: Any) -> dict[str, int | None]:
    prompt_i = prompt if isinstance(prompt, int) else None
    completion_i = completion if isinstance(completion, int) else None
    total = prompt_i + completion_i if prompt_i is not None and completion_i is not None else None
    return {"prompt_tokens": prompt_i, "completion_tokens": completion_i, "total_tokens": total}


def openinference_llm(span: Span) -> LLMCall:
    """An OpenInference LLM span as an LLM call: ``input.value`` is the request body the SDK sent,
    ``output.value`` the response body; without them, the flattened ``llm.input_messages.*``,
    ``llm.invocation_parameters`` and ``llm.tools.*`` give a partial request."""
    attrs = span.attributes
    body = parse_json_text(attrs.get("input.value"))
    if not isinstance(body, dict) and "gen_ai.input.messages" in attrs:
        # OpenInference's span processors over GenAI spans (pydantic-ai): input.value is the user prompt,
        # the GenAI attributes hold the request
        return genai_llm(span)
    provider = str(attrs.get("llm.provider") or attrs.get("llm.system") or "openai")
    path = OI_PATHS.get(span.name, "/v1/chat/completions")
    output = parse_json_text(attrs.get("output.value"))
    usage = _usage(attrs.get("llm.token_count.prompt"), attrs.get("llm.token_count.completion"))
    model = str(
        attrs.get("llm.model_name") or (body.get("model") if isinstance(body, dict) else "") or "unknown"
    )
    if isinstance(body, dict) and ("model" in body or not flattened.has_messages(span)):
        model = str(body.get("model") or model)
        call = LLMCall(provider, model, _http_input(path, body), None, usage)
        if isinstance(output, dict):
            call.output = (
                streamed_output(body, output) if path == "/v1/chat/completions" else _http_output(output)
            )
        else:
            call.content_captured = False
        return call
    # input.value is not the request (a framework's run inputs: LangChain) or is hidden: the flattened
    # llm.* attributes hold the request and the response (stepfork.analysis.otlp.flattened)
    partial, normalize = flattened.request_body(span, model)
    response = (
        output
        if isinstance(output, dict) and output.get("object") == "chat.completion"
        else flattened.completion(span, model, usage)
    )
    return LLMCall(
        provider,
        model,
        _http_input(path, partial),
        streamed_output(partial, response) if response is not None else None,
        usage,
        content_captured="messages" in partial and response is not None,
        fields=sorted(partial),
        normalize=normalize or None,
    )


def _genai_messages(span: Span) -> list[dict[str, Any]] | None:
    """The request messages in OpenAI form (``gen_ai.system_instructions`` + ``gen_ai.input.messages``,
    or the older per-message span events), None when the span holds no content."""
    attrs = span.attributes
    messages: list[dict[str, Any]] = []
    instructions = parse_json_text(attrs.get("gen_ai.system_instructions"))
    if isinstance(instructions, list) and instructions:
        text = "".join(str(p.get("content", "")) for p in instructions if isinstance(p, dict))
        messages.append({"role": "system", "content": text})
    new_form = parse_json_text(attrs.get("gen_ai.input.messages"))
    if isinstance(new_form, list):
        messages.extend(genai_to_openai(new_form))
        return messages
    old = [e for e in span.events if e.name in OLD_MESSAGE_EVENTS]
    if not old:
        return messages or None
    for event in old:
        role = OLD_MESSAGE_EVENTS[event.name]
        content = parse_json_text(event.attributes.get("content"))
        message: dict[str, Any] = {"role": role, "content": content if isinstance(content, str) else None}
        calls = parse_json_text(event.attributes.get("tool_calls"))
        if isinstance(calls, list) and calls:
            message["tool_calls"] = calls
        if role == "tool":
            message["tool_call_id"] = event.attributes.get("id")
        if content is None and "tool_calls" not in message and role != "tool":
            return None  # the old form without content: nothing was captured
        messages.append(message)
    return genai_to_openai(_to_genai_for_norm(messages))


def _to_genai_for_norm(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from stepfork.replay.imported import openai_to_genai

    return openai_to_genai(messages)


def _genai_choices(span: Span) -> list[dict[str, Any]] | None:
    """The response choices as Chat Completions ``choices``, None when not captured."""
    attrs = span.attributes
    reasons = attrs.get("gen_ai.response.finish_reasons") or []
    output = parse_json_text(attrs.get("gen_ai.output.messages"))
    if isinstance(output, list):
        choices = []
        for index, (raw, message) in enumerate(zip(output, genai_to_openai(output), strict=True)):
            reason = raw.get("finish_reason") if isinstance(raw, dict) else None
            if reason is None and index < len(reasons):
                reason = reasons[index]
            reason = FINISH_REASONS.get(str(reason), reason)
            message["refusal"] = None
            choices.append(
                {"index": index, "message": message, "finish_reason": reason or "stop", "logprobs": None}
            )
        return choices
    old = [e for e in span.events if e.name == "gen_ai.choice"]
    if not old:
        return None
    choices = []
    for position, event in enumerate(old):
        message = parse_json_text(event.attributes.get("message"))
        if not isinstance(message, dict):
            return None
        index = event.attributes.get("index", position)
        message = {
            "role": "assistant",
            "content": message.get("content"),
            **{k: v for k, v in message.items() if k == "tool_calls"},
        }
        reason = event.attributes.get("finish_reason") or "stop"
        choices.append({"index": index, "message": message, "finish_reason": reason, "logprobs": None})
    return choices


def genai_llm(span: Span) -> LLMCall:
    """A GenAI ``chat`` span as an LLM call (OpenAI Chat Completions): the body holds ``model``, the
    messages and the recorded sampling parameters (and ``tools`` from ``gen_ai.tool.definitions``), so
    the call is partial: replay compares those fields only, messages in the GenAI form."""
    attrs = span.attributes
    provider = str(attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system") or "openai")
    model = str(attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model") or "unknown")
    body: dict[str, Any] = {"model": model}
    normalize = {"messages": "genai"}
    for key, name in GENAI_PARAMS.items():
        if key in attrs:
            body[name] = attrs[key]
    if isinstance(attrs.get(GENAI_STREAM), bool):  # held only when the instrumentation records it
        body["stream"] = attrs[GENAI_STREAM]
    messages = _genai_messages(span)
    if messages is not None:
        body["messages"] = messages
    tools = parse_json_text(attrs.get("gen_ai.tool.definitions"))
    if isinstance(tools, list):
        body["tools"] = normalize_tools(tools)
        normalize["tools"] = "genai"
    usage = _usage(attrs.get("gen_ai.usage.input_tokens"), attrs.get("gen_ai.usage.output_tokens"))
    choices = _genai_choices(span)
    output = None
    if choices is not None:
        response_model = str(attrs.get("gen_ai.response.model") or model)
        output = streamed_output(  # the SSE form when the span says the request was streamed
            body,
            {
                "id": str(attrs.get("gen_ai.response.id") or f"chatcmpl-{span.span_id}"),
                "object": "chat.completion",
                "created": span.start_ns // 1_000_000_000,
                "model": response_model,
                "choices": choices,
                "usage": {k: v for k, v in usage.items() if v is not None} or None,
            },
        )
    return LLMCall(
        provider,
        model,
        _http_input("/v1/chat/completions", body),
        output,
        usage,
        content_captured=messages is not None and output is not None,
        fields=sorted(body),
        normalize=normalize,
    )


# -- tool calls -------------------------------------------------------------------------------------------


def tool_call(span: Span, convention: str, calls: dict[str, Any] | None = None) -> ToolCall:
    """A tool span as a tool call: OpenInference ``tool.name``, ``input.value`` (the bound arguments),
    ``output.value``; GenAI ``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``/``result``.

    ``calls``: ``{tool call id: arguments}`` of the trace's LLM output messages
    (:func:`stepfork.analysis.otlp.flattened.tool_calls_by_id`): a LangChain tool span's input is not its
    arguments object, its ``ToolMessage`` output names the tool call that has them."""
    attrs = span.attributes
    if convention == "openinference":
        name = str(attrs.get("tool.name") or span.name)
        raw_in, raw_out = attrs.get("input.value"), attrs.get("output.value")
        json_out = attrs.get("output.mime_type") == "application/json"
        output = parse_json_text(raw_out) if json_out else raw_out
        message = flattened.tool_message(output)
        if message is not None:  # LangChain's ToolMessage: its content is what the tool returned
            arguments = flattened.tool_arguments(raw_in, output, calls or {})
            captured = raw_in is not None or raw_out is not None
            return ToolCall(name, arguments, message.get("content"), captured)
    else:
        name = str(
            attrs.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool ").strip() or span.name
        )
        raw_in, raw_out = attrs.get("gen_ai.tool.call.arguments"), attrs.get("gen_ai.tool.call.result")
        output = parse_json_text(raw_out)
    arguments = parse_json_text(raw_in)
    return ToolCall(
        name, arguments if arguments is not None else {}, output, raw_in is not None or raw_out is not None
    )
