"""Run an exported regression test in a pytest subprocess and classify what happened (spec "run").

The verdict is ``passed``, ``failed`` (the check ran and disagreed: a caught regression) or
``could_not_execute`` (the check never ran or could not be built), which pytest's exit status alone does
not separate. Before launching, the runner resolves what it can name from the test's literals, read with
:mod:`ast` and never imported: the bundle (TRACE_PATH or ``--bundle``) and, beyond the spec, the
ENTRYPOINT module and attribute, found with :class:`importlib.machinery.PathFinder` against IMPORT_ROOT and
``sys.path`` without executing any module, and likewise each class RAISE_AS names. The receipt is written
by the runner after the child exits.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stepfork.analysis.receipt import Receipt, bundle_digest, sha256_file

__all__ = ["RunInputError", "run_exported_test", "resolve_entrypoint_location"]


class RunInputError(ValueError):
    """Nothing to run: the test file cannot be read (missing, not a file, not UTF-8) or an option is invalid.

    Attributes:
        code: ``test_missing``, ``test_unreadable`` or ``invalid_timeout``.
        path: the test path as given (empty for an invalid option).
    """

    def __init__(self, message: str, *, code: str, path: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.path = path


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _version() -> str:
    from stepfork.trace._version import __version__

    return __version__


def resolve_entrypoint_location(entrypoint: str, import_root: Path | None) -> str | None:
    """Check that ``MODULE:FUNCTION`` can be found without importing anything; return a problem or None.

    The module is located with ``PathFinder`` over ``[import_root, *sys.path]`` one dotted part at a time
    (packages are not executed). When the module is a ``.py`` source, the attribute (its first part for
    ``mod:Cls.run``) must be bound at its top level (def, class, assignment, import, also inside if/try/
    with/for blocks); a module defining ``__getattr__`` or using ``import *`` gets the benefit of the
    doubt. Returns None when found, else the problem in the words of spec "replay" (Common errors).
    """
    module_name, sep, attribute = entrypoint.partition(":")
    if not sep or not module_name or not all(part.isidentifier() for part in attribute.split(".")):
        return f"invalid entrypoint {entrypoint!r}; expected the form MODULE:FUNCTION"
    search: list[str] = ([str(import_root)] if import_root is not None else []) + [p or "." for p in sys.path]
    spec = None
    for part in module_name.split("."):
        if not part.isidentifier():
            return f"invalid entrypoint {entrypoint!r}; expected the form MODULE:FUNCTION"
        spec = importlib.machinery.PathFinder.find_spec(part, search)
        if spec is None:
            return f"cannot import module {module_name!r}"
        search = list(spec.submodule_search_locations or [])
    if spec is None:  # pragma: no cover - guarded by the partition above
        return f"cannot import module {module_name!r}"
    origin = spec.origin
    if origin and origin.endswith(".py") and os.path.isfile(origin):
        try:
            tree = ast.parse(Path(origin).read_bytes(), filename=origin)
        except (SyntaxError, ValueError):
            return f"cannot import module {module_name!r} (syntax error in {origin})"
        if not _binds(tree, attribute.split(".")[0]):
            return f"module {module_name!r} has no attribute {attribute!r}"
    return None


def _binds(tree: ast.Module, name: str) -> bool:
    """True when module-level code (including if/try/with/for blocks, not function bodies) binds ``name``,
    or defines ``__getattr__`` or star-imports (then the attribute may exist: benefit of the doubt)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in (name, "__getattr__"):
                return True
            continue
        targets: list[ast.AST] = []
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any(a.name == "*" or (a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
        elif isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            targets = [node.target]
        elif isinstance(node, ast.With | ast.AsyncWith):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return True
        stack.extend(
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case)
        )
    return False


def _junit_counts(report: Path) -> tuple[dict[str, int], str]:
    """Counts and the first failure/error message of a JUnit XML report written by our pytest child."""
    root = ET.parse(report).getroot()  # noqa: S314 - our own child's report in our temp dir
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in counts:
            counts[key] += int(suite.get(key, "0") or 0)
    message = ""
    for case in root.iter("testcase"):
        for kind in ("failure", "error"):
            element = case.find(kind)
            lines = (element.get("message") or "").strip().splitlines() if element is not None else []
            if lines and not message:
                message = lines[0]
    return counts, message


def run_exported_test(
    test: str | os.PathLike[str],
    *,
    bundle: str | os.PathLike[str] | None = None,
    receipt_path: str | os.PathLike[str] | None = None,
    pytest_args: Sequence[str] = (),
    timeout_seconds: float | None = None,
) -> Receipt:
    """Run ``test`` with ``sys.executable -m pytest`` and return (and optionally write) its receipt.

    Args:
        test: the pytest file ``stepfork export`` wrote.
        bundle: the bundle to pre-check instead of the test's TRACE_PATH (resolved against the test's dir).
        receipt_path: where to write the receipt JSON (atomically, after the child exits).
        pytest_args: extra arguments appended to the pytest command line.
        timeout_seconds: stop the child (its whole process group) after this long: could_not_execute.

    Raises:
        RunInputError: the test file is missing or unreadable (nothing to classify), or
            ``timeout_seconds`` is not a positive number of seconds (``invalid_timeout``).
        OSError: the receipt cannot be written.
    """
    if timeout_seconds is not None and not timeout_seconds > 0:  # also refuses NaN
        raise RunInputError(
            f"--timeout-seconds must be a positive number of seconds, not {timeout_seconds}",
            code="invalid_timeout",
        )
    test_path = Path(test)
    if not test_path.is_file():
        raise RunInputError(f"test file not found: {test_path}", code="test_missing", path=str(test_path))
    try:
        source = test_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunInputError(
            f"cannot read test file {test_path}: {exc}", code="test_unreadable", path=str(test_path)
        ) from exc
    base: dict[str, Any] = {
        "test": str(test),
        "test_sha256": sha256_file(test_path),
        "bundle": None if bundle is None else str(bundle),
        "bundle_digest": None,
        "stepfork_version": _version(),
    }
    receipt = _classify(test_path, source, base, bundle, pytest_args, timeout_seconds)
    if receipt_path is not None:
        receipt.write(receipt_path)
    return receipt


def _stop(base: dict[str, Any], reason: str, detail: str, **extra: Any) -> Receipt:
    fields = {"exit_status": None, "counts": _zero(), "command": [], "duration_ms": 0, **base, **extra}
    return Receipt(verdict="could_not_execute", reason=reason, detail=detail, created_at=_now(), **fields)


def _zero() -> dict[str, int]:
    return {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}


def _classify(
    test_path: Path,
    source: str,
    base: dict[str, Any],
    bundle: str | os.PathLike[str] | None,
    pytest_args: Sequence[str],
    timeout_seconds: float | None,
) -> Receipt:
    from stepfork.analysis.exported import read_exported_constants

    here = test_path.resolve().parent
    try:
        constants = read_exported_constants(source, filename=str(test_path))
    except (ValueError, SyntaxError) as exc:
        constants = {}
        if bundle is None:
            return _stop(base, "check_error", f"cannot read the test's constants: {exc}")
    if bundle is None:
        named = constants.get("TRACE_PATH")
        if named is None:
            return _stop(base, "bundle_missing", "the test names no TRACE_PATH; pass --bundle")
        base["bundle"] = named
        bundle_path = here / named
    else:
        bundle_path = Path(bundle)
    if not bundle_path.is_dir():
        return _stop(
            base,
            "bundle_missing",
            f"the bundle this test names is not there: {base['bundle']}; the check cannot run, "
            "so this is not a regression",
        )
    from stepfork.trace.validation import validate_bundle

    verdict = validate_bundle(bundle_path, strict=False)
    if verdict.unreadable:
        codes = ", ".join(sorted({issue.code for issue in verdict.issues}))
        return _stop(base, "bundle_unreadable", f"the bundle cannot be read ({codes}): {base['bundle']}")
    base["bundle_digest"] = bundle_digest(bundle_path)

    entrypoint = constants.get("ENTRYPOINT")
    root = constants.get("IMPORT_ROOT")
    import_root = None if root is None else here / root
    if isinstance(entrypoint, str):
        problem = resolve_entrypoint_location(entrypoint, import_root)
        if problem is not None:
            return _stop(
                base,
                "entrypoint_unresolvable",
                f"the entrypoint this test runs cannot be resolved: {problem}; the check cannot run, "
                "so this is not a regression",
            )
    problem = _raise_as_problem(constants.get("RAISE_AS"), import_root)
    if problem is not None:
        return _stop(
            base,
            "raise_as_unresolvable",
            f"{problem}; the check cannot run, so this is not a regression",
        )
    if importlib.util.find_spec("pytest") is None:
        return _stop(base, "pytest_unavailable", f"pytest is not installed for {sys.executable}")
    return _launch(test_path, base, pytest_args, timeout_seconds)


def _raise_as_problem(raise_as: Any, import_root: Path | None) -> str | None:
    """Why the test's RAISE_AS literal cannot be used (its shape, or a class that cannot be located
    without importing anything, as ENTRYPOINT is), or None. A test without RAISE_AS has no problem."""
    from stepfork.analysis.exported import check_raise_as

    try:
        classes = check_raise_as(raise_as)
    except ValueError as exc:
        return f"the test's {exc}"
    for key, target in (classes or {}).items():
        problem = resolve_entrypoint_location(target, import_root)
        if problem is not None:
            problem = problem.replace("invalid entrypoint", "invalid class")
            return f"the class RAISE_AS names for {key!r} cannot be resolved: {problem}"
    return None


def _launch(
    test_path: Path, base: dict[str, Any], pytest_args: Sequence[str], timeout_seconds: float | None
) -> Receipt:
    with tempfile.TemporaryDirectory(prefix="stepfork-run-") as tmp:
        report = Path(tmp) / "report.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            str(test_path),
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            *pytest_args,
        ]
        shown = [arg if arg != f"--junitxml={report}" else "--junitxml=<report>" for arg in command]
        started = time.monotonic()
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            output, _ = child.communicate(timeout=timeout_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            child.communicate()
            elapsed = int((time.monotonic() - started) * 1000)
            return _stop(
                base,
                "timeout",
                f"the check was stopped after {timeout_seconds} s",
                command=shown,
                duration_ms=elapsed,
            )
        elapsed = int((time.monotonic() - started) * 1000)
        status = child.returncode
        fields = {**base, "exit_status": status, "command": shown, "duration_ms": elapsed}
        if not report.is_file():
            tail = output.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            # pytest exit statuses: 3 internal error, 4 usage error, 5 nothing collected.
            reason = {3: "pytest_error", 4: "pytest_error", 5: "no_tests_collected"}.get(
                status, "report_missing"
            )
            return _verdict(
                "could_not_execute", reason, f"pytest wrote no report: {tail[0]}", fields, _zero()
            )
        try:
            counts, message = _junit_counts(report)
        except (ET.ParseError, ValueError) as exc:
            return _verdict(
                "could_not_execute", "report_missing", f"unreadable report: {exc}", fields, _zero()
            )
    return _from_status(status, counts, message, fields)


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        child.kill()


def _verdict(
    verdict: str, reason: str | None, detail: str, fields: dict[str, Any], counts: dict[str, int]
) -> Receipt:
    return Receipt(verdict=verdict, reason=reason, detail=detail, counts=counts, created_at=_now(), **fields)


def _from_status(status: int, counts: dict[str, int], message: str, fields: dict[str, Any]) -> Receipt:
    """Map pytest's exit status and JUnit counts to a verdict (the table of spec "run")."""
    if status == 5 or (status in (0, 1) and counts["tests"] == 0):
        return _verdict(
            "could_not_execute", "no_tests_collected", "pytest collected no tests", fields, counts
        )
    if counts["errors"] > 0 or status == 2:
        detail = f"a fixture or collection error: {message}" if message else "a fixture or collection error"
        return _verdict("could_not_execute", "check_error", detail, fields, counts)
    if status == 0 and counts["failures"] == 0:
        return _verdict("passed", None, "the check ran and agreed", fields, counts)
    if status == 1 and counts["failures"] > 0:
        detail = f"the check ran and disagreed: {message}" if message else "the check ran and disagreed"
        return _verdict("failed", None, detail, fields, counts)
    return _verdict(
        "could_not_execute", "pytest_error", f"pytest exited with status {status}", fields, counts
    )
