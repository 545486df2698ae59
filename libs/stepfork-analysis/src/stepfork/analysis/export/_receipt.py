"""The receipt of ``stepfork run``: what the runner observed, written by the runner after the child exits.

Fields are those of spec/cli-reference.txt "run" (receipt_version 1), plus ``detail``: one sentence saying
why, for a human reading the file later. Verdicts: ``passed``, ``failed``, ``could_not_execute``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepfork.analysis._shared.atomic import write_text_atomically
from stepfork.trace._outputs import output_target_problem

RECEIPT_VERSION = 1
VERDICTS = ("passed", "failed", "could_not_execute")
# Why a check could not execute (spec "run"; entrypoint_unresolvable, entrypoint_uncallable,
# raise_as_unresolvable, not_exported and timeout go beyond the spec).
REASONS = (
    "bundle_missing",
    "bundle_unreadable",
    "check_error",
    "no_tests_collected",
    "pytest_unavailable",
    "pytest_error",
    "report_missing",
    "entrypoint_unresolvable",
    "entrypoint_uncallable",
    "raise_as_unresolvable",
    "not_exported",
    "timeout",
)
EXIT_CODES = {"passed": 0, "failed": 1, "could_not_execute": 2}
_MAX_RECEIPT_BYTES = 1 << 20  # a receipt is under 2 KiB: a bigger file is not one, unread
_BUNDLE_FILES = ("manifest.json", "events.jsonl", "redactions.json", "integrity.json")


@dataclass(frozen=True)
class Receipt:
    """One run of an exported test, as observed by the runner.

    Attributes:
        verdict: ``passed`` | ``failed`` | ``could_not_execute``.
        reason: None unless could_not_execute; one of :data:`REASONS`.
        exit_status: pytest's raw exit status, None when pytest was not launched or was stopped.
        bundle: the bundle path as named (by ``--bundle`` or the test's TRACE_PATH), None if unknown.
        bundle_digest: :func:`bundle_digest` of the bundle, None when it could not be read.
        test / test_sha256: the test path as given and the SHA-256 hex of its bytes.
        counts: ``{"tests", "failures", "errors", "skipped"}`` from the JUnit report (zeros without one).
        command: the pytest command line launched ([] when none was).
        duration_ms: wall time of the child process in milliseconds (0 when none ran).
        stepfork_version: the version of the runner.
        created_at: UTC ISO-8601 time with a ``Z`` suffix, whole seconds.
        detail: one human sentence explaining the verdict.
    """

    verdict: str
    reason: str | None
    exit_status: int | None
    bundle: str | None
    bundle_digest: str | None
    test: str
    test_sha256: str | None
    counts: dict[str, int] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    duration_ms: int = 0
    stepfork_version: str = ""
    created_at: str = ""
    detail: str = ""

    @property
    def exit_code(self) -> int:
        """The CLI exit code of this verdict: 0 passed, 1 failed, 2 could_not_execute (spec "run")."""
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        """The receipt JSON object, keys in the spec's order, then ``detail``."""
        return {
            "receipt_version": RECEIPT_VERSION,
            "verdict": self.verdict,
            "reason": self.reason,
            "exit_status": self.exit_status,
            "bundle": self.bundle,
            "bundle_digest": self.bundle_digest,
            "test": self.test,
            "test_sha256": self.test_sha256,
            "counts": dict(self.counts),
            "command": list(self.command),
            "duration_ms": self.duration_ms,
            "stepfork_version": self.stepfork_version,
            "created_at": self.created_at,
            "detail": self.detail,
        }

    def to_json(self) -> str:
        """The receipt as pretty-printed JSON text with a final newline."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def write(self, path: str | os.PathLike[str], *, replace: bool = True) -> Path:
        """Write the receipt atomically (temp file in the same directory, then rename); return the path.

        Missing parent directories are created. A new file gets mode ``0o666 & ~umask``; a replaced file
        keeps its permission bits (receipts are redacted: nothing in them needs 0600). With
        ``replace=False`` an existing file is refused instead (``FileExistsError``). This writes
        wherever it is told: :func:`receipt_target_problem` is the check ``stepfork run`` makes first.

        Raises:
            OSError: the directory cannot be created or written; ``FileExistsError`` as above.
        """
        target = Path(path)
        write_text_atomically(target, self.to_json(), replace=replace)
        return target


def is_receipt_file(path: Path) -> bool:
    """True when ``path`` is a regular file holding a receipt: a JSON object (at most 1 MiB) whose
    ``receipt_version`` is an integer and ``verdict`` one of :data:`VERDICTS`. Never raises.

    What ``stepfork run --receipt`` may replace without ``--overwrite`` (docs/decisions.md).
    """
    try:
        if not path.is_file() or path.stat().st_size > _MAX_RECEIPT_BYTES:
            return False
        value = json.loads(path.read_bytes())  # json only: the file is data, never executed
    except (OSError, ValueError, RecursionError):
        return False
    if not isinstance(value, dict):
        return False
    version = value.get("receipt_version")
    return isinstance(version, int) and not isinstance(version, bool) and value.get("verdict") in VERDICTS


def receipt_target_problem(
    path: str | os.PathLike[str], *, test: Path, bundle: Path | None, overwrite: bool
) -> str | None:
    """Why ``stepfork run`` must not write its receipt at ``path``, or None when it may.

    Checked before the test runs, so that a refusal wastes no run and writes nothing. Refused always:
    ``path`` names the test file (also through a symlink or hard link), or is or lies inside ``bundle``
    (the bundle the check reads; None when unknown), or lies inside any other bundle directory, or is a
    directory or another non-regular file (device, FIFO), or has a parent that is not a directory, or
    cannot be resolved (the shared rule: :func:`stepfork.trace._outputs.output_target_problem`). Refused
    unless ``overwrite``: ``path`` exists and is not a receipt (:func:`is_receipt_file`). A missing file,
    or an earlier receipt (re-running CI), is fine. Rule: docs/decisions.md, "`run --receipt` over an existing
    file".

    Returns:
        one line, ``refusing to write the receipt to <path>: <why>``, or None.
    """
    target = Path(path)
    where = f"refusing to write the receipt to {target}"
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        return f"{where}: the path cannot be resolved ({exc})"
    if resolved == test.resolve() or _same_file(target, test):
        return f"{where}: it is the test file"
    if bundle is not None:
        inside = bundle.resolve()
        if resolved == inside:
            return f"{where}: it is the bundle the check reads"
        if inside in resolved.parents:
            return f"{where}: it is inside the bundle the check reads"
    return output_target_problem(target, what="the receipt", overwrite=overwrite, is_previous=is_receipt_file)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def sha256_file(path: Path) -> str:
    """SHA-256 hex of a file's bytes, streamed in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def bundle_digest(bundle: Path) -> str:
    """A SHA-256 hex digest of a bundle's files: over ``"<name>\\0<sha256 of the file>\\n"`` for each of
    manifest.json, events.jsonl, redactions.json, integrity.json that exists, in that order.

    Raises:
        OSError: a file exists but cannot be read.
    """
    digest = hashlib.sha256()
    for name in _BUNDLE_FILES:
        member = bundle / name
        if member.is_file():
            digest.update(f"{name}\0{sha256_file(member)}\n".encode())
    return digest.hexdigest()
