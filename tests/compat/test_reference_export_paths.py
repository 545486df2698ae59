"""``stepfork.export`` as a package (issue 32): the earlier implementation's submodules
``stepfork.export.generator``, ``.runtime`` and ``.entrypoint`` hold the same objects as ``stepfork.export``,
which keeps every name it exported. Written from interop/REFERENCE-API.md ``stepfork.export``."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import stepfork.export
from stepfork import record

# every name stepfork.export exported as a module, before it became a package
EXPORTED = [
    "CONSTANT_NAMES", "EXPORT_MODES", "EntrypointError", "ExportError", "ExportExistsError", "ExportResult",
    "default_output_path", "export_pytest_test", "generate_pytest_source", "load_expectation_file",
    "load_trajectory_file", "read_exported_constants", "resolve_entrypoint", "run_regression_case",
]  # fmt: skip

PATHS = [
    ("stepfork.export.generator", "generate_pytest_source"),
    ("stepfork.export.generator", "export_pytest_test"),
    ("stepfork.export.generator", "ExportError"),
    ("stepfork.export.generator", "ExportExistsError"),
    ("stepfork.export.runtime", "run_regression_case"),
    ("stepfork.export.entrypoint", "resolve_entrypoint"),
    ("stepfork.export.entrypoint", "EntrypointError"),
]


@pytest.mark.parametrize("name", EXPORTED)
def test_the_package_keeps_every_name(name: str) -> None:
    assert name in stepfork.export.__all__
    assert getattr(stepfork.export, name) is not None


@pytest.mark.parametrize(("module", "name"), PATHS)
def test_each_submodule_holds_the_same_object(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is getattr(stepfork.export, name)


AGENT = """
from stepfork import trace_tool


@trace_tool
def lookup(order_id: str) -> dict:
    return {"order_id": order_id, "status": "shipped"}


def run() -> dict:
    return {"notify": lookup("ORD-1")["status"] == "shipped"}
"""


def test_a_test_written_through_the_generator_runs_through_the_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stepfork.export.generator import export_pytest_test
    from stepfork.export.runtime import run_regression_case

    (tmp_path / "compat_agent.py").write_text(AGENT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "compat_agent", raising=False)
    agent = importlib.import_module("compat_agent")
    bundle = tmp_path / "run.sftrace"
    with record("compat-agent", output=bundle) as session:
        session.set_output(agent.run())
    written = export_pytest_test(
        trace_path=bundle, output_path=tmp_path / "test_run.py", entrypoint="compat_agent:run",
        expectation={"notify": True}, import_root=tmp_path,
    )  # fmt: skip
    assert Path(written.path).read_text(encoding="utf-8").count("run_regression_case") >= 1
    result = run_regression_case(
        trace_path=bundle, import_root=tmp_path, entrypoint="compat_agent:run", expectation={"notify": True}
    )
    assert result == {"notify": True}
    with pytest.raises(AssertionError, match="behavior mismatch at 'notify'"):
        run_regression_case(
            trace_path=bundle,
            import_root=tmp_path,
            entrypoint="compat_agent:run",
            expectation={"notify": False},
        )
