"""Reading OTLP trace data: JSON (documents and JSON lines), protobuf, or a directory of them (issue 15).

Decoding is ``opentelemetry-proto``'s (``TracesData`` / ``ExportTraceServiceRequest``, which share one wire
format) and protobuf's own ``json_format``; the only thing done by hand is OTLP/JSON's one deviation from
the protobuf JSON mapping: trace and span ids are hex strings, not base64 (OTLP specification, "JSON
Protobuf Encoding").

Accepted inputs:
- a ``{"resourceSpans": [...]}`` document (OTLP/HTTP JSON body, ``TracesData``);
- JSON lines of such documents: the Collector's file exporter and the OTel file exporter;
- OTLP protobuf bytes (a ``TracesData`` or ``ExportTraceServiceRequest`` message);
- a directory: every regular file in it, sorted by name (``.json``, ``.jsonl``, ``.pb``, ``.otlp``...).
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HEX = re.compile(r"^[0-9a-fA-F]*$")
_ID_KEYS = ("traceId", "spanId", "parentSpanId")


class OtlpDecodeError(ValueError):
    """The input is not OTLP trace data; the message names the file (and line) and the problem."""


@dataclass
class SpanEvent:
    """A span event: ``name``, ``time_ns`` (Unix epoch, ns) and its attributes as plain values."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass
class Span:
    """One span as plain Python values.

    Attributes:
        trace_id, span_id: lower-case hex; parent_id: hex or None for a root span.
        name; kind: the OTLP SpanKind number (1 internal ... 5 consumer, 0 unspecified).
        start_ns, end_ns: Unix epoch nanoseconds.
        attributes: ``{key: value}`` (str, bool, int, float, list, dict, bytes).
        events: the span's events, in order.
        status_code: 0 unset, 1 ok, 2 error; status_message: its description ("" when none).
        resource: the resource's attributes (``service.name``...); scope: the instrumentation scope name.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    status_code: int = 0
    status_message: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""


def any_value(value: Any) -> Any:
    """A protobuf ``AnyValue`` as a plain Python value (None when unset)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


def _hex_to_base64(document: Any) -> Any:
    """Rewrite the hex ids of an OTLP/JSON document into the base64 the protobuf JSON parser expects."""
    for resource_spans in document.get("resourceSpans") or ():
        for scope_spans in (
            resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans") or ()
        ):
            for span in scope_spans.get("spans") or ():
                for holder in (span, *(span.get("links") or ())):
                    for key in _ID_KEYS:
                        text = holder.get(key)
                        if isinstance(text, str) and text and len(text) in (16, 32) and _HEX.match(text):
                            holder[key] = base64.b64encode(bytes.fromhex(text)).decode("ascii")
    return document


def _parse_json_document(document: Any, where: str) -> Any:
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    if not isinstance(document, dict) or "resourceSpans" not in document:
        raise OtlpDecodeError(f'{where}: not OTLP trace data (no "resourceSpans")')
    try:
        return json_format.ParseDict(_hex_to_base64(document), TracesData(), ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise OtlpDecodeError(f"{where}: invalid OTLP JSON: {exc}") from None


def _messages(path: Path) -> Iterator[Any]:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    data = path.read_bytes()
    stripped = data.lstrip()
    if not stripped:
        return
    if stripped[:1] in (b"{", b"["):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise OtlpDecodeError(f"{path}: not UTF-8 JSON") from None
        try:
            yield _parse_json_document(json.loads(text), str(path))
            return
        except json.JSONDecodeError:
            pass  # JSON lines: one document per line
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    document = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise OtlpDecodeError(f"{path}:{number}: invalid JSON ({exc.msg})") from None
                yield _parse_json_document(document, f"{path}:{number}")
        return
    message = TracesData()
    try:
        message.ParseFromString(data)
    except DecodeError:
        raise OtlpDecodeError(f"{path}: neither OTLP JSON nor OTLP protobuf trace data") from None
    if not message.resource_spans:
        raise OtlpDecodeError(f"{path}: OTLP protobuf with no resource spans")
    yield message


def _files(source: Path) -> list[Path]:
    if source.is_dir():
        return sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith("."))
    if not source.exists():
        raise OtlpDecodeError(f"{source}: no such file or directory")
    return [source]


def read_spans(source: str | os.PathLike[str]) -> list[Span]:
    """Every span of the OTLP trace data at ``source`` (a file or a directory), in input order.

    Raises:
        OtlpDecodeError: a file is neither OTLP JSON nor OTLP protobuf trace data, or ``source`` is missing.
        ImportError: ``opentelemetry-proto`` is not installed (``pip install 'stepfork-analysis[otel]'``).
    """
    spans: list[Span] = []
    for path in _files(Path(source)):
        for message in _messages(path):
            for resource_spans in message.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for raw in scope_spans.spans:
                        spans.append(
                            Span(
                                trace_id=raw.trace_id.hex(),
                                span_id=raw.span_id.hex(),
                                parent_id=raw.parent_span_id.hex() or None,
                                name=raw.name,
                                kind=int(raw.kind),
                                start_ns=int(raw.start_time_unix_nano),
                                end_ns=int(raw.end_time_unix_nano),
                                attributes=_attributes(raw.attributes),
                                events=[
                                    SpanEvent(e.name, int(e.time_unix_nano), _attributes(e.attributes))
                                    for e in raw.events
                                ],
                                status_code=int(raw.status.code),
                                status_message=raw.status.message,
                                resource=resource,
                                scope=scope_spans.scope.name,
                            )
                        )
    return spans
