"""Calls imported from OpenTelemetry spans: partial inputs and content that was never captured (issue 15).

A bundle made by ``stepfork import`` (:mod:`stepfork.analysis.otlp`) may hold LLM calls whose request the
instrumentation recorded only in part (opentelemetry-instrumentation-openai-v2 records the messages and
sampling parameters, not ``tools``), or not at all (the GenAI instrumentations' default). The extension
file ``otel-import.json`` (docs/import.md, never new event fields) states it per call event id::

    {"schema": 1, "convention": "genai", "calls": {
        "<llm_request id>": {"content_captured": true, "fields": ["model", "messages", "temperature"],
                             "normalize": {"messages": "genai"}},
        "<llm_request id>": {"content_captured": false, "fields": []}}}

``fields`` null (or absent) means the whole request is held. Replay matches a partial call on the held
request-body fields only and reports it as ``match="partial"`` (the report, ``executed_calls``), never as
a full match. A call without content fails with ``content_not_captured`` (exit 2), one line saying how to
turn capture on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stepfork.replay.errors import ReplayError

IMPORT_EXTENSION = "otel-import"
"""Name of the extension file (``otel-import.json``) written by ``stepfork import``."""

CAPTURE_HINT = {
    "genai": (
        "set OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental and "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only where the agent runs"
    ),
    "openinference": "unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS where the agent runs",
}
"""How to turn content capture on, per convention (the instrumentations' own settings)."""


@dataclass(frozen=True, slots=True)
class ImportedCall:
    """What an imported call holds: ``content_captured``, the held body ``fields`` (None: all of it) and
    the ``normalize`` rule per field (``{"messages": "genai"}``: compared in the GenAI message form)."""

    content_captured: bool = True
    fields: tuple[str, ...] | None = None
    normalize: Mapping[str, str] | None = None

    @property
    def partial(self) -> bool:
        """True when the call holds part of the request only."""
        return self.content_captured and self.fields is not None


class ImportedCalls:
    """The ``otel-import.json`` of a bundle: ``{call event id: ImportedCall}`` and the convention."""

    __slots__ = ("calls", "convention")

    def __init__(self, data: Any) -> None:
        """``data``: the extension's JSON (anything else gives an empty table)."""
        self.convention = "genai"
        self.calls: dict[str, ImportedCall] = {}
        if not isinstance(data, dict):
            return
        if isinstance(data.get("convention"), str):
            self.convention = data["convention"]
        calls = data.get("calls")
        for event_id, info in calls.items() if isinstance(calls, dict) else ():
            if not isinstance(info, dict):
                continue
            fields = info.get("fields")
            normalize = info.get("normalize")
            self.calls[str(event_id)] = ImportedCall(
                content_captured=info.get("content_captured") is not False,
                fields=tuple(str(f) for f in fields) if isinstance(fields, list) else None,
                normalize=dict(normalize) if isinstance(normalize, dict) else None,
            )

    def get(self, event_id: str) -> ImportedCall | None:
        """The imported call of ``event_id``, or None (a full, ordinary call)."""
        return self.calls.get(event_id)


def content_not_captured(kind: str, label: str, index: int, convention: str) -> ReplayError:
    """The one-line ``content_not_captured`` error of a frozen replay reaching call ``index`` (0-based)
    of ``kind`` (``llm``/``tool``)."""
    hint = CAPTURE_HINT.get(convention, CAPTURE_HINT["genai"])
    what = "LLM call" if kind == "llm" else "tool call"
    return ReplayError(
        f"call #{index + 1}: {what} {label!r} was imported from a trace recorded without content, "
        f"so there is no response to serve; to record content, {hint}, then import the new trace",
        code="content_not_captured",
    )


def project_input(value: Any, info: ImportedCall) -> Any:
    """The part of a live HTTP-capture input ``{"method", "path", "headers", "body"}`` that ``info`` holds:
    the body keeps only the held fields, normalized as the import stored them. Other shapes pass as is."""
    if info.fields is None or not isinstance(value, dict) or not isinstance(value.get("body"), dict):
        return value
    body = value["body"]
    kept: dict[str, Any] = {}
    for name in info.fields:
        if name in body:
            rule = (info.normalize or {}).get(name)
            field = body[name]
            if rule == "genai":
                field = normalize_messages(field) if name == "messages" else normalize_tools(field)
            kept[name] = field
    return {**value, "body": kept}


# -- OpenAI Chat Completions messages <-> GenAI semconv messages ----------------------------------------


def parse_json_text(value: Any) -> Any:
    """``value`` parsed with ``json.loads`` when it is a string holding JSON, else ``value`` unchanged
    (a string that is not JSON, or any other value). Never raises.

    Span attributes hold structured values (messages, tool arguments, outputs) as JSON text or as plain
    text, depending on the instrumentation: one reader for both, here and in stepfork.analysis.otlp.
    """
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text_of(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return []


def openai_to_genai(messages: Any) -> list[dict[str, Any]]:
    """OpenAI Chat Completions ``messages`` as GenAI semconv input messages (``role`` + ``parts``), as
    the GenAI instrumentations record them (text parts, ``tool_call``, ``tool_call_response``)."""
    out: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", ""))
        parts: list[dict[str, Any]] = []
        if role == "tool":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "response": message.get("content"),
                }
            )
        else:
            parts.extend({"type": "text", "content": text} for text in _text_of(message.get("content")))
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                parts.append(
                    {
                        "type": "tool_call",
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": parse_json_text(function.get("arguments")),
                    }
                )
        out.append({"role": role, "parts": parts})
    return out


def _canonical_text(value: Any) -> str:
    """Tool arguments or a tool result as text, JSON re-serialized canonically (sorted keys, compact) when
    it is JSON: instrumentations store them as objects or as the SDK's text, with any spacing."""
    if isinstance(value, str):
        text: str = value
        try:
            value = json.loads(text)
        except ValueError:
            return text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def genai_to_openai(messages: Any) -> list[dict[str, Any]]:
    """GenAI semconv messages as OpenAI Chat Completions messages (the inverse of :func:`openai_to_genai`
    on what both forms express: text, tool calls and tool results; other parts are dropped)."""
    out: list[dict[str, Any]] = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", ""))
        parts = [p for p in message.get("parts") or () if isinstance(p, dict)]
        responses = [p for p in parts if p.get("type") == "tool_call_response"]
        if responses:
            for part in responses:
                # semconv's "response"; pydantic-ai writes "result"
                response = part["response"] if "response" in part else part.get("result")
                out.append(
                    {"role": "tool", "tool_call_id": part.get("id"), "content": _canonical_text(response)}
                )
            continue
        texts = [str(p.get("content", "")) for p in parts if p.get("type") == "text"]
        converted: dict[str, Any] = {"role": role, "content": "".join(texts) if texts else None}
        calls = [p for p in parts if p.get("type") == "tool_call"]
        if calls:
            converted["tool_calls"] = [
                {
                    "id": p.get("id"),
                    "type": "function",
                    "function": {"name": p.get("name"), "arguments": _canonical_text(p.get("arguments"))},
                }
                for p in calls
            ]
        out.append(converted)
    return out


def normalize_messages(messages: Any) -> list[dict[str, Any]]:
    """``messages`` reduced to what the GenAI form records (OpenAI -> GenAI -> OpenAI): the form an
    imported GenAI call stores, and the form a live call is compared in."""
    return genai_to_openai(openai_to_genai(messages))


def normalize_tools(tools: Any) -> list[Any]:
    """Tool definitions in the GenAI form (``{"type", "name", "description", "parameters"}``), from
    OpenAI's ``{"type": "function", "function": {...}}`` or already in that form."""
    out: list[Any] = []
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            out.append(
                {
                    "type": tool.get("type", "function"),
                    "name": function.get("name"),
                    "description": function.get("description"),
                    "parameters": function.get("parameters"),
                }
            )
        elif isinstance(tool, dict):
            out.append(
                {
                    "type": tool.get("type", "function"),
                    "name": tool.get("name"),
                    "description": tool.get("description"),
                    "parameters": tool.get("parameters"),
                }
            )
    return out


def streamed_output(request: Any, completion: Any) -> dict[str, Any]:
    """The HTTP capture's output (stepfork.integrations._http_exchange) of the Chat Completions
    ``request`` body given its traced response ``completion`` (a ``chat.completion`` JSON object).

    A streamed request (``"stream": true``) gets the capture's SSE form built from the one accumulated
    completion the instrumentations keep of a stream: one content/tool-call delta per choice, a finish
    chunk per choice, the usage chunk when ``stream_options.include_usage`` asked for it, then ``[DONE]``
    (the text and tool calls of the stream, not its chunk boundaries). Anything else: the JSON form
    ``{"status": 200, "headers", "json": completion}``. The one builder of both forms, used on import
    (stepfork.analysis.otlp) and when replay serves a call whose trace did not record ``stream``
    (:func:`served_output`)."""
    if not (isinstance(request, dict) and request.get("stream") is True and isinstance(completion, dict)):
        return {"status": 200, "headers": {"content-type": "application/json"}, "json": completion}
    base = {
        "id": completion.get("id", "chatcmpl-imported"),
        "object": "chat.completion.chunk",
        "created": completion.get("created", 0),
        "model": completion.get("model", request.get("model")),
    }
    events: list[dict[str, Any]] = []
    finals: list[dict[str, Any]] = []
    for position, choice in enumerate(completion.get("choices") or ()):
        message = choice.get("message") or {} if isinstance(choice, dict) else {}
        index = choice.get("index", position) if isinstance(choice, dict) else position
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(calls)]
        events.append(
            {"data": {**base, "choices": [{"index": index, "delta": delta, "finish_reason": None}]}}
        )
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        finals.append({"index": index, "delta": {}, "finish_reason": reason or "stop"})
    events.extend({"data": {**base, "choices": [final]}} for final in finals)
    wants_usage = (request.get("stream_options") or {}).get("include_usage") is True
    if wants_usage and isinstance(completion.get("usage"), dict):
        events.append({"data": {**base, "choices": [], "usage": completion["usage"]}})
    events.append({"text": "[DONE]"})
    sse = {"end": "finished", "event_count": len(events), "events": events, "error": None}
    return {"status": 200, "headers": {"content-type": "text/event-stream"}, "sse": sse}


def served_output(info: ImportedCall, recorded: Any, live_input: Any) -> Any:
    """What replay serves for an imported LLM call: ``recorded`` (its output), or, when the trace did not
    record whether the request was streamed (``stream`` not among the held ``fields``: the GenAI
    instrumentations never record it) and the live request asks for a stream, the same completion in the
    SSE form of :func:`streamed_output` built for the live request body. The SDK then reads the stream it
    asked for, as it read it in production."""
    if info.fields is None or "stream" in info.fields:
        return recorded
    body = live_input.get("body") if isinstance(live_input, dict) else None
    completion = recorded.get("json") if isinstance(recorded, dict) else None
    if not isinstance(body, dict) or body.get("stream") is not True or not isinstance(completion, dict):
        return recorded
    if completion.get("object") != "chat.completion":
        return recorded
    return streamed_output(body, completion)


def import_summary(data: Any) -> dict[str, int] | None:
    """Counts over an ``otel-import.json`` (None when ``data`` is not one): ``calls`` listed,
    ``not_captured`` (no content) and ``partial`` (part of the request held)."""
    if not isinstance(data, dict) or not isinstance(data.get("calls"), dict):
        return None
    table = ImportedCalls(data)
    return {
        "calls": len(table.calls),
        "not_captured": sum(1 for c in table.calls.values() if not c.content_captured),
        "partial": sum(1 for c in table.calls.values() if c.partial),
    }


def import_warnings(data: Any) -> list[tuple[str, str]]:
    """``(code, message)`` warnings of an imported bundle's ``otel-import.json`` for ``validate`` and
    ``inspect``: calls recorded without content (a frozen replay fails when it reaches one) and calls
    holding part of their request (matched on those fields only)."""
    summary = import_summary(data)
    if summary is None:
        return []
    convention = data.get("convention") if isinstance(data.get("convention"), str) else "genai"
    out: list[tuple[str, str]] = []
    if summary["not_captured"]:
        hint = CAPTURE_HINT.get(convention, CAPTURE_HINT["genai"])
        out.append(
            (
                "content_not_captured",
                f"{summary['not_captured']} of {summary['calls']} imported calls were recorded without "
                f"content; a frozen replay cannot serve them (to record content, {hint})",
            )
        )
    if summary["partial"]:
        out.append(
            (
                "partial_input",
                f"{summary['partial']} imported LLM calls hold part of their request only; replay "
                "matches them on the held fields (reported as matched on partial input)",
            )
        )
    return out
