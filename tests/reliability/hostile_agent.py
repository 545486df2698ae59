"""An agent whose tool names, model names and values are hostile text (injection campaign, issue 7 part 4).

Each hostile string, if it were ever evaluated as code, would create a file named ``PWNED-<n>`` in the
current directory; the campaign checks that none exists. Copied beside ``hostile.json`` (the strings).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepfork.trace import llm_request, record, trace_tool

HOSTILE: list[str] = json.loads((Path(__file__).parent / "hostile.json").read_text(encoding="utf-8"))


def _tool(name: str) -> Any:
    @trace_tool(name=name)
    def hostile_tool(value: str) -> dict[str, str]:
        return {name: value, "echo": value}

    return hostile_tool


TOOLS = [_tool(h) for h in HOSTILE]


def run_agent() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (text, tool) in enumerate(zip(HOSTILE, TOOLS, strict=True)):
        result = tool(text)
        reply = llm_request(model=text, input={"prompt": text}, call=lambda text=text: {"text": text})
        out[f"k{i}"] = [result["echo"], reply["text"]]
    out["keys"] = {text: i for i, text in enumerate(HOSTILE)}
    return out


def record_into(path: Path, agent_name: str) -> Path:
    with record(agent_name, output=path, run_input={"hostile": HOSTILE}) as session:
        session.set_output(run_agent())
    return path
