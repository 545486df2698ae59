"""Run an exported regression test in a pytest subprocess and classify what happened (spec "run").

The verdict is ``passed``, ``failed`` (the check ran and disagreed: a caught regression) or
``could_not_execute`` (the check never ran or could not be built), which pytest's exit status alone does
not separate. Before launching, the runner resolves what it can name from the test's literals, read with
:mod:`ast` and never imported: the bundle (TRACE_PATH or ``--bundle``; it must also pass integrity
verification, since replay rejects a tampered bundle) and, beyond the spec, the ENTRYPOINT module and
attribute, found with :class:`importlib.machinery.PathFinder` against IMPORT_ROOT and ``sys.path`` without
executing any module (:mod:`._locate`), and likewise each class RAISE_AS names. The receipt is written by
the runner after the child exits, at a path checked before the launch (:mod:`._receipt`).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stepfork.analysis.export._locate import resolve_entrypoint_location
from stepfork.analysis.export._pytest_outcome import (
    from_status,
    junit_counts,
    make_receipt,
    utc_now,
    zero_counts,
)
from stepfork.analysis.export._receipt import Receipt, bundle_digest, sha256_file

__all__ = ["RunInputError", "run_exported_test", "resolve_entrypoint_location"]


class RunInputError(ValueError):
    """Nothing to run: the test file cannot be read (missing, not a file, not UTF-8) or an option is invalid.

    Attributes:
        code: ``test_missing``, ``test_unreadable``, ``invalid_timeout``, ``invalid_option``
            (``overwrite`` without a receipt path) or ``receipt_refused`` (see
            :func:`._receipt.receipt_target_problem`).
        path: the test path as given, the receipt path for ``receipt_refused``, empty for an option.
    """

    def __init__(self, message: str, *, code: str, path: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.path = path


def _version() -> str:
    from stepfork.trace._version import __version__

    return __version__


def run_exported_test(
    test: str | os.PathLike[str],
    *,
    bundle: str | os.PathLike[str] | None = None,
    receipt_path: str | os.PathLike[str] | None = None,
    pytest_args: Sequence[str] = (),
    timeout_seconds: float | None = None,
    overwrite: bool = False,
) -> Receipt:
    """Run ``test`` with ``sys.executable -m pytest`` and return (and optionally write) its receipt.

    Args:
        test: the pytest file ``stepfork export`` wrote.
        bundle: the bundle the test replays instead of its TRACE_PATH (relative to the working directory):
            pre-checked like TRACE_PATH, then handed to the test's pytest process in
            :data:`~stepfork.replay.regression.BUNDLE_ENV` (spec "run": ``--bundle <path>``).
        receipt_path: where to write the receipt JSON (atomically, after the child exits). Checked before
            anything runs by :func:`._receipt.receipt_target_problem`: an earlier receipt
            there is replaced; the test file, the bundle, a directory, or (without ``overwrite``) any
            other existing file is refused.
        pytest_args: extra arguments appended to the pytest command line.
        timeout_seconds: stop the child (its whole process group) after this long: could_not_execute.
        overwrite: allow ``receipt_path`` to replace an existing file that is not a receipt.

    Raises:
        RunInputError: the test file is missing or unreadable (nothing to classify), ``timeout_seconds``
            is not a positive number of seconds (``invalid_timeout``), ``overwrite`` without
            ``receipt_path`` (``invalid_option``), or the receipt path is refused (``receipt_refused``);
            each before pytest is launched.
        OSError: the receipt cannot be written (``FileExistsError`` when a file appeared at a path that
            was free when checked).
    """
    from stepfork.analysis.export._receipt import receipt_target_problem

    if timeout_seconds is not None and not timeout_seconds > 0:  # also refuses NaN
        raise RunInputError(
            f"--timeout-seconds must be a positive number of seconds, not {timeout_seconds}",
            code="invalid_timeout",
        )
    if overwrite and receipt_path is None:
        raise RunInputError("--overwrite is only valid with --receipt.", code="invalid_option")
    test_path = Path(test)
    if not test_path.is_file():
        raise RunInputError(f"test file not found: {test_path}", code="test_missing", path=str(test_path))
    try:
        source = test_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunInputError(
            f"cannot read test file {test_path}: {exc}", code="test_unreadable", path=str(test_path)
        ) from exc
    constants, unreadable = _read_constants(test_path, source)
    bundle_path = _bundle_path(test_path, constants, bundle)
    replace = False
    if receipt_path is not None:
        problem = receipt_target_problem(
            receipt_path, test=test_path, bundle=bundle_path, overwrite=overwrite
        )
        if problem is not None:
            raise RunInputError(problem, code="receipt_refused", path=str(receipt_path))
        replace = os.path.lexists(receipt_path)
    base: dict[str, Any] = {
        "test": str(test),
        "test_sha256": sha256_file(test_path),
        "bundle": None if bundle is None else str(bundle),
        "bundle_digest": None,
        "stepfork_version": _version(),
    }
    if bundle is None and not _is_exported(source):
        receipt = _stop(
            base,
            "not_exported",
            f"{test_path} is not a test `stepfork export` wrote (it neither calls run_regression_case nor "
            "names a TRACE_PATH): there is no Stepfork check in it to run",
        )
    else:
        receipt = _classify(
            test_path,
            constants,
            unreadable,
            base,
            bundle_path,
            pytest_args,
            timeout_seconds,
            bundle is not None,
        )
    if receipt_path is not None:
        receipt.write(receipt_path, replace=replace)
    return receipt


def _is_exported(source: str) -> bool:
    """Whether ``source`` looks like a test ``stepfork export`` wrote: it calls ``run_regression_case`` or
    names a ``TRACE_PATH`` (the test the CLI's one-test form refuses otherwise, stepfork.cli.guide)."""
    return "run_regression_case" in source or "TRACE_PATH" in source


def _read_constants(test_path: Path, source: str) -> tuple[dict[str, Any], str | None]:
    """The test's constants read with ast (never imported), and why they could not be read (or None)."""
    from stepfork.analysis.export._exported import read_exported_constants

    try:
        return read_exported_constants(source, filename=str(test_path)), None
    except (ValueError, SyntaxError) as exc:
        return {}, str(exc)


def _bundle_path(
    test_path: Path, constants: dict[str, Any], bundle: str | os.PathLike[str] | None
) -> Path | None:
    """The bundle the check reads: ``bundle`` as given, else TRACE_PATH beside the test, else None."""
    if bundle is not None:
        return Path(bundle)
    named = constants.get("TRACE_PATH")
    return None if not isinstance(named, str) else test_path.resolve().parent / named


def _stop(base: dict[str, Any], reason: str, detail: str, **extra: Any) -> Receipt:
    fields = {"exit_status": None, "counts": zero_counts(), "command": [], "duration_ms": 0, **base, **extra}
    return Receipt(verdict="could_not_execute", reason=reason, detail=detail, created_at=utc_now(), **fields)


def _classify(
    test_path: Path,
    constants: dict[str, Any],
    unreadable: str | None,
    base: dict[str, Any],
    bundle_path: Path | None,
    pytest_args: Sequence[str],
    timeout_seconds: float | None,
    chosen: bool,
) -> Receipt:
    """The receipt of a test whose bundle is ``bundle_path`` (``chosen``: named by ``--bundle``, which the
    test then replays instead of its TRACE_PATH): a could_not_execute one when a pre-check fails, else
    the launched test's."""
    here = test_path.resolve().parent
    if bundle_path is None:
        if unreadable is not None:
            return _stop(base, "check_error", f"cannot read the test's constants: {unreadable}")
        return _stop(base, "bundle_missing", "the test names no TRACE_PATH; pass --bundle")
    if base["bundle"] is None:
        base["bundle"] = constants.get("TRACE_PATH")
    if not bundle_path.is_dir():
        return _stop(
            base,
            "bundle_missing",
            f"the bundle this test names is not there: {base['bundle']}; the check cannot run, "
            "so this is not a regression",
        )
    problem = _bundle_problem(bundle_path, base["bundle"])
    if problem is not None:
        return _stop(base, "bundle_unreadable", problem)
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
    problem = _command_problem(constants.get("COMMAND"), import_root)
    if problem is not None:
        return _stop(
            base,
            "entrypoint_unresolvable",
            f"{problem}; the check cannot run, so this is not a regression",
        )
    problem = _raise_as_problem(constants.get("RAISE_AS"), import_root)
    if problem is not None:
        return _stop(
            base,
            "raise_as_unresolvable",
            f"{problem}; the check cannot run, so this is not a regression",
        )
    if importlib.util.find_spec("pytest") is None:
        return _stop(base, "pytest_unavailable", pytest_unavailable_detail())
    return _launch(test_path, base, pytest_args, timeout_seconds, bundle_path if chosen else None)


def _command_problem(command: Any, import_root: Path | None) -> str | None:
    """Why the program of a script-form test (COMMAND: ``python SCRIPT ARGS``) cannot run: its script
    is not a file where the test runs it (IMPORT_ROOT); None when it is, for ``-m MODULE`` and without
    COMMAND."""
    if not (isinstance(command, list) and len(command) >= 2 and isinstance(command[1], str)):
        return None
    if command[1] == "-m":
        return None
    script = (import_root if import_root is not None else Path.cwd()) / command[1]
    if script.is_file():
        return None
    return f"the program this test runs is not there: {command[1]} (in {script.parent})"


def pytest_unavailable_detail() -> str:
    """The ``pytest_unavailable`` detail: where pytest is missing and the command that installs it there
    (stepfork-cli depends on pytest; a CLI installed without its dependencies, or an interpreter other than
    the one running stepfork, can still lack it)."""
    python = shlex.quote(sys.executable)
    return (
        f"pytest is not installed for {sys.executable}; install it with: {python} -m pip install 'pytest>=8' "
        "(the check cannot run, so this is not a regression)"
    )


def _bundle_problem(bundle_path: Path, name: str) -> str | None:
    """Why the replay would refuse the bundle before the check could run, or None: the test's replay
    loads it with :func:`stepfork.trace.load_verified_trace`, so this is that loader's verdict, read
    here first (one rule for every command): it cannot be read, it does not match its
    integrity.json, a finished run's events.jsonl holds fewer events than its manifest counts (a legacy
    bundle cut at a line boundary), a stored payload hash does not match, or it fails strict validation.
    A legacy bundle without integrity.json or without stored hashes passes, as replay accepts it."""
    from stepfork.trace.bundle import load_verified_trace
    from stepfork.trace.errors import TraceError, TraceIntegrityError

    try:
        load_verified_trace(bundle_path)
    except TraceIntegrityError as exc:  # the one refusal line of every command, as is
        return f"{exc}; the check cannot run, so this is not a regression"
    except (TraceError, OSError) as exc:
        code = getattr(exc, "code", type(exc).__name__)
        return f"the bundle cannot be read ({code}): {name}: {exc}"
    return None


def _raise_as_problem(raise_as: Any, import_root: Path | None) -> str | None:
    """Why the test's RAISE_AS literal cannot be used (its shape, or a class that cannot be located
    without importing anything, as ENTRYPOINT is), or None. A test without RAISE_AS has no problem."""
    from stepfork.analysis.export._exported import check_raise_as

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
    test_path: Path,
    base: dict[str, Any],
    pytest_args: Sequence[str],
    timeout_seconds: float | None,
    bundle: Path | None,
) -> Receipt:
    """Run the test in pytest; ``bundle``: the bundle it replays instead of its TRACE_PATH (``--bundle``),
    handed to its ``run_regression_case`` in :data:`~stepfork.replay.regression.BUNDLE_ENV`. Without it
    the variable is removed from the child's environment, so the receipt's bundle is the one replayed."""
    from stepfork.replay.regression import BUNDLE_ENV

    env = {name: value for name, value in os.environ.items() if name != BUNDLE_ENV}
    if bundle is not None:
        env[BUNDLE_ENV] = os.path.abspath(bundle)
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
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=env
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
            return make_receipt(
                "could_not_execute", reason, f"pytest wrote no report: {tail[0]}", fields, zero_counts()
            )
        try:
            counts, message = junit_counts(report)
        except (ET.ParseError, ValueError) as exc:
            return make_receipt(
                "could_not_execute", "report_missing", f"unreadable report: {exc}", fields, zero_counts()
            )
    return from_status(status, counts, message, fields)


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        child.kill()
