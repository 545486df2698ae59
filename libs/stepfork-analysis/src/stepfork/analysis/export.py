"""Pytest export: generate a regression test from a bundle, safely, and read its constants back.

The generated module holds trace-derived data **only as Python literals** (``repr`` of JSON values and
strings) in module-level constants, and a fixed test body that calls
:func:`stepfork.replay.run_regression_case`. Before anything is written the source is parsed with
:mod:`ast` and every constant is checked (:func:`read_exported_constants`): a tool name or value holding
quotes, newlines, triple quotes, braces or code stays data. Rules: spec/cli-reference.txt "export";
interop/REFERENCE-NOTES.md section 6 "Export".

The two path constants are the only expressions, of exactly one shape each, so that ``stepfork run`` and
``stepfork score`` can read them without importing the test::

    HERE = Path(__file__).resolve().parent
    TRACE_PATH = HERE / 'notify.sftrace'      # a str literal, relative to the test file (posix separators)
    IMPORT_ROOT = HERE / '..'                 # or None: resolve ENTRYPOINT against sys.path only
"""

from __future__ import annotations

import ast
import os
import pprint
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepfork.analysis.exported import CONSTANT_NAMES, HERE_EXPRESSION, read_exported_constants

if TYPE_CHECKING:  # pragma: no cover - re-exported lazily by __getattr__ below
    from stepfork.replay.entrypoint import EntrypointError, resolve_entrypoint
    from stepfork.replay.regression import run_regression_case
__all__ = [
    "CONSTANT_NAMES",
    "EXPORT_MODES",
    "EntrypointError",
    "ExportError",
    "ExportExistsError",
    "ExportResult",
    "default_output_path",
    "export_pytest_test",
    "generate_pytest_source",
    "load_expectation_file",
    "load_trajectory_file",
    "read_exported_constants",
    "resolve_entrypoint",
    "run_regression_case",
]

# Modes a generated test may use (spec/replay.txt "Modes"; hybrid is Python-API only but valid in a test).
EXPORT_MODES = ("frozen", "live", "forbidden", "manual", "hybrid")


# Re-exported from stepfork.replay lazily (PEP 562), so reading constants never imports the replay stack.
_REPLAY_NAMES = {
    "EntrypointError": "stepfork.replay.entrypoint",
    "resolve_entrypoint": "stepfork.replay.entrypoint",
    "run_regression_case": "stepfork.replay.regression",
}


def __getattr__(name: str) -> Any:
    """Return a replay name re-exported here (spec hybrid-replay.txt: importable from stepfork.export)."""
    if name in _REPLAY_NAMES:
        from importlib import import_module

        return getattr(import_module(_REPLAY_NAMES[name]), name)
    raise AttributeError(f"module 'stepfork.analysis.export' has no attribute {name!r}")


class ExportError(ValueError):
    """Export cannot produce a test.

    Attributes:
        code: ``invalid_mode``, ``invalid_option``, ``invalid_trace``, ``invalid_expectation``,
            ``invalid_trajectory``, ``missing_entrypoint``, ``unsafe_source``, ``write_failed`` or
            ``already_exists``. The CLI maps ``already_exists``/``write_failed`` to exit 1, the rest to 2
            (interop/REFERENCE-NOTES.md section 4 table).
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
    """

    def __init__(self, path: Path, expectation: Any, has_expectation: bool, expectation_source: str) -> None:
        self.path = path
        self.expectation = expectation
        self.has_expectation = has_expectation
        self.expectation_source = expectation_source

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


def default_output_path(trace_path: str | os.PathLike[str]) -> Path:
    """``./test_<trace stem>_regression.py`` in the working directory (spec "export", ``--output``)."""
    stem = Path(trace_path).name.removesuffix(".sftrace")
    return Path(f"test_{_identifier(stem)}_regression.py")


def _identifier(text: str) -> str:
    """A lowercase ASCII identifier fragment of ``text`` (names only; never embeds data in code)."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    return cleaned or "trace"


def _literal(value: Any, what: str) -> str:
    """The Python literal of a JSON value, checked to read back to the same value with ast.literal_eval."""
    source = pprint.pformat(value, width=100, sort_dicts=False)
    try:
        back = ast.literal_eval(source)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ExportError(f"{what} cannot be written as a literal: {exc}", code="unsafe_source") from exc
    if repr(back) != repr(value):
        raise ExportError(f"{what} does not round-trip as a literal", code="unsafe_source")
    return source


def _relative_posix(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


def generate_pytest_source(
    *,
    trace_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    entrypoint: str,
    expectation: Any = None,
    has_expectation: bool = True,
    trajectory_expectation: Any = None,
    mode: str = "frozen",
    live_llms: Iterable[str] | None = None,
    allow_live_tools: Iterable[str] | None = None,
    import_root: str | os.PathLike[str] | None = None,
    expectation_source: str | None = None,
) -> str:
    """Return the source of a pytest module that replays ``trace_path`` through ``entrypoint``.

    Paths are embedded relative to ``output_path``'s directory, so the test and bundle can move together.
    ``expectation_source`` (``"file"``, ``"recorded"`` or ``"none"``; default ``"file"``, or ``"none"``
    without an expectation) is embedded as EXPECTATION_SOURCE so that ``stepfork score`` can tell a
    reviewed expectation from a copy of the recorded run (spec "score": "no expectation to score").
    ``expectation`` and ``trajectory_expectation`` are JSON values embedded as literals (the caller
    redacts them; :func:`export_pytest_test` does). Sets are written as sorted lists.

    Raises:
        ExportError: ``invalid_mode`` for a mode outside :data:`EXPORT_MODES`; ``invalid_option`` when
            ``allow_live_tools`` is given without mode live or ``live_llms`` without mode hybrid (the
            "only valid" rule of interop/REFERENCE-API.md); ``missing_entrypoint`` for an empty
            entrypoint; ``unsafe_source`` when the generated module fails the literal check.
    """
    if mode not in EXPORT_MODES:
        raise ExportError(f"Invalid replay mode {mode}.", code="invalid_mode")
    if not entrypoint:
        raise ExportError(
            "An executable regression test needs --entrypoint MODULE:FUNCTION.", code="missing_entrypoint"
        )
    live = sorted(set(live_llms)) if live_llms else None
    tools = sorted(set(allow_live_tools)) if allow_live_tools else None
    if tools and mode != "live":
        raise ExportError("--allow-live-tool is only valid with --mode live.", code="invalid_option")
    if live and mode != "hybrid":
        raise ExportError("live_llms is only valid with mode hybrid.", code="invalid_option")

    if expectation_source is None:
        expectation_source = "file" if has_expectation else "none"
    if expectation_source not in ("file", "recorded", "none"):
        raise ExportError(f"unknown expectation source {expectation_source!r}", code="invalid_option")
    out_dir = Path(output_path).parent
    trace_rel = _relative_posix(Path(trace_path), out_dir)
    root_src = "None"
    if import_root is not None:
        root_src = f"HERE / {_literal(_relative_posix(Path(import_root), out_dir), 'IMPORT_ROOT')}"
    stem = _identifier(Path(trace_path).name.removesuffix(".sftrace"))
    values = {
        "ENTRYPOINT": _literal(entrypoint, "ENTRYPOINT"),
        "MODE": _literal(mode, "MODE"),
        "LIVE_LLMS": _literal(live, "LIVE_LLMS"),
        "ALLOW_LIVE_TOOLS": _literal(tools, "ALLOW_LIVE_TOOLS"),
        "EXPECTATION": _literal(expectation, "EXPECTATION"),
        "HAS_EXPECTATION": _literal(bool(has_expectation), "HAS_EXPECTATION"),
        "EXPECTATION_SOURCE": _literal(expectation_source, "EXPECTATION_SOURCE"),
        "TRAJECTORY_EXPECTATION": _literal(trajectory_expectation, "TRAJECTORY_EXPECTATION"),
    }
    constants = "\n".join(f"{name} = {source}" for name, source in values.items())
    source = f'''"""Stepfork regression test, generated by `stepfork export`.

Edit the constants, not the test body: `stepfork run` and `stepfork score` read them with ast.
"""

from pathlib import Path

from stepfork.export import run_regression_case

HERE = {HERE_EXPRESSION}
TRACE_PATH = HERE / {_literal(trace_rel, "TRACE_PATH")}
IMPORT_ROOT = {root_src}
{constants}


def test_stepfork_regression_{stem}() -> None:
    run_regression_case(
        trace_path=TRACE_PATH,
        import_root=IMPORT_ROOT,
        entrypoint=ENTRYPOINT,
        expectation=EXPECTATION,
        has_expectation=HAS_EXPECTATION,
        trajectory_expectation=TRAJECTORY_EXPECTATION,
        mode=MODE,
        live_llms=set(LIVE_LLMS) if LIVE_LLMS else None,
        allow_live_tools=set(ALLOW_LIVE_TOOLS) if ALLOW_LIVE_TOOLS else None,
    )
'''
    try:
        read_exported_constants(source)
    except ValueError as exc:
        raise ExportError(f"generated test failed the literal check: {exc}", code="unsafe_source") from exc
    return source


def load_expectation_file(path: str | os.PathLike[str]) -> Any:
    """Read an ``--expect-output`` JSON file and return its value, redacted (interop notes section 3).

    Raises:
        ExportError: ``invalid_expectation`` with ``--expect-output is not valid JSON: <detail>.`` when
            the file cannot be read or parsed.
    """
    from stepfork.trace.canonical import loads_json
    from stepfork.trace.redaction import redact_json

    try:
        value = loads_json(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise ExportError(
            f"--expect-output is not valid JSON: {exc}.", code="invalid_expectation", path=str(path)
        ) from exc
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


def _recorded_output(trace: Any) -> tuple[bool, Any]:
    """(found, output) of the last completed run_end in ``trace`` (interop notes section 6 "Export")."""
    for event in reversed(trace.events):
        if getattr(event, "type", None) == "run_end" and str(event.run_status) == "completed":
            return True, event.output
    return False, None


def export_pytest_test(
    *,
    trace_path: str | os.PathLike[str],
    entrypoint: str,
    output_path: str | os.PathLike[str] | None = None,
    expectation: Any = None,
    has_expectation: bool | None = None,
    trajectory_expectation: Any = None,
    mode: str = "frozen",
    live_llms: Iterable[str] | None = None,
    allow_live_tools: Iterable[str] | None = None,
    import_root: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
) -> ExportResult:
    """Validate the bundle strictly, generate the test and write it atomically.

    ``has_expectation=None`` means "decide": with an ``expectation`` it is asserted; without one the
    recorded run output (redacted) is asserted, or nothing when the run has no completed output.
    ``import_root`` defaults to the working directory (where ``--entrypoint`` resolves).

    Returns:
        an :class:`ExportResult` (``expectation_source`` says which expectation was embedded).

    Raises:
        ExportError: ``invalid_trace`` when the bundle is unreadable or fails strict validation, the
            codes of :func:`generate_pytest_source`, ``write_failed`` on an OS error.
        ExportExistsError: the destination exists and ``overwrite`` is false (never overwritten).
    """
    from stepfork.trace.bundle import Trace
    from stepfork.trace.models import ToolCall
    from stepfork.trace.redaction import redact_json
    from stepfork.trace.validation import validate_bundle

    trace_file = Path(trace_path)
    result = validate_bundle(trace_file, strict=True)
    if not result.valid:
        codes = ", ".join(sorted({issue.code for issue in result.issues}))
        raise ExportError(
            f"Export requires a bundle that passes strict validation ({codes}).",
            code="invalid_trace",
            path=str(trace_file),
        )
    trace = Trace.load(trace_file)
    tool_names = {e.name for e in trace.events if isinstance(e, ToolCall)}
    unknown = sorted(set(allow_live_tools or ()) - tool_names)
    if unknown:
        raise ExportError(
            f"--allow-live-tool names a tool the trace never calls: {', '.join(unknown)}.",
            code="invalid_option",
        )

    source_kind = "file"
    if has_expectation is None:
        if expectation is not None:
            has_expectation = True
        else:
            found, recorded = _recorded_output(trace)
            has_expectation = found
            expectation = redact_json(recorded).value if found else None
            source_kind = "recorded" if found else "none"
    else:
        expectation = redact_json(expectation).value if expectation is not None else None
        source_kind = "file" if has_expectation else "none"

    destination = Path(output_path) if output_path is not None else default_output_path(trace_file)
    source = generate_pytest_source(
        trace_path=trace_file,
        output_path=destination,
        entrypoint=entrypoint,
        expectation=expectation,
        has_expectation=has_expectation,
        trajectory_expectation=trajectory_expectation,
        mode=mode,
        live_llms=live_llms,
        allow_live_tools=allow_live_tools,
        import_root=Path.cwd() if import_root is None else import_root,
        expectation_source=source_kind,
    )
    _write_atomically(destination, source, overwrite=overwrite)
    return ExportResult(destination, expectation, bool(has_expectation), source_kind)


def _write_atomically(destination: Path, source: str, *, overwrite: bool) -> None:
    """Write via a temp file in the same directory; ``os.link`` refuses an existing file when not
    overwriting (no check-then-write race), ``os.replace`` replaces it when overwriting."""
    if destination.exists() and not overwrite:
        raise ExportExistsError(destination)
    directory = destination.parent if str(destination.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise ExportError(f"cannot write {destination}: {exc}", code="write_failed") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(source)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, destination)
        else:
            try:
                os.link(tmp, destination)
            except FileExistsError:
                raise ExportExistsError(destination) from None
    except OSError as exc:
        raise ExportError(f"cannot write {destination}: {exc}", code="write_failed") from exc
    finally:
        tmp.unlink(missing_ok=True)
