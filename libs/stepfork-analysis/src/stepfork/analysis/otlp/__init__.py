"""OpenTelemetry traces in: ``import_otlp`` turns OTLP spans into Stepfork traces (issue 15, docs/import.md).

Needs the ``otel`` extra (``pip install 'stepfork-analysis[otel]'``: opentelemetry-proto for decoding).

    traces = import_otlp("spans.jsonl")            # list[ImportedTrace], one per OTel trace
    traces[0].save("run.sftrace")                   # redacted like a recording, + otel-import.json
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr

from stepfork.analysis.otlp.concurrency import FILE_NAME as FACTS_FILE
from stepfork.analysis.otlp.decode import OtlpDecodeError, Span, read_spans
from stepfork.replay.imported import IMPORT_EXTENSION
from stepfork.trace import _files
from stepfork.trace.bundle import Trace, save_trace
from stepfork.trace.concurrency import ConcurrencyFacts, attach_facts
from stepfork.trace.models import EnvironmentInfo, FailureInfo, RunStatus
from stepfork.trace.redaction import Redactor, redact_json

__all__ = ["CONVENTIONS", "ImportedTrace", "OtlpDecodeError", "OtlpImportError", "import_otlp"]

CONVENTIONS = ("auto", "genai", "openinference")
IMPORT_FILE = f"{IMPORT_EXTENSION}.json"


class OtlpImportError(ValueError):
    """The spans hold no trace to import (none at all, or not the ``trace_id`` asked for)."""


class ImportedTrace(Trace):
    """A ``Trace`` imported from OpenTelemetry spans; ``import_info`` is its ``otel-import.json``
    (per call: ``content_captured``, the held request ``fields``; stepfork.replay.imported)."""

    _import_info: dict[str, Any] = PrivateAttr(default_factory=dict)
    _facts: dict[str, Any] = PrivateAttr(default_factory=dict)
    _skipped: dict[str, int] = PrivateAttr(default_factory=dict)

    @property
    def concurrency(self) -> dict[str, Any]:
        """The JSON of the bundle's ``concurrency.json``: the concurrency facts read from the span times
        (stepfork.analysis.otlp.concurrency)."""
        return self._facts

    @property
    def import_info(self) -> dict[str, Any]:
        """The JSON of the bundle's ``otel-import.json``."""
        return self._import_info

    @property
    def trace_id(self) -> str:
        """The OpenTelemetry trace id (32 hex digits)."""
        return str(self._import_info.get("trace_id", ""))

    def not_captured(self) -> int:
        """How many calls were recorded without content."""
        calls = self._import_info.get("calls", {})
        return sum(1 for info in calls.values() if info.get("content_captured") is False)

    def skipped_calls(self) -> dict[str, int]:
        """``{convention: n}``: the LLM and tool spans of another convention than the ``convention``
        asked for, which it ignored (empty for ``"auto"``, which reads every span; docs/import.md)."""
        return dict(self._skipped)

    def partial(self) -> int:
        """How many LLM calls hold part of their request only."""
        calls = self._import_info.get("calls", {})
        return sum(
            1 for info in calls.values() if info.get("content_captured") is not False and "fields" in info
        )

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        status: RunStatus | str | None = None,
        failure: FailureInfo | None = None,
        environment: EnvironmentInfo | None = None,
        overwrite: bool = False,
        redactor: Redactor | None = None,
    ) -> Path:
        """Save as a bundle (redacted like a recording: ``save_trace``) with ``otel-import.json`` (redacted
        too) and ``concurrency.json`` written beside it and listed in ``integrity.json``. Raises as
        :func:`save_trace`."""
        info = redact_json(self._import_info).value
        extras = {IMPORT_FILE: _files.pretty_json(info)}
        if self._facts:
            extras[FACTS_FILE] = _files.pretty_json(self._facts)
        return save_trace(
            self,
            path,
            overwrite=overwrite,
            redactor=redactor,
            status=status,
            failure=failure,
            environment=environment,
            extra_files=extras,
        )


def import_otlp(
    source: str | os.PathLike[str],
    *,
    trace_id: str | None = None,
    convention: str = "auto",
    agent_name: str | None = None,
) -> list[ImportedTrace]:
    """Import the OTLP trace data at ``source`` (file or directory; docs/import.md) as Stepfork traces.

    Args:
        source: OTLP JSON (document or JSON lines), OTLP protobuf, or a directory of such files.
        trace_id: import this trace only (32 hex digits, case-insensitive).
        convention: ``"auto"``, ``"genai"`` or ``"openinference"`` (which attributes are read).
        agent_name: the bundles' agent name (default: the resource's ``service.name``).

    Returns:
        One :class:`ImportedTrace` per OTel trace, in the order their first span appears.

    Raises:
        OtlpDecodeError: the input is not OTLP trace data (names the file and the problem).
        OtlpImportError: no spans, or no trace ``trace_id``.
        ValueError: an unknown ``convention``.
        ImportError: opentelemetry-proto is missing (the ``otel`` extra).
    """
    from stepfork.analysis.otlp.build import build_trace

    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r} (expected one of: {', '.join(CONVENTIONS)})")
    groups: dict[str, list[Span]] = defaultdict(list)
    for span in read_spans(source):
        groups[span.trace_id].append(span)
    if not groups:
        raise OtlpImportError(f"{source}: no spans found")
    if trace_id is not None:
        wanted = trace_id.lower()
        if wanted not in groups:
            known = ", ".join(list(groups)[:5])
            raise OtlpImportError(f"{source}: no trace {trace_id!r} (traces: {known})")
        groups = {wanted: groups[wanted]}
    traces: list[ImportedTrace] = []
    for spans in groups.values():
        trace, info, facts = build_trace(spans, convention=convention, agent_name=agent_name)
        imported = ImportedTrace.model_validate(trace.model_dump())
        imported._import_info = info
        imported._facts = facts
        imported._skipped = _skipped_calls(spans, convention)
        attach_facts(imported, ConcurrencyFacts.parse(facts))  # an in-memory replay reads them too
        traces.append(imported)
    return traces


def _skipped_calls(spans: list[Span], convention: str) -> dict[str, int]:
    """``{other convention: n}``: the LLM and tool spans ``convention`` ignores (none for ``auto``)."""
    from stepfork.analysis.otlp import conventions as conv

    skipped: dict[str, int] = {}
    if convention == "auto":
        return skipped
    for span in spans:
        found = conv.convention_of(span)
        if found in (None, "stepfork", convention):
            continue
        assert found is not None
        if conv.role_of(span, found) in ("llm", "tool"):
            skipped[found] = skipped.get(found, 0) + 1
    return skipped
