"""The exporter embeds trace-derived data only as literals (spec "export"; issue 4).

Each hostile value is generated into a test module, read back with ast, and the module is imported with a
stand-in ``run_regression_case`` to show the values arrive as data and no embedded code runs.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepfork.analysis.export import (
    CONSTANT_NAMES,
    ExportError,
    generate_pytest_source,
    read_exported_constants,
)
from stepfork.trace.redaction import redact_json

HOSTILE = [
    'it\'s "quoted"',
    "line one\nline two\r\n",
    "'''triple''' and \"\"\"triple\"\"\"",
    "__import__('pathlib').Path('PWNED').touch()",
    "{__import__('os').getcwd()} {0} {{braces}}",
    "\\ back\\slash \\n not a newline",
    "\ud800 lone surrogate",
    "\x00 nul and \u2028 separator",
    "\"); __import__('pathlib').Path('PWNED').touch(); (\"",
]


def _generate(tmp_path: Path, **overrides: Any) -> tuple[str, Path]:
    output = tmp_path / "test_case_regression.py"
    kwargs: dict[str, Any] = {
        "trace_path": tmp_path / "case.sftrace",
        "output_path": output,
        "entrypoint": "agent:run",
        "expectation": {"ok": True},
        "import_root": tmp_path,
    }
    kwargs.update(overrides)
    source = generate_pytest_source(**kwargs)
    output.write_text(source, encoding="utf-8")
    return source, output


def _import_and_call(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Import the generated module, run its test with a recording stand-in, return the kwargs it passed."""
    seen: dict[str, Any] = {}
    name = f"generated_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "run_regression_case", lambda **kw: seen.update(kw))
    tests = [getattr(module, n) for n in dir(module) if n.startswith("test_")]
    assert len(tests) == 1
    tests[0]()
    return seen


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_expectation_strings_are_embedded_as_data(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    expectation = {value: [value, {"nested": value}], "plain": value}
    _, output = _generate(tmp_path, expectation=expectation)
    assert read_exported_constants(output.read_text(encoding="utf-8"))["EXPECTATION"] == expectation
    seen = _import_and_call(output, monkeypatch)
    assert seen["expectation"] == expectation
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_tool_names_in_trajectory_and_allowlist_stay_data(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    trajectory = {"called": [value], "counts": {value: 1}}
    _, output = _generate(tmp_path, trajectory_expectation=trajectory, mode="live", allow_live_tools=[value])
    seen = _import_and_call(output, monkeypatch)
    assert seen["trajectory_expectation"] == trajectory
    assert seen["allow_live_tools"] == {value}
    assert seen["mode"] == "live"
    assert not (tmp_path / "PWNED").exists()


def test_a_hostile_bundle_name_stays_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    bundle = tmp_path / "we'ird\"\nname.sftrace"
    _, output = _generate(tmp_path, trace_path=bundle)
    seen = _import_and_call(output, monkeypatch)
    assert seen["entrypoint"] == "agent:run"
    assert Path(seen["trace_path"]) == bundle.resolve()
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("value", [f"agent:run{v}" for v in HOSTILE])
def test_a_hostile_entrypoint_is_refused_before_any_source_is_generated(value: str, tmp_path: Path) -> None:
    # not MODULE:FUNCTION, so replay would refuse it: the exporter refuses it too (and writes nothing)
    with pytest.raises(ExportError) as caught:
        _generate(tmp_path, entrypoint=value)
    assert caught.value.code == "invalid_entrypoint"
    assert not (tmp_path / "test_case_regression.py").exists()


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_raise_as_type_names_stay_data(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    raise_as = {value: "app.errors:RateLimited", "RateLimited": "app.errors:Outer.RateLimited"}
    _, output = _generate(tmp_path, raise_as=raise_as)
    assert read_exported_constants(output.read_text(encoding="utf-8"))["RAISE_AS"] == raise_as
    seen = _import_and_call(output, monkeypatch)
    assert seen["raise_as"] == raise_as
    assert not (tmp_path / "PWNED").exists()


def test_without_raise_as_the_test_passes_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    source, output = _generate(tmp_path)
    assert "RAISE_AS = None" in source.splitlines()
    assert _import_and_call(output, monkeypatch)["raise_as"] is None


@pytest.mark.parametrize(
    "raise_as",
    [
        {"RateLimited": "app.errors.RateLimited"},  # no ':'
        {"RateLimited": "app errors:RateLimited"},
        {"RateLimited": "os:system('touch PWNED')"},
        *({"RateLimited": value} for value in HOSTILE),
        {"": "app.errors:RateLimited"},
        {"RateLimited": 3},
        ["RateLimited"],
    ],
)
def test_a_raise_as_value_that_is_not_module_class_is_refused(raise_as: Any, tmp_path: Path) -> None:
    with pytest.raises(ExportError) as caught:
        _generate(tmp_path, raise_as=raise_as)
    assert caught.value.code == "invalid_option"
    assert not (tmp_path / "PWNED").exists()


def test_every_module_level_constant_is_a_literal_except_the_two_path_shapes(tmp_path: Path) -> None:
    source, _ = _generate(tmp_path, expectation=[1, 2.5, None, "x"], trajectory_expectation={"max_steps": 3})
    tree = ast.parse(source)
    names = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            name = node.targets[0].id  # type: ignore[attr-defined]
            names.append(name)
            if name not in ("HERE", "TRACE_PATH", "IMPORT_ROOT"):
                ast.literal_eval(node.value)
    assert set(CONSTANT_NAMES) <= set(names)


def test_paths_are_written_relative_to_the_test_file(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    source = generate_pytest_source(
        trace_path=tmp_path / "bundles" / "notify.sftrace",
        output_path=tmp_path / "tests" / "test_notify_regression.py",
        entrypoint="agent:run",
        import_root=tmp_path,
    )
    constants = read_exported_constants(source)
    assert constants["TRACE_PATH"] == "../bundles/notify.sftrace"
    assert constants["IMPORT_ROOT"] == ".."


def test_a_hand_edited_constant_that_is_not_a_literal_is_reported_with_its_line(tmp_path: Path) -> None:
    source, _ = _generate(tmp_path)
    edited = source.replace("EXPECTATION = {'ok': True}", "EXPECTATION = dict(ok=True)")
    assert edited != source
    with pytest.raises(ValueError, match=r":\d+: EXPECTATION is not a literal value"):
        read_exported_constants(edited, filename="t.py")


def test_a_trace_path_expression_outside_the_exporter_shapes_is_refused(tmp_path: Path) -> None:
    source, _ = _generate(tmp_path)
    edited = source.replace("TRACE_PATH = HERE / 'case.sftrace'", "TRACE_PATH = Path('/x') / 'case.sftrace'")
    assert edited != source
    with pytest.raises(ValueError, match="cannot read the path from the TRACE_PATH expression"):
        read_exported_constants(edited)


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"mode": "derived"}, "invalid_mode"),
        ({"mode": "frozen", "allow_live_tools": ["search"]}, "invalid_option"),
        ({"mode": "live", "live_llms": ["openai/gpt"]}, "invalid_option"),
        ({"entrypoint": ""}, "missing_entrypoint"),
    ],
)
def test_invalid_export_options_raise_export_error_with_a_code(
    overrides: dict[str, Any], code: str, tmp_path: Path
) -> None:
    with pytest.raises(ExportError) as caught:
        _generate(tmp_path, **overrides)
    assert caught.value.code == code


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(value=json_values)
def test_any_json_expectation_reads_back_identical(value: Any) -> None:
    source = generate_pytest_source(
        trace_path="case.sftrace", output_path="test_case.py", entrypoint="a:b", expectation=value
    )
    back = read_exported_constants(source)["EXPECTATION"]
    # what would be a secret is redacted before it is embedded (issue 14); everything else reads back as is
    assert repr(back) == repr(redact_json(value).value)


def test_the_facade_module_re_exports_export_and_replay_names() -> None:
    import stepfork.export as facade
    from stepfork.replay.entrypoint import EntrypointError, resolve_entrypoint
    from stepfork.replay.regression import run_regression_case

    assert facade.run_regression_case is run_regression_case
    assert facade.resolve_entrypoint is resolve_entrypoint
    assert facade.EntrypointError is EntrypointError
    assert facade.generate_pytest_source is generate_pytest_source
    assert {"export_pytest_test", "ExportError", "ExportExistsError"} <= set(facade.__all__)


def test_export_pytest_test_returns_a_result_that_stands_in_for_the_written_path(tmp_path: Path) -> None:
    import shutil

    from stepfork.analysis.export import export_pytest_test

    from .conftest import GOLDEN

    bundle = tmp_path / "run.sftrace"
    shutil.copytree(GOLDEN / "successful_run.sftrace", bundle)
    result = export_pytest_test(trace_path=bundle, entrypoint="a:b", output_path=tmp_path / "test_run.py")
    assert result == tmp_path / "test_run.py"
    assert Path(result) == result.path
    assert "run_regression_case" in result.read_text(encoding="utf-8")
    assert result.expectation_source == "recorded"
    assert result.expectation == {"answer": "Clear and 22C"}
