"""What every test folder shares: where the reference bundles are, copies of the golden ones, and the
hypothesis profile.

Test folders import the paths as ``from ..conftest import GOLDEN`` (``--import-mode=importlib`` names this
module ``tests.conftest``); the ``golden_copy`` fixture is visible to every test below ``tests/``.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# In CI (CI set) property tests draw the same examples every run, so a verdict never depends on luck; on a
# laptop they explore anew each run. A failure found locally is printed with its reproducing blob. No
# per-example deadline and no too-slow health check: these tests check values, and a loaded machine failed
# them on time ("flaky", "too slow") though every example passed.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_UNTIMED)
settings.register_profile("dev", print_blob=True, **_UNTIMED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

# tests/remote needs a real S3 API (moto) and Dask: it runs in its own environment (`hatch run remote:test`,
# which sets STEPFORK_REMOTE_TESTS), not in the default `hatch test`.
collect_ignore = [] if os.environ.get("STEPFORK_REMOTE_TESTS") else ["remote"]

# Tests marked `slow` (the reliability campaign, the framework agents' repeated CLI replays, the real
# OpenTelemetry instrumentations, the 1,000-bundle corpus, the install lines) run in their own environment,
# `hatch run slow:test` (which sets STEPFORK_SLOW_TESTS; .ci/run runs it), so the README's `hatch test`
# stays within its time budget on a 2-core CI machine. They are deselected here, never skipped: the
# summary says how many and how to run them.
RUN_SLOW = os.environ.get("STEPFORK_SLOW_TESTS") == "1"
_SLOW_HINT = "slow tests deselected: run them with `hatch run slow:test`"


@pytest.hookimpl(trylast=True)  # after folder conftests add the marker (tests/reliability)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests marked ``slow`` unless STEPFORK_SLOW_TESTS=1 (see above)."""
    if RUN_SLOW:
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
        config.stash[_SLOW_DESELECTED] = len(slow)


_SLOW_DESELECTED = pytest.StashKey[int]()

_REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Compile stepfork's sources to bytecode once, in the controlling process, before any test runs.

    Hundreds of tests start a fresh Python (the CLI, zygotes, exported tests), and each one imports the
    editable packages from source. Where PYTHONDONTWRITEBYTECODE is set (CI images set it) no process writes
    a .pyc, so every one compiled stepfork again: 1.1 s instead of 0.3 s to import the CLI. ``compileall``
    writes them whatever that variable says; reading them is always allowed."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    import compileall

    for folder in ("libs", "apps", "examples"):
        compileall.compile_dir(_REPO / folder, quiet=2, workers=1)


# Two pytest plugins this environment installs for other reasons, which no pytest process a test starts uses
# (exported tests, `stepfork run`, the plugin's own tests): langsmith's (installed with langchain, for the
# LangGraph agent; ~0.6 s of imports) and hypothesis's (~0.25 s). Each such process loaded both at start:
# a few hundred of them made up a third of the suite's CPU time on a 2-core machine.
_CHILD_PYTEST_OPTIONS = "-p no:langsmith_plugin -p no:hypothesispytest"


@pytest.fixture(autouse=True, scope="session")
def _lean_child_pytest() -> Iterator[None]:
    """Start every pytest process a test runs without the two plugins above (``PYTEST_ADDOPTS``, set for
    the processes this one starts: this process parsed its own options before any fixture ran)."""
    with pytest.MonkeyPatch.context() as patch:
        extra = os.environ.get("PYTEST_ADDOPTS", "")
        patch.setenv("PYTEST_ADDOPTS", f"{extra} {_CHILD_PYTEST_OPTIONS}".strip())
        yield


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Say that slow tests were deselected (how many, when this process collected) and how to run them.

    Under pytest-xdist the workers collect, so the controller gives the line without the count."""
    if RUN_SLOW:
        return
    count = config.stash.get(_SLOW_DESELECTED, 0)
    if count:
        terminalreporter.write_line(f"{count} {_SLOW_HINT}")
    elif getattr(config.option, "numprocesses", None):
        terminalreporter.write_line(_SLOW_HINT[0].upper() + _SLOW_HINT[1:])


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say whether this environment holds the releases of the committed lock (issue 28): every package
    whose installed version differs from requirements/constraints.txt, SDKs marked, so a failure under
    ``hatch run latest:test`` names the releases to look at. Nothing when the lock is missing."""
    import importlib.util

    script = _REPO / "scripts" / "lock.py"
    if not (_REPO / "requirements" / "constraints.txt").is_file() or not script.is_file():
        return []
    spec = importlib.util.spec_from_file_location("stepfork_lock_script", script)
    if spec is None or spec.loader is None:  # pragma: no cover - a file path always has a loader
        return []
    lock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lock)
    differences = lock.installed_differences()
    if not differences:
        return ["lock: every installed package at its release in requirements/constraints.txt"]
    sdks = set(lock.sdk_names())
    named = ", ".join(
        f"{name} {installed} (locked {locked}){' [SDK]' if name in sdks else ''}"
        for name, locked, installed in differences
    )
    count = len(differences)
    return [f"lock: {count} installed package(s) differ from requirements/constraints.txt: {named}"]


# The bundles an earlier public implementation wrote (schema 0.1), copied into the repository with their
# PROVENANCE.md so the suite runs from a plain clone (tests/test_self_contained.py keeps it so).
REFERENCE = Path(__file__).resolve().parent / "interop" / "data" / "reference-bundles"
GOLDEN = REFERENCE / "tests" / "golden"


@pytest.fixture
def golden_copy(tmp_path: Path) -> Callable[..., Path]:
    """Copy a golden reference bundle into tmp_path and return its path: ``golden_copy("successful_run")``,
    or ``golden_copy("successful_run", "other.sftrace")`` to name the copy."""

    def copy(name: str, dest: str | None = None) -> Path:
        target = tmp_path / (dest or f"{name}.sftrace")
        shutil.copytree(GOLDEN / f"{name}.sftrace", target)
        return target

    return copy


@contextmanager
def umask(mask: int) -> Iterator[None]:
    """Set this process's umask (inherited by the child processes it starts) to ``mask``; restore it after."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def file_mode(path: Path) -> int:
    """The permission bits of ``path`` (``0o644``)."""
    return stat.S_IMODE(path.stat().st_mode)


EARLIER_VERSION = "0.1.0a6"
"""The earlier implementation's last version, as its bundles' manifests name it (tests/interop)."""


def as_legacy_bundle(bundle: Path) -> Path:
    """Turn ``bundle``, written by this Stepfork, into a legacy bundle as the earlier implementation or
    another tool leaves one: no integrity.json and a manifest naming the earlier version. Only deleting
    integrity.json is a bundle that changed after it was written, refused as such (docs/decisions.md)."""
    import json

    (bundle / "integrity.json").unlink()
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    manifest["environment"]["stepfork_version"] = EARLIER_VERSION
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return bundle
