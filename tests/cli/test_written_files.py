"""The library side of the export/run input rules: error codes and fields, the one entrypoint form check,
and the modes of written files (docs/decisions.md: entrypoint form, receipt targets, file modes).

The CLI behaviour is in tests/e2e/test_cli_export_inputs.py and tests/e2e/test_cli_run_receipt.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepfork.analysis.export import (
    ExportError,
    Receipt,
    RunInputError,
    entrypoint_form_problem,
    export_pytest_test,
    is_receipt_file,
    run_exported_test,
)
from stepfork.replay.entrypoint import EntrypointError, resolve_entrypoint

from ..conftest import file_mode, umask

BASE = {"exit_status": None, "bundle": None, "bundle_digest": None, "test": "t.py", "test_sha256": None}


@pytest.fixture
def umask_027() -> Iterator[None]:
    """A known umask for this process and its children, restored afterwards."""
    with umask(0o027):
        yield


def _replay_says_bad_form(text: str) -> bool:
    """Whether replay's resolver refuses ``text`` by its form; well-formed names are never imported."""
    with mock.patch("importlib.import_module", side_effect=ImportError("not imported in this test")):
        try:
            resolve_entrypoint(text, import_root=Path.cwd())
        except EntrypointError as exc:
            return exc.code == "bad_form"
    raise AssertionError("unreachable: import_module always fails here")  # pragma: no cover


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab_1.: -é\n", max_size=12))
def test_export_and_run_refuse_exactly_the_entrypoints_replay_refuses_by_form(text: str) -> None:
    with mock.patch("sys.path", list(sys.path)):  # resolve_entrypoint puts its root on sys.path
        assert (entrypoint_form_problem(text) is not None) == _replay_says_bad_form(text), text


def test_export_raises_invalid_entrypoint_before_reading_the_bundle(tmp_path: Path) -> None:
    with pytest.raises(ExportError) as caught:
        export_pytest_test(trace_path=tmp_path / "absent.sftrace", entrypoint="quickstart")
    assert caught.value.code == "invalid_entrypoint"
    assert str(caught.value) == "invalid entrypoint 'quickstart'; expected the form MODULE:FUNCTION"


def test_export_of_a_tampered_bundle_is_invalid_trace(golden_copy, tmp_path: Path) -> None:
    bundle = golden_copy("successful_run")
    events = bundle / "events.jsonl"
    lines = events.read_text(encoding="utf-8").splitlines(keepends=True)
    event = json.loads(lines[1])
    event["input"] = {"tampered": True}
    lines[1] = json.dumps(event) + "\n"
    events.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ExportError) as caught:
        export_pytest_test(trace_path=bundle, entrypoint="agent:run", output_path=tmp_path / "t.py")
    assert caught.value.code == "invalid_trace"
    assert "events.jsonl does not match its digest in integrity.json" in str(caught.value)
    assert not (tmp_path / "t.py").exists()


@pytest.mark.usefixtures("umask_027")
def test_export_writes_new_files_with_the_umask_and_keeps_a_replaced_mode(
    golden_copy, tmp_path: Path
) -> None:
    bundle = golden_copy("successful_run")
    export_pytest_test(trace_path=bundle, entrypoint="agent:run", output_path=tmp_path / "new.py")
    assert file_mode(tmp_path / "new.py") == 0o640
    old = tmp_path / "old.py"
    old.write_text("# mine\n", encoding="utf-8")
    old.chmod(0o604)
    export_pytest_test(trace_path=bundle, entrypoint="agent:run", output_path=old, overwrite=True)
    assert file_mode(old) == 0o604


@pytest.mark.usefixtures("umask_027")
def test_a_receipt_is_written_with_the_umask_and_replacing_keeps_the_mode(tmp_path: Path) -> None:
    receipt = Receipt(verdict="passed", reason=None, **BASE)
    receipt.write(tmp_path / "deep" / "r.json")
    assert file_mode(tmp_path / "deep" / "r.json") == 0o640
    (tmp_path / "deep" / "r.json").chmod(0o600)
    receipt.write(tmp_path / "deep" / "r.json")
    assert file_mode(tmp_path / "deep" / "r.json") == 0o600
    with pytest.raises(FileExistsError):
        receipt.write(tmp_path / "deep" / "r.json", replace=False)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (Receipt(verdict="failed", reason=None, **BASE).to_json(), True),
        ('{"receipt_version": 2, "verdict": "passed"}', True),
        ('{"receipt_version": true, "verdict": "passed"}', False),
        ('{"receipt_version": 1, "verdict": "maybe"}', False),
        ("important = 1\n", False),
        ("", False),
    ],
)
def test_what_counts_as_a_receipt(tmp_path: Path, content: str, expected: bool) -> None:
    path = tmp_path / "r.json"
    path.write_text(content, encoding="utf-8")
    assert is_receipt_file(path) is expected


def test_a_refused_receipt_path_is_run_input_error_before_the_run(tmp_path: Path) -> None:
    test = tmp_path / "test_x.py"
    test.write_text("TRACE_PATH = None\n", encoding="utf-8")
    with pytest.raises(RunInputError) as caught:
        run_exported_test(test, receipt_path=test)
    assert (caught.value.code, caught.value.path) == ("receipt_refused", str(test))
    with pytest.raises(RunInputError) as caught:
        run_exported_test(test, overwrite=True)
    assert caught.value.code == "invalid_option"
