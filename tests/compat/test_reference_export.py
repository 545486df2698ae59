"""Reference behaviour of ``stepfork.export`` (REFERENCE-API.md; issue 14): the generated module's constants
and test function, and the documented errors."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from stepfork.export import (
    EntrypointError,
    ExportError,
    ExportExistsError,
    export_pytest_test,
    generate_pytest_source,
    resolve_entrypoint,
)

from ..conftest import GOLDEN

CONSTANTS = [
    "TRACE_PATH", "IMPORT_ROOT", "ENTRYPOINT", "MODE", "LIVE_LLMS", "ALLOW_LIVE_TOOLS", "EXPECTATION",
    "HAS_EXPECTATION", "TRAJECTORY_EXPECTATION",
]  # fmt: skip


def test_the_reference_keywords_are_accepted() -> None:
    params = set(inspect.signature(generate_pytest_source).parameters)
    assert {
        "trace_path", "output_path", "entrypoint", "expectation", "has_expectation", "trajectory_expectation",
        "mode", "live_llms", "allow_live_tools", "import_root",
    } <= params  # fmt: skip
    assert "overwrite" in inspect.signature(export_pytest_test).parameters


@pytest.mark.parametrize("name", CONSTANTS)
def test_the_generated_module_defines_each_constant(name: str, tmp_path: Path) -> None:
    source = generate_pytest_source(
        trace_path=tmp_path / "notify.sftrace",
        output_path=tmp_path / "test_notify.py",
        entrypoint="agent:run",
    )
    assert f"\n{name} = " in source
    assert "def test_stepfork_regression_notify(" in source


def test_mode_options_outside_their_mode_are_export_errors(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="only valid"):
        generate_pytest_source(
            trace_path=tmp_path / "t.sftrace",
            output_path=tmp_path / "test_t.py",
            entrypoint="agent:run",
            allow_live_tools={"search"},
        )


def test_an_existing_test_file_is_an_export_exists_error(tmp_path: Path) -> None:
    out = tmp_path / "test_run.py"
    out.write_text("# mine\n")
    with pytest.raises(ExportExistsError, match="already exists"):
        export_pytest_test(
            trace_path=GOLDEN / "successful_run.sftrace", entrypoint="agent:run", output_path=out
        )
    assert out.read_text() == "# mine\n"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "expected the form"),
        ("no_such_module_xyz:run", "cannot import module"),
        ("json:nope", "no attribute"),
    ],
)
def test_resolve_entrypoint_errors(spec: str, message: str) -> None:
    with pytest.raises(EntrypointError, match=message):
        resolve_entrypoint(spec)
    assert issubclass(EntrypointError, ValueError)


def test_run_regression_case_reports_the_reference_path_form() -> None:
    from stepfork.export import run_regression_case

    entrypoints = Path(__file__).resolve().parents[1] / "e2e" / "entrypoints"
    with pytest.raises(AssertionError, match=r"behavior mismatch at 'answer'"):
        run_regression_case(
            trace_path=GOLDEN / "successful_run.sftrace",
            import_root=entrypoints,
            entrypoint="golden_agents:weather_agent",
            expectation={"answer": "Rain"},
        )
    result = run_regression_case(
        trace_path=GOLDEN / "successful_run.sftrace",
        import_root=entrypoints,
        entrypoint="golden_agents:weather_agent",
        expectation={"answer": "Clear and 22C"},
    )
    assert result == {"answer": "Clear and 22C"}
