"""Spans that ``stepfork export --otlp`` wrote, read back exactly (issue 15).

Their ``stepfork.*`` attributes hold the recorded payloads as canonical JSON, so an export followed by an
import gives back the same calls; ``stepfork.imported`` keeps an imported call's partial and
content-not-captured marks.
"""

from __future__ import annotations

import json

from stepfork.analysis.otlp.conventions import LLMCall, ToolCall
from stepfork.analysis.otlp.decode import Span
from stepfork.replay.imported import parse_json_text


def stepfork_llm(span: Span) -> LLMCall:
    """An LLM span Stepfork exported: the exact recorded input and output (``stepfork.input`` /
    ``stepfork.output``, canonical JSON), provider, model and token counts; a full call."""
    attrs = span.attributes
    output = json.loads(attrs["stepfork.output"]) if "stepfork.output" in attrs else None
    usage = {k: attrs.get(f"stepfork.{k}") for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    provider = attrs.get("stepfork.provider")
    mark = parse_json_text(attrs.get("stepfork.imported"))  # a call that was itself imported: keep its marks
    mark = mark if isinstance(mark, dict) else {}
    return LLMCall(
        str(provider) if provider else "",
        str(attrs.get("stepfork.model") or "unknown"),
        json.loads(attrs.get("stepfork.input", "null")),
        output,
        {k: v if isinstance(v, int) else None for k, v in usage.items()},
        content_captured=mark.get("content_captured") is not False,
        fields=mark["fields"] if isinstance(mark.get("fields"), list) else None,
        normalize=mark["normalize"] if isinstance(mark.get("normalize"), dict) else None,
        missing="stepfork.output" not in attrs,
    )


def stepfork_tool(span: Span) -> ToolCall:
    """A tool span Stepfork exported: its exact name, input and output."""
    attrs = span.attributes
    output = json.loads(attrs["stepfork.output"]) if "stepfork.output" in attrs else None
    mark = parse_json_text(attrs.get("stepfork.imported"))
    return ToolCall(
        str(attrs.get("stepfork.name") or span.name),
        json.loads(attrs.get("stepfork.input", "null")),
        output,
        content_captured=not (isinstance(mark, dict) and mark.get("content_captured") is False),
        missing="stepfork.output" not in attrs and "stepfork.error_type" not in attrs,
    )
