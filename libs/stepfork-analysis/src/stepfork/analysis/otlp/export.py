"""Recorded runs out: a bundle (and optionally its replay) as OpenTelemetry spans (issue 15, docs/import.md).

The run becomes a root span (OpenInference ``AGENT`` / GenAI ``invoke_agent``), each LLM call an LLM /
``chat`` span and each tool call a TOOL / ``execute_tool`` span, parented as the events are. Besides the
convention's attributes (what a viewer shows), every span carries ``stepfork.*`` attributes: the event id
and step, the exact recorded input and output as canonical JSON (``stepfork.input`` / ``stepfork.output``),
provider and model, the recorded failure, and for a replay its mode, ``stepfork.replay.action``
(``substituted``/``executed``/``not_reached``), ``stepfork.replay.match`` and the divergence. Importing an
exported file reads those first, so export -> import gives back the same calls, inputs and outputs.

Spans are the OTel SDK's ``ReadableSpan``; the file is written with the SDK's OTLP protobuf encoder
(opentelemetry-exporter-otlp-proto-common) in the OTLP/JSON mapping, and ``send_otlp`` uses the SDK's
OTLP/HTTP exporter.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from stepfork.replay.imported import openai_to_genai
from stepfork.trace.bundle import Trace
from stepfork.trace.canonical import canonical_json

EXPORT_CONVENTIONS = ("genai", "openinference")
_RUN_ID = re.compile(r"^run_([0-9a-f]{32})$")
OI_NAMES = {
    "/chat/completions": "ChatCompletion",
    "/completions": "Completion",
    "/responses": "Response",
    "/embeddings": "Embedding",
    "/messages": "Messages",
}


def _ns(value: datetime) -> int:
    return int(value.timestamp() * 1_000_000) * 1000


def _hex(text: str, digits: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:digits]


def trace_id_of(run_id: str) -> str:
    """The OTel trace id of a run: the hex of ``run_<32 hex>`` (an imported run keeps its id), else a hash."""
    found = _RUN_ID.match(run_id)
    return found.group(1) if found else _hex(run_id, 32)


def _dumps(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _mime(value: Any) -> str:
    return "text/plain" if isinstance(value, str) else "application/json"


class _Call:
    __slots__ = ("end", "error", "kind", "request", "result")

    def __init__(self, request: Any) -> None:
        self.request = request
        self.result: Any = None
        self.error: Any = None
        self.kind = "llm" if request.type.value == "llm_request" else "tool"
        self.end = request.timestamp


def _pair(trace: Trace) -> tuple[list[_Call], Any, Any, Any]:
    calls: dict[str, _Call] = {}
    order: list[_Call] = []
    start = end = failure = None
    for event in trace.events:
        kind = event.type.value
        if kind == "run_start":
            start = event
        elif kind == "run_end":
            end = event
        elif kind in ("llm_request", "tool_call"):
            calls[event.id] = _Call(event)
            order.append(calls[event.id])
        elif kind in ("llm_response", "tool_result") and event.parent_id in calls:
            call = calls[event.parent_id]
            call.result, call.end = event, event.timestamp
        elif kind == "error":
            if event.parent_id in calls:
                calls[event.parent_id].error = event
                calls[event.parent_id].end = event.timestamp
            else:
                tool = next(
                    (c for c in order if c.result is not None and c.result.id == event.parent_id), None
                )
                if tool is not None:
                    tool.error = event
                elif failure is None:
                    failure = event
    return order, start, end, failure


def _flat(prefix: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """``{"parent": {"run_id": x}}`` as ``{"<prefix>.parent.run_id": x}``; lists as JSON text."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}.{key}"
        if isinstance(item, Mapping):
            out.update(_flat(name, item))
        elif isinstance(item, str | int | float | bool):
            out[name] = item
        elif item is not None:
            out[name] = json.dumps(item, ensure_ascii=False, sort_keys=True)
    return out


def _llm_attributes(call: _Call, convention: str) -> tuple[str, dict[str, Any]]:
    request = call.request
    data = request.input if isinstance(request.input, dict) else {}
    body = data.get("body") if isinstance(data.get("body"), dict) else None
    path = str(data.get("path") or "")
    output = call.result.output if call.result is not None else None
    response = output.get("json") if isinstance(output, dict) and "json" in output else output
    attrs: dict[str, Any] = {}
    if convention == "openinference":
        name = next((n for suffix, n in OI_NAMES.items() if path.split("?")[0].endswith(suffix)), "LLM")
        attrs.update(
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": request.model,
                "input.value": _text(body if body is not None else request.input),
                "input.mime_type": "application/json",
            }
        )
        if request.provider:
            attrs["llm.provider"] = request.provider
        if call.result is not None:
            attrs["output.value"] = _text(response)
            attrs["output.mime_type"] = _mime(response)
            for key, attr in (("prompt_tokens", "prompt"), ("completion_tokens", "completion")):
                if getattr(call.result, key) is not None:
                    attrs[f"llm.token_count.{attr}"] = getattr(call.result, key)
        return name, attrs
    attrs.update({"gen_ai.operation.name": "chat", "gen_ai.request.model": request.model})
    if request.provider:
        attrs["gen_ai.provider.name"] = request.provider
    messages = (body or {}).get("messages")
    if isinstance(messages, list):
        attrs["gen_ai.input.messages"] = json.dumps(openai_to_genai(messages))
    choices = response.get("choices") if isinstance(response, dict) else None
    if isinstance(choices, list):
        out = []
        for choice in choices:
            message = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(message, dict):
                (converted,) = openai_to_genai([message])
                out.append({**converted, "finish_reason": choice.get("finish_reason")})
        attrs["gen_ai.output.messages"] = json.dumps(out)
    if call.result is not None:
        for key, attr in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
            if getattr(call.result, key) is not None:
                attrs[f"gen_ai.usage.{attr}"] = getattr(call.result, key)
    return f"chat {request.model}", attrs


def _tool_attributes(call: _Call, convention: str) -> tuple[str, dict[str, Any]]:
    request = call.request
    output = call.result.output if call.result is not None else None
    if convention == "openinference":
        attrs = {
            "openinference.span.kind": "TOOL",
            "tool.name": request.name,
            "input.value": _text(request.input),
            "input.mime_type": _mime(request.input),
        }
        if call.result is not None:
            attrs["output.value"] = _text(output)
            attrs["output.mime_type"] = _mime(output)
        return request.name, attrs
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": request.name,
        "gen_ai.tool.call.arguments": _text(request.input),
    }
    if call.result is not None:
        attrs["gen_ai.tool.call.result"] = _text(output)
    return f"execute_tool {request.name}", attrs


def trace_spans(
    trace: Trace,
    *,
    convention: str = "genai",
    replay: Any = None,
    fork: Mapping[str, Any] | None = None,
    imported: Mapping[str, Any] | None = None,
) -> list[Any]:
    """The spans of ``trace`` as OTel SDK ``ReadableSpan`` objects (root first, then calls in order).

    Args:
        trace: the recorded (or imported, or forked) run.
        convention: ``"genai"`` or ``"openinference"``: which attributes the spans carry for viewers.
        replay: a :class:`stepfork.replay.outcome.ReplayOutcome` of this bundle: its mode, each call's
            action and match, and the divergence go into ``stepfork.replay.*`` attributes.
        fork: the bundle's ``fork.json`` (lineage), written as ``stepfork.fork.*`` on the root span.
        imported: the bundle's ``otel-import.json``: each call's entry rides along as ``stepfork.imported``
            (JSON), so a re-import keeps partial input and content-not-captured marks.

    Raises:
        ValueError: an unknown convention.
    """
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    if convention not in EXPORT_CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r} (expected genai or openinference)")
    from stepfork.trace._version import __version__

    calls, start, end, failure = _pair(trace)
    # a run keeps one trace id (its spans replace themselves when exported again); a replay is a new
    # trace, so a viewer shows it beside the run (stepfork.replay.of_trace_id links them)
    trace_hex = trace_id_of(trace.run_id) if replay is None else secrets.token_hex(16)
    resource = Resource.create({"service.name": trace.agent_name})
    scope = InstrumentationScope("stepfork", __version__)

    def context(event_id: str) -> Any:
        span_hex = _hex(f"{trace_hex}:{event_id}" if replay is not None else event_id, 16)
        return SpanContext(int(trace_hex, 16), int(span_hex, 16), False, TraceFlags(TraceFlags.SAMPLED))

    root_id = start.id if start is not None else trace.run_id
    root_ctx = context(root_id)
    served: dict[int, Any] = {}
    divergence_index = None
    if replay is not None:
        served = {call.index: call for call in replay.calls}
        diagnostic = replay.matching.diagnostic
        if replay.matching.status == "DIVERGED" and diagnostic is not None:
            divergence_index = diagnostic.index

    spans: list[Any] = []
    call_ids = {c.request.id for c in calls}
    for index, call in enumerate(calls):
        request = call.request
        name, attrs = (_llm_attributes if call.kind == "llm" else _tool_attributes)(call, convention)
        attrs.update(
            {
                "stepfork.kind": call.kind,
                "stepfork.event_id": request.id,
                "stepfork.step": request.step,
                "stepfork.input": _dumps(request.input),
            }
        )
        if call.kind == "llm":
            attrs["stepfork.model"] = request.model
            if request.provider:
                attrs["stepfork.provider"] = request.provider
        else:
            attrs["stepfork.name"] = request.name
        mark = ((imported or {}).get("calls") or {}).get(request.id)
        if isinstance(mark, dict):
            attrs["stepfork.imported"] = _dumps(mark)
        if call.result is not None:
            attrs["stepfork.output"] = _dumps(call.result.output)
            attrs["stepfork.status"] = call.result.status.value
            for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
                if getattr(call.result, key, None) is not None:
                    attrs[f"stepfork.{key}"] = getattr(call.result, key)
        events = []
        status = Status(StatusCode.OK)
        if call.error is not None:
            attrs["stepfork.status"] = "error"
            attrs["stepfork.error_type"] = call.error.error_type
            attrs["stepfork.error_message"] = call.error.message
            events.append(
                Event(
                    "exception",
                    {"exception.type": call.error.error_type, "exception.message": call.error.message},
                    _ns(call.error.timestamp),
                )
            )
            status = Status(StatusCode.ERROR, call.error.message)
        if replay is not None:
            attrs["stepfork.replay.mode"] = replay.mode
            done = served.get(index)
            attrs["stepfork.replay.action"] = done.action if done is not None else "not_reached"
            if done is not None:
                attrs["stepfork.replay.match"] = done.match
            if index == divergence_index:
                attrs["stepfork.replay.divergence"] = replay.matching.message or replay.matching.code or ""
                if replay.matching.code:
                    attrs["stepfork.replay.divergence_code"] = replay.matching.code
        parent = request.parent_id
        parent_ctx = context(parent) if parent in call_ids else root_ctx
        spans.append(
            ReadableSpan(
                name=name,
                context=context(request.id),
                parent=parent_ctx,
                resource=resource,
                attributes=attrs,
                events=events,
                kind=SpanKind.CLIENT if call.kind == "llm" else SpanKind.INTERNAL,
                status=status,
                start_time=_ns(request.timestamp),
                end_time=_ns(call.end),
                instrumentation_scope=scope,
            )
        )

    run_input = start.input if start is not None else None
    run_output = end.output if end is not None else None
    root_attrs: dict[str, Any] = {
        "stepfork.kind": "run",
        "stepfork.run_id": trace.run_id,
        "stepfork.agent_name": trace.agent_name,
        "stepfork.run_status": trace.status.value,
        "stepfork.run_end_status": end.run_status.value if end is not None else "",
        "stepfork.input": _dumps(run_input),
        "stepfork.output": _dumps(run_output),
    }
    if convention == "openinference":
        root_attrs.update({"openinference.span.kind": "AGENT", "input.value": _text(run_input)})
        root_attrs["input.mime_type"] = _mime(run_input)
        if run_output is not None:
            root_attrs.update({"output.value": _text(run_output), "output.mime_type": _mime(run_output)})
        root_name = trace.agent_name
    else:
        root_attrs.update({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": trace.agent_name})
        root_name = f"invoke_agent {trace.agent_name}"
    if replay is not None:
        root_attrs["stepfork.replay.of_trace_id"] = trace_id_of(trace.run_id)
        root_attrs["stepfork.replay.mode"] = replay.mode
        root_attrs["stepfork.replay.matching"] = replay.matching.status
        root_attrs["stepfork.replay.behavior"] = replay.behavior.status
        root_attrs["stepfork.replay.exit_code"] = replay.exit_code
        if replay.matching.status == "DIVERGED":
            root_attrs["stepfork.replay.divergence"] = replay.matching.message or ""
    root_attrs.update(_flat("stepfork.fork", fork or {}))
    root_events = []
    root_status = Status(StatusCode.OK)
    root_attrs["stepfork.run_start"] = start is not None
    root_attrs["stepfork.run_error"] = failure is not None  # a run-level error event (not a call's)
    if trace.failure is not None:
        root_attrs["stepfork.error_type"] = trace.failure.type
        root_attrs["stepfork.error_message"] = trace.failure.message
        root_attrs["stepfork.failure_step"] = trace.failure.step
        when = _ns(end.timestamp) if end is not None else _ns(trace.created_at)
        root_events.append(
            Event(
                "exception",
                {"exception.type": trace.failure.type, "exception.message": trace.failure.message},
                when,
            )
        )
        root_status = Status(StatusCode.ERROR, trace.failure.message)
    begin = _ns(start.timestamp) if start is not None else _ns(trace.created_at)
    finish = _ns(end.timestamp) if end is not None else max([begin, *(s.end_time for s in spans)])
    root = ReadableSpan(
        name=root_name,
        context=root_ctx,
        parent=None,
        resource=resource,
        attributes=root_attrs,
        events=root_events,
        kind=SpanKind.INTERNAL,
        status=root_status,
        start_time=begin,
        end_time=max(finish, begin),
        instrumentation_scope=scope,
    )
    return [root, *spans]


def otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """The OTLP/JSON document ``{"resourceSpans": [...]}`` of ``spans`` (the SDK's protobuf encoder, then
    protobuf's JSON mapping with OTLP/JSON's hex trace and span ids)."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    document: dict[str, Any] = json_format.MessageToDict(encode_spans(spans))
    for resource_spans in document.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return document


def send_otlp(spans: Sequence[Any], endpoint: str, *, timeout: float = 10.0) -> bool:
    """Send ``spans`` to the OTLP/HTTP ``endpoint`` (``http://host:4318/v1/traces``) with the OTel SDK's
    exporter; True when the receiver accepted them."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
    try:
        return bool(exporter.export(list(spans)) == SpanExportResult.SUCCESS)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
