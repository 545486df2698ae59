"""Generated tests never hold a secret, whichever public function writes them (issue 14; CASES.md C5).

``generate_pytest_source`` used to embed ``expectation`` verbatim (only ``export_pytest_test`` redacted);
now it redacts the expectation and the trajectory expectation itself, so every caller is covered.
"""

from __future__ import annotations

from pathlib import Path

from stepfork.analysis.export import generate_pytest_source, read_exported_constants
from stepfork.export import export_pytest_test

from ..conftest import GOLDEN

SECRET = "sk-supersecretvalue123"
AWS = "AKIAIOSFODNN7EXAMPLE"


def test_generate_pytest_source_redacts_the_expectation(tmp_path: Path) -> None:
    source = generate_pytest_source(
        trace_path=tmp_path / "run.sftrace",
        output_path=tmp_path / "test_run.py",
        entrypoint="agent:run",
        expectation={"token": SECRET, "note": f"key {AWS} in text", "answer": 42},
    )
    assert SECRET not in source
    assert AWS not in source
    constants = read_exported_constants(source)
    assert constants["EXPECTATION"]["token"] == "[REDACTED]"
    assert constants["EXPECTATION"]["answer"] == 42


def test_generate_pytest_source_redacts_the_trajectory_expectation(tmp_path: Path) -> None:
    trajectory = {"called": ["lookup"], "arguments": [{"name": "lookup", "value": {"api_key": SECRET}}]}
    source = generate_pytest_source(
        trace_path=tmp_path / "run.sftrace",
        output_path=tmp_path / "test_run.py",
        entrypoint="agent:run",
        trajectory_expectation=trajectory,
    )
    assert SECRET not in source
    constants = read_exported_constants(source)
    assert constants["TRAJECTORY_EXPECTATION"]["called"] == ["lookup"]
    assert constants["TRAJECTORY_EXPECTATION"]["arguments"][0]["value"] == {"api_key": "[REDACTED]"}


def test_export_pytest_test_redacts_a_trajectory_expectation(tmp_path: Path) -> None:
    written = export_pytest_test(
        trace_path=GOLDEN / "successful_run.sftrace",
        entrypoint="agent:run",
        output_path=tmp_path / "test_run.py",
        trajectory_expectation={"arguments": [{"name": "weather_lookup", "value": {"password": SECRET}}]},
    )
    assert SECRET not in Path(written).read_text()
