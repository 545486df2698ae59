"""The files around a pytest export: its errors and result, the reviewed JSON inputs it reads
(``--expect-output``, ``--expect-trajectory``) and the atomic write of the generated test.

Split from :mod:`stepfork.analysis.export` (code generation) to keep modules small; everything public here
is re-exported there, which stays the import path (spec "export"; interop/REFERENCE-NOTES.md section 6).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from stepfork.analysis._shared.atomic import write_text_atomically

__all__ = [
    "ExportError",
    "ExportExistsError",
    "ExportResult",
    "load_expectation_file",
    "load_trajectory_file",
    "write_atomically",
]


class ExportError(ValueError):
    """Export cannot produce a test.

    Attributes:
        code: ``invalid_mode``, ``invalid_option``, ``invalid_trace``, ``invalid_expectation``,
            ``invalid_trajectory``, ``missing_entrypoint``, ``invalid_entrypoint`` (not
            ``MODULE:FUNCTION``), ``missing_argument`` (the entrypoint cannot be called with the recorded
            run input), ``program_bundle`` (an entrypoint test of a bundle recorded from a program by
            ``stepfork record --``), ``unsafe_source``, ``write_failed`` or ``already_exists``. The CLI
            maps ``already_exists``/``write_failed`` to exit 1, the rest to 2 (interop/REFERENCE-NOTES.md
            section 4 table).
        path: the file concerned, when one is.
    """

    def __init__(self, message: str, *, code: str, path: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.path = path


class ExportExistsError(ExportError):
    """The destination exists and ``overwrite`` was not given (message: ``<path> already exists; ...``)."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path} already exists; pass --overwrite to replace it.", code="already_exists", path=str(path)
        )


class ExportResult:
    """What :func:`export_pytest_test` wrote; it also behaves as the written :class:`~pathlib.Path`.

    Attributes:
        path: the written test file.
        expectation: the (redacted) expectation embedded, or None when there is none.
        has_expectation: whether the test asserts an output.
        expectation_source: ``"file"`` (--expect-output), ``"recorded"`` (the recorded run output), or
            ``"none"`` (the recorded run has no completed output; only replay conformance is checked).
        raise_as_unmatched: the ``raise_as`` keys that match no failure the replay serves (written all
            the same: a mapping may serve many bundles; for one bundle often a typo).
    """

    def __init__(
        self,
        path: Path,
        expectation: Any,
        has_expectation: bool,
        expectation_source: str,
        raise_as_unmatched: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self.expectation = expectation
        self.has_expectation = has_expectation
        self.expectation_source = expectation_source
        self.raise_as_unmatched = raise_as_unmatched

    # The reference's export_pytest_test returns the written Path (interop/REFERENCE-API.md); the result
    # stands in for it: os.fspath(), str(), == and Path attributes (read_text, name...) go to ``path``.
    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ExportResult):
            return self.path == other.path
        return self.path == other

    def __hash__(self) -> int:
        return hash(self.path)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "path":
            raise AttributeError(name)
        return getattr(self.path, name)


def load_expectation_file(path: str | os.PathLike[str]) -> Any:
    """Read an ``--expect-output`` JSON file and return its value, redacted (interop notes section 3).

    Raises:
        ExportError: ``invalid_expectation`` with the one-line reason of
            :func:`stepfork.analysis._shared.expectation.read_expect_output` when the file cannot be read
            or parsed.
    """
    from stepfork.analysis._shared.expectation import read_expect_output
    from stepfork.trace.redaction import redact_json

    try:
        value = read_expect_output(path)
    except ValueError as exc:
        raise ExportError(str(exc), code="invalid_expectation", path=str(path)) from None
    return redact_json(value).value


def load_trajectory_file(path: str | os.PathLike[str]) -> Any:
    """Read and check an ``--expect-trajectory`` JSON file (the shape of ``assert_trajectory``).

    Raises:
        ExportError: ``invalid_trajectory`` with ``Invalid --expect-trajectory: <detail>`` when the file
            is unreadable, not JSON, or of an unsupported shape.
    """
    from stepfork.replay.assertions import validate_trajectory_expectation
    from stepfork.trace.canonical import loads_json
    from stepfork.trace.redaction import redact_json

    try:
        value = loads_json(Path(path).read_bytes())
        validate_trajectory_expectation(value)
    except (OSError, ValueError, TypeError) as exc:
        raise ExportError(
            f"Invalid --expect-trajectory: {exc}", code="invalid_trajectory", path=str(path)
        ) from exc
    return redact_json(value).value


def write_atomically(destination: Path, source: str, *, overwrite: bool) -> None:
    """Write the generated test ``source`` to ``destination`` atomically
    (:mod:`stepfork.analysis._shared.atomic`: temp file in the same directory; a new file gets
    ``0o666 & ~umask``, a replaced one keeps its mode).

    Without ``overwrite`` an existing file is never replaced (``os.link`` refuses it, no check-then-write
    race); with it, ``os.replace`` replaces it.

    Raises:
        ExportError: ``invalid_option`` when ``destination`` is a bundle or lies inside one, even with
            ``overwrite`` (:func:`stepfork.trace._outputs.inside_bundle_problem`); ``write_failed`` when it
            is a directory, device or FIFO (with or without ``overwrite``: docs/cli.md "export") and on any
            other OS error (permissions, disk).
        ExportExistsError: ``destination`` exists and ``overwrite`` is false.
    """
    from stepfork.trace._outputs import inside_bundle_problem

    inside = inside_bundle_problem(destination, what="the test")
    if inside is not None:
        raise ExportError(inside, code="invalid_option", path=str(destination))
    if destination.exists() and not destination.is_file():  # --overwrite would not replace it either
        raise ExportError(
            f"cannot write {destination}: {destination} exists and is not a regular file; it is not replaced",
            code="write_failed",
            path=str(destination),
        )
    if destination.exists() and not overwrite:
        raise ExportExistsError(destination)
    try:
        write_text_atomically(destination, source, replace=overwrite)
    except FileExistsError:
        raise ExportExistsError(destination) from None
    except OSError as exc:
        raise ExportError(f"cannot write {destination}: {exc}", code="write_failed") from exc
