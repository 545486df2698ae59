"""docs/integrations.md's framework snippets are copies of the examples the tests run (issue 30).

Each code block after an ``<!-- example: PATH -->`` marker must appear, as written, in that example file, so
the one-line set-up the docs show is the one tests/integrations/test_openai_agents_sdk.py (and the other
framework tests) run. Every framework of the table has such a snippet.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrations.md"
SNIPPET = re.compile(r"<!-- example: (?P<path>\S+) -->\n```\w*\n(?P<code>.*?)\n```", re.DOTALL)


def snippets() -> list[tuple[str, str]]:
    return [(m["path"], m["code"]) for m in SNIPPET.finditer(DOC.read_text(encoding="utf-8"))]


def test_every_snippet_is_copied_from_its_example() -> None:
    found = snippets()
    assert len(found) >= 5
    for path, code in found:
        example = (ROOT / path).read_text(encoding="utf-8")
        assert code in example, f"docs/integrations.md's snippet for {path} is not in it:\n{code}"


def test_every_framework_of_the_table_has_a_tested_snippet() -> None:
    folders = {Path(path).parts[1] for path, _ in snippets()}
    assert folders == {
        "openai_agents_sdk",
        "litellm_agent",
        "smolagents_agent",
        "llamaindex_agent",
        "crewai_agent",
    }
    table = DOC.read_text(encoding="utf-8").split("\n## ", 1)[0]
    for name in ("OpenAI Agents SDK", "LiteLLM", "smolagents", "LlamaIndex", "CrewAI"):
        assert f"\n| {name} |" in table
