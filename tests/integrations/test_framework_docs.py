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


FRAMEWORK_ROWS = {
    "OpenAI Agents SDK": "examples/openai_agents_sdk/weather_agents.py",
    "smolagents": "examples/smolagents_agent/weather_smolagents.py",
    "LlamaIndex": "examples/llamaindex_agent/weather_llamaindex.py",
    "CrewAI": "examples/crewai_agent/weather_crew.py",
}


def test_the_framework_rows_set_up_line_is_its_examples_record_command_with_no_stepfork_line() -> None:
    """Framework tools need no line (docs/integrations.md, "Framework tools"): each framework's row of the
    table shows the `stepfork record` command its example documents, and the example, which the tests run
    as written, has no Stepfork line at all."""
    table = DOC.read_text(encoding="utf-8").split("\n## ", 1)[0]
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ") for line in table.splitlines()}
    for name, path in FRAMEWORK_ROWS.items():
        one_line = rows[name][2].strip("`")
        assert one_line.startswith("stepfork record -o run.sftrace -- python "), (name, one_line)
        example = (ROOT / path).read_text(encoding="utf-8")
        assert one_line in example, f"{name}: {one_line!r} is not the command {path} documents"
        assert "stepfork" not in example.split('"""', 2)[2], f"{path} has a Stepfork line"
