"""``stepfork export BUNDLE --otlp``: a bundle (or its replay, or a fork) to an OTLP/JSON file or an
OTLP/HTTP receiver (issue 15, docs/import.md "Export"); the spans are ``export.trace_spans``'s.
"""

from __future__ import annotations

import json
from typing import Any

from stepfork.analysis.otlp.export import otlp_json, send_otlp, trace_spans
from stepfork.trace.bundle import Trace


class OtlpExportError(ValueError):
    """The export cannot be made: ``code`` is ``unreadable_bundle``, ``invalid_output`` (``output`` is a
    bundle or lies inside one), ``already_exists``, ``write_failed``, ``send_failed`` or ``replay_failed``;
    the message is one line naming the problem."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


def export_otlp(
    bundle: str | Any,
    *,
    output: str | Any | None = None,
    endpoint: str | None = None,
    convention: str = "genai",
    entrypoint: str | None = None,
    overwrite: bool = False,
) -> list[Any]:
    """Export the run at ``bundle`` as OTLP: written to ``output`` (OTLP/JSON) and/or sent to ``endpoint``
    (OTLP/HTTP, the SDK's exporter). With ``entrypoint`` (``MODULE:FUNCTION``, trusted, as for replay) the
    bundle is replayed first (frozen) and the spans carry the replay's ``stepfork.replay.*`` attributes; a
    forked bundle's ``fork.json`` becomes ``stepfork.fork.*`` on the root span.

    Returns:
        The exported spans (``ReadableSpan``, root first).

    Raises:
        OtlpExportError: see its codes. ValueError: an unknown convention.
    """
    from pathlib import Path

    from stepfork.analysis._shared.atomic import write_text_atomically
    from stepfork.analysis.forking import read_fork_info
    from stepfork.trace._outputs import inside_bundle_problem
    from stepfork.trace.errors import TraceError

    inside = None if output is None else inside_bundle_problem(output, what="the spans")
    if inside is not None:  # before any replay: a bundle is never written into
        raise OtlpExportError(inside, code="invalid_output")
    path = Path(bundle)
    try:
        trace = Trace.load(path)
        fork = read_fork_info(path)
    except (TraceError, ValueError, OSError) as exc:
        raise OtlpExportError(f"cannot read the bundle {path}: {exc}", code="unreadable_bundle") from None
    replay = None
    if entrypoint is not None:
        from stepfork.replay.outcome import replay_entrypoint

        try:
            replay = replay_entrypoint(str(path), entrypoint)
        except Exception as exc:  # an unresolvable entrypoint, bad options: the replay never ran
            raise OtlpExportError(
                f"cannot replay {path} with {entrypoint}: {exc}", code="replay_failed"
            ) from None
    from stepfork.replay.imported import IMPORT_EXTENSION
    from stepfork.trace.bundle import read_extension

    try:
        imported = read_extension(path, IMPORT_EXTENSION)
    except (TraceError, ValueError, OSError):
        imported = None
    spans = trace_spans(
        trace,
        convention=convention,
        replay=replay,
        fork=fork,
        imported=imported if isinstance(imported, dict) else None,
    )
    if output is not None:
        target = Path(output)
        text = json.dumps(otlp_json(spans), ensure_ascii=False) + "\n"
        try:
            write_text_atomically(target, text, replace=overwrite)
        except FileExistsError:
            raise OtlpExportError(f"{target} exists (use --overwrite)", code="already_exists") from None
        except OSError as exc:
            raise OtlpExportError(f"cannot write {target}: {exc}", code="write_failed") from None
    if endpoint is not None and not send_otlp(spans, endpoint):
        raise OtlpExportError(f"the OTLP receiver at {endpoint} did not accept the spans", code="send_failed")
    return spans
