"""Every integration module imports without its SDK; using it raises the install hint (issue 32). The
earlier ``stepfork.integrations.openai`` imported without the openai package; a service that imports an
integration at the top of a module must not stop because an SDK it does not use here is absent.

Each case runs in a fresh interpreter whose ``sys.meta_path`` refuses the SDK's top-level package, as an
environment without it would."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

BLOCKER = """
import importlib.abc, sys

BLOCKED = set({blocked!r})


class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, Missing())
"""

# module -> (SDK packages blocked, the extra its hint names or None, the public names, what using it does)
USE_OPENAI = "m.instrument_openai(object())"
CASES = {
    "openai": ({"openai"}, "openai", ["instrument_openai", "chat_completions_create"], USE_OPENAI),
    "anthropic": ({"anthropic"}, "anthropic", ["instrument_anthropic"], "m.instrument_anthropic(object())"),
    "langchain": (
        {"langchain_core"}, "langchain", ["instrument_chat_model"], "m.instrument_chat_model(object())"
    ),
    "langgraph": ({"langchain_core", "langgraph"}, "langchain", ["traced_tool"], "m.traced_tool(len)"),
    "pydantic_ai": ({"pydantic_ai"}, "pydantic-ai", ["instrument_model"], "m.instrument_model('test')"),
    "mcp": ({"mcp"}, "mcp", ["instrument_mcp", "enable"], "m.instrument_mcp(object())"),
    "httpx": ({"httpx", "httpx2"}, None, ["instrument_httpx"], None),
}  # fmt: skip


def _run(blocked: set[str], body: str) -> dict[str, object]:
    code = BLOCKER.format(blocked=sorted(blocked)) + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("module", sorted(CASES))
def test_the_module_imports_without_its_sdk_and_names_its_api(module: str) -> None:
    blocked, _, names, _ = CASES[module]
    found = _run(
        blocked,
        f"""
        import importlib, json, sys
        m = importlib.import_module("stepfork.integrations.{module}")
        print(json.dumps({{
            "all": sorted(m.__all__),
            "sdk_loaded": sorted(n for n in {sorted(blocked)!r} if n in sys.modules),
        }}))
        """,
    )
    assert set(names) <= set(found["all"])  # type: ignore[arg-type]
    assert found["sdk_loaded"] == []


def _import_error(module: str, statement: str) -> object:
    """The ImportError message ``statement`` raises (``m`` is the integration module) without the SDK."""
    blocked = CASES[module][0]
    found = _run(
        blocked,
        f"""
        import importlib, json
        m = importlib.import_module("stepfork.integrations.{module}")
        try:
            {statement}
        except ImportError as exc:
            print(json.dumps({{"error": str(exc)}}))
        else:
            print(json.dumps({{"error": None}}))
        """,
    )
    return found["error"]


@pytest.mark.parametrize("module", sorted(m for m, case in CASES.items() if case[3] is not None))
def test_using_it_without_the_sdk_raises_the_install_hint(module: str) -> None:
    _, extra, _, use = CASES[module]
    error = _import_error(module, str(use))
    assert isinstance(error, str)
    assert error.startswith(f'install "stepfork-trace[{extra}]" to use the ')


@pytest.mark.parametrize(
    ("module", "name"),
    [("openai", "CHAT_COMPLETIONS"), ("anthropic", "MESSAGES"), ("langchain", "StepforkChatModel"),
     ("pydantic_ai", "StepforkModel")],
)  # fmt: skip
def test_a_name_built_from_the_sdk_raises_the_hint_when_read(module: str, name: str) -> None:
    extra = CASES[module][1]
    assert str(_import_error(module, f"m.{name}")).startswith(f'install "stepfork-trace[{extra}]"')


def test_the_reference_constants_need_no_sdk() -> None:
    found = _run(
        {"openai"},
        """
        import json
        from stepfork.integrations.openai import CHAT_COMPLETIONS_METHOD, OpenAIIntegrationError
        from stepfork.integrations.langgraph import LangGraphIntegrationError
        print(json.dumps([CHAT_COMPLETIONS_METHOD, issubclass(OpenAIIntegrationError, ValueError),
                          issubclass(LangGraphIntegrationError, ValueError)]))
        """,
    )
    assert found == ["chat.completions.create", True, True]
