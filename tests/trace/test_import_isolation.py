"""``import stepfork.trace`` and instrumented calls stay light (docs/architecture.md, issue 2)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

FORBIDDEN = ("stepfork.replay", "stepfork.analysis", "typer", "rich")


def run_and_list_modules(code: str) -> set[str]:
    script = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_importing_stepfork_trace_imports_no_replay_analysis_typer_or_rich() -> None:
    modules = run_and_list_modules("import stepfork.trace")
    assert [name for name in FORBIDDEN if loaded(modules, name)] == []


def test_decorating_and_calling_a_tool_without_a_session_imports_no_pydantic() -> None:
    modules = run_and_list_modules(
        """
        from stepfork.trace import trace_tool, llm_request

        @trace_tool
        def add(a: int, b: int = 1) -> int:
            return a + b

        @trace_tool(name="x")
        async def sub(a: int) -> int:
            return -a

        assert add(1) == 2
        assert llm_request(model="m", input={"q": 1}, call=lambda: "ok") == "ok"
        """
    )
    assert [name for name in (*FORBIDDEN, "pydantic") if loaded(modules, name)] == []


def test_recording_a_tool_call_imports_no_replay_analysis_typer_or_rich(tmp_path: object) -> None:
    modules = run_and_list_modules(
        f"""
        from stepfork.trace import record, trace_tool

        @trace_tool
        def add(a: int, b: int = 1) -> int:
            return a + b

        with record("iso", output={str(tmp_path)!r} + "/iso.sftrace"):
            add(2)
        """
    )
    assert "pydantic" in modules  # the session itself writes models: proves the check sees imports
    assert [name for name in FORBIDDEN if loaded(modules, name)] == []


# What .ci/run's last step installs beside the stepfork-trace wheel to run this folder: the wheel's own
# dependencies and the test tools. A test here that imports anything else fails only there, at the end of
# a 40-minute CI run (it did: a replay import in test_executor_context.py), so this proves it in the suite.
TRACE_ALONE = {"stepfork", "pydantic", "pydantic_core", "orjson", "pytest", "_pytest", "hypothesis"}


def _imported_roots(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            facade = node.module == "stepfork"  # `from stepfork import X` needs the facade's X
            names = [f"stepfork.{alias.name}" for alias in node.names] if facade else [node.module]
            found += [(node.lineno, name) for name in names]
    return found


def test_this_folder_runs_with_stepfork_trace_alone() -> None:
    here = Path(__file__).parent
    local = {p.stem for p in here.glob("*.py")}
    wrong = []
    for path in sorted(here.rglob("*.py")):
        for line, name in _imported_roots(path):
            root = name.split(".")[0]
            if root == "stepfork":
                ok = name.startswith("stepfork.trace")
            else:
                ok = root in sys.stdlib_module_names or root in TRACE_ALONE or root in local
            if not ok:
                wrong.append(f"{path.relative_to(here)}:{line}: {name}")
    assert wrong == []
