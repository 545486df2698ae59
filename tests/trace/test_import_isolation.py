"""``import stepfork.trace`` and instrumented calls stay light (docs/architecture.md, issue 2)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

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
