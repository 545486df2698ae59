"""Saving a whole :class:`~stepfork.trace.bundle.Trace` as a bundle, atomically (notes 5, "Saving"):
``save_trace``, the manifest it writes (``build_manifest``) and the rule every bundle write applies before
replacing a directory (``bundle_replace_problem``). Every event and the manifest are redacted, the payload
hashes and the counts recomputed, and the files written through a temporary directory renamed into place.
Re-exported by :mod:`stepfork.trace.bundle`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from stepfork.trace import _files
from stepfork.trace._files import EVENTS_FILE, MANIFEST_FILE, REDACTIONS_FILE
from stepfork.trace.bundle_bytes import manifest_bytes, prepare_event, redactions_bytes
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.integrity import write_integrity
from stepfork.trace.models import (
    EnvironmentInfo,
    EventType,
    FailureInfo,
    RunStatus,
    TraceManifest,
    TraceTotals,
)
from stepfork.trace.redaction import Redactor

if TYPE_CHECKING:
    from stepfork.trace.bundle import Trace


def _count_totals(trace: Trace) -> TraceTotals:
    llm = sum(1 for e in trace.events if e.type == EventType.LLM_REQUEST)
    tools = sum(1 for e in trace.events if e.type == EventType.TOOL_CALL)
    return trace.totals.model_copy(
        update={"events": len(trace.events), "llm_calls": llm, "tool_calls": tools}
    )


def build_manifest(
    trace: Trace,
    *,
    status: RunStatus | str | None = None,
    failure: FailureInfo | None = None,
    environment: EnvironmentInfo | None = None,
) -> TraceManifest:
    """The manifest ``save_trace`` writes for ``trace`` (REFERENCE-API.md ``build_manifest``).

    Totals are recounted from the events (events, llm_calls, tool_calls; cost and duration kept);
    ``status``/``failure``/``environment`` replace the trace's fields when given (``failure`` is cleared
    when ``status`` is given without one and is not ``failed``). Raises pydantic.ValidationError when
    ``failure`` is not set exactly when the status is ``failed``.
    """
    update: dict[str, Any] = {"totals": _count_totals(trace)}
    if status is not None:
        update["status"] = RunStatus(status)
        update["failure"] = failure
    elif failure is not None:
        update["failure"] = failure
    if environment is not None:
        update["environment"] = environment
    data = {
        "run_id": trace.run_id,
        "agent_name": trace.agent_name,
        "created_at": trace.created_at,
        "status": trace.status,
        "failure": trace.failure,
        "environment": trace.environment,
        **update,
    }
    return TraceManifest(**data)


def _concurrency_file(
    trace: Trace, directory: Path, *, given: Mapping[str, bytes] | None = None
) -> tuple[str, ...]:
    """Write the concurrency facts attached to ``trace`` (a loaded bundle's, or a subset's) beside its
    events, limited to its events, and its minted spans (``minted.json``); return the extension file names
    written (for integrity.json). Nothing when the caller hands a file over in ``given`` (a redacted copy
    passes every listed extension file)."""
    from stepfork.trace.concurrency import EXTENSION_NAME, facts_of
    from stepfork.trace.minting import EXTENSION_NAME as MINTED
    from stepfork.trace.minting import minted_of

    written: list[str] = []
    minted = None if f"{MINTED}.json" in (given or {}) else minted_of(trace)
    if minted is not None:  # the minted spans travel with the trace too (a minimize candidate's)
        _files.write_file(directory / f"{MINTED}.json", _files.pretty_json(minted.to_json()))
        written.append(f"{MINTED}.json")
    name = f"{EXTENSION_NAME}.json"
    facts = None if name in (given or {}) else facts_of(trace)
    if facts is None:
        return tuple(written)
    ids = {event.id for event in trace.events}
    _files.write_file(directory / name, _files.pretty_json(facts.to_json(ids)))
    return (*written, name)


def save_trace(
    trace: Trace,
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    redactor: Redactor | None = None,
    status: RunStatus | str | None = None,
    failure: FailureInfo | None = None,
    environment: EnvironmentInfo | None = None,
    extra_files: Mapping[str, bytes] | None = None,
) -> Path:
    """Write ``trace`` as a bundle at ``path`` atomically and return the path (notes 5, "Saving").

    ``status``, ``failure`` and ``environment`` (REFERENCE-API.md ``save_trace``) replace the trace's own
    manifest fields in the written bundle only (see :func:`build_manifest`). ``extra_files`` maps extension
    file names (``sdk-versions.json``; already redacted bytes) to their content, written beside the payload
    files and listed in integrity.json.

    Redacts every event and the manifest, recomputes hashes and totals (events, llm_calls, tool_calls),
    writes the four files into ``.<name>.tmp-<hex>`` beside the target (integrity.json last), then renames
    it into place. ``trace`` is not changed. ``redactor``: a ``Redactor`` (None: the default one).

    Raises:
        TraceStorageError: ``invalid_path`` (no ``.sftrace`` suffix, or the path is a file),
            ``already_exists`` (a non-empty directory without ``overwrite``), ``not_a_bundle`` (with
            ``overwrite``, a directory that is not a bundle: :func:`bundle_replace_problem`),
            ``invalid_manifest`` (the
            manifest fields do not validate, e.g. failed without failure).
        RedactionError, CanonicalJsonError: see :func:`prepare_event`.
    """
    target = Path(path)
    replace = _files.check_target(target, overwrite=overwrite)
    try:
        manifest = build_manifest(trace, status=status, failure=failure, environment=environment)
    except ValidationError as exc:
        raise TraceStorageError(
            f"invalid manifest: {exc.errors()[0]['msg']}", code="invalid_manifest", path=str(target)
        ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _files.temp_name(target)
    tmp.mkdir()
    old: Path | None = None
    try:
        entries = list(trace.redactions)
        fd = os.open(tmp / EVENTS_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle:
            for event in trace.events:
                line, found = prepare_event(event, redactor)
                handle.write(line)
                entries.extend(found)
            handle.flush()
            os.fsync(handle.fileno())
        data, found = manifest_bytes(manifest, redactor)
        _files.write_file(tmp / MANIFEST_FILE, data)
        _files.write_file(tmp / REDACTIONS_FILE, redactions_bytes([*entries, *found]))
        extras = dict(extra_files or {})
        for name, content in extras.items():
            _files.write_file(tmp / name, content)
        write_integrity(tmp, (*extras, *_concurrency_file(trace, tmp, given=extras)))
        _files.fsync_dir(tmp)
        if replace:
            old = _files.temp_name(target, "old")
            os.rename(target, old)
        elif target.exists():
            target.rmdir()  # an empty directory
        os.rename(tmp, target)
    except BaseException:
        if old is not None and not target.exists():
            os.rename(old, target)
            old = None
        if tmp.exists():
            _files.remove_tree(tmp)
        raise
    if old is not None:
        _files.remove_tree(old)
    _files.fsync_dir(target.parent)
    return target


def bundle_replace_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the existing non-empty directory ``path`` may not be replaced by a bundle, or None.

    The rule every bundle write applies with ``overwrite`` (``save_trace``, :class:`BundleWriter`, so
    ``record``, ``fork``, ``minimize`` and the pytest plugin): only a directory that is a bundle (a
    ``manifest.json`` and nothing but bundle files) is replaced; a user's directory never is (issue 14).
    Commands call it before doing any work, so the refusal comes before a run, not after. Returns a
    one-line reason naming what the directory holds.
    """
    return _files.not_replaceable(Path(path))
