"""The agent of the leak campaign: every corpus secret in arguments, outputs, errors, bytes, headers, prompts.

Copied beside ``corpus.json`` into a temporary folder, it is both the recorder (``python secret_agent.py
OUT_DIR`` writes good/candidate/failing bundles) and the trusted entrypoint ``secret_agent:run_agent``
that replay, minimize, fork, export and run execute.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from stepfork.trace import llm_request, record, register_secret, trace_tool

CORPUS: list[list[Any]] = json.loads((Path(__file__).parent / "corpus.json").read_text(encoding="utf-8"))
register_secret(json.loads((Path(__file__).parent / "registered.json").read_text(encoding="utf-8")))


class ToolFailure(RuntimeError):
    """A tool failure whose message carries a secret."""


@trace_tool
def fetch(
    query: str, headers: dict[str, str], body: bytes, raw: bytes, options: dict[str, Any]
) -> dict[str, Any]:
    """Echo the secrets back in the output: nested, as bytes, and as a dict key."""
    text = query.removeprefix("use ").removesuffix(" now")
    return {"echo": f"got {query}", "nested": {"a": [[text]]}, "bytes": body, "keyed": {text: 1}}


@trace_tool
def failing(text: str) -> str:
    """Fail with the secret in the message and in the chained cause."""
    try:
        raise ValueError(f"upstream said {text}")
    except ValueError as cause:
        raise ToolFailure(f"denied for {text}") from cause


def run_small() -> dict[str, Any]:
    """The first two shapes only: a bundle small enough for minimize's delta debugging."""
    return run_agent(limit=2)


def run_agent(variant: bool = False, limit: int | None = None) -> dict[str, Any]:
    """Make every call of the corpus; return an output holding the last free-text secret."""
    last = ""
    for _shape, text, _needle, header in CORPUS[:limit]:
        if header:
            fetch(query="plain", headers={header: text}, body=b"", raw=b"", options={})
            continue
        fetch(
            query=f"use {text} now",
            headers={"X-Note": text},
            body=text.encode(),
            raw=b"\xff\xfe" + text.encode(),  # not UTF-8: the secret is inside undecodable bytes
            options={"deep": [[{"v": text}]], "keyed": {text: 1}},
        )
        with contextlib.suppress(Exception):  # replay raises RecordedDependencyError, recording ToolFailure
            failing(text)
        llm_request(
            model="m-1",
            input={"messages": [{"role": "user", "content": f"my key is {text}"}]},
            call=lambda text=text: {"content": f"reply {text}"},
        )
        last = text
    return {"count": len(CORPUS), "last": last, "variant": variant}


def main(out_dir: Path) -> None:
    """Record good.sftrace, candidate.sftrace (another output) and failing.sftrace (an escaped failure)."""
    for name, variant in (("good", False), ("candidate", True)):
        with record(
            "secret-agent", output=out_dir / f"{name}.sftrace", run_input={"note": CORPUS[0][1]}
        ) as s:
            s.set_output(run_agent(variant))
    with record("secret-agent", output=out_dir / "small.sftrace") as s:
        s.set_output(run_small())
    texts = " | ".join(text for _s, text, _n, header in CORPUS if not header)
    try:
        with record(f"secret-agent {CORPUS[0][1]}", output=out_dir / "failing.sftrace"):
            run_agent()
            raise ToolFailure(f"fatal: {texts}")
    except ToolFailure:
        pass


if __name__ == "__main__":
    main(Path(sys.argv[1]))
