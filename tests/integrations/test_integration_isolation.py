"""The core never imports the integrations or their SDKs; an integration imports no replay when recording."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SDKS = ("openai", "anthropic", "httpx2", "langchain_core", "pydantic_ai", "stepfork.integrations")


def modules_after(code: str) -> set[str]:
    script = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_importing_and_recording_with_the_core_imports_no_sdk_or_integration(tmp_path: object) -> None:
    modules = modules_after(
        f"""
        import stepfork.trace
        from stepfork.trace import record, trace_tool

        @trace_tool
        def tool(x: int) -> int:
            return x

        with record("agent", output={str(tmp_path)!r} + "/run.sftrace"):
            tool(1)
        """
    )
    assert [name for name in SDKS if loaded(modules, name)] == []


def test_recording_through_an_integration_does_not_import_replay(tmp_path: object) -> None:
    fake_dir = str(Path(__file__).resolve().parents[2] / "examples" / "openai_agent")
    modules = modules_after(
        f"""
        import sys
        sys.path.insert(0, {fake_dir!r})
        import httpx2, openai
        from fake_openai import FakeOpenAI
        from stepfork.integrations.openai import instrument_openai
        from stepfork.trace import record

        http = httpx2.Client(transport=FakeOpenAI().transport())
        client = instrument_openai(openai.OpenAI(api_key="sk-x", http_client=http))
        with record("agent", output={str(tmp_path)!r} + "/run.sftrace"):
            list(client.chat.completions.create(model="m", messages=[], stream=True))
        """
    )
    assert not loaded(modules, "stepfork.replay")
