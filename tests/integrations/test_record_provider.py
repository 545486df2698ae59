"""``stepfork record --provider HOST=NAME`` (issue 30): a local server or a gateway named as its provider,
kept in the bundle's program.json so its replays (and exported tests) name it the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from local_openai import serving

from stepfork.trace import load_trace

STEPFORK = Path(sys.executable).parent / "stepfork"

SCRIPT = '''"""An agent on requests, against an OpenAI-compatible local server (vLLM, Ollama...)."""
import os
import sys

import requests

response = requests.post(
    os.environ["AGENT_API_BASE"] + "/chat/completions",
    json={"model": "qwen2.5-7b", "messages": [{"role": "user", "content": f"Weather in {sys.argv[1]}?"}]},
    timeout=30,
)
print(response.json()["choices"][0]["message"]["content"])
'''


def stepfork(args: list[str], cwd: Path, base: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENT_API_BASE": base}
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_a_provider_named_on_record_is_recorded_and_named_the_same_on_replay(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(SCRIPT)
    with serving() as server:
        base, port = server.base_url, server.port
        named = ["--provider", f"127.0.0.1:{port}=vllm", "--provider", "gw.internal=litellm"]
        recorded = stepfork(
            ["record", "-o", "run.sftrace", *named, "--", sys.executable, "agent.py", "Oslo"], tmp_path, base
        )
        assert recorded.returncode == 0, recorded.stderr
    calls = [e for e in load_trace(tmp_path / "run.sftrace").events if str(e.type) == "llm_request"]
    assert [(e.provider, e.model) for e in calls] == [("vllm", "qwen2.5-7b")]
    program = json.loads((tmp_path / "run.sftrace" / "program.json").read_text())
    assert program["providers"] == {f"127.0.0.1:{port}": "vllm", "gw.internal": "litellm"}
    replayed = stepfork(["replay", "run.sftrace", "--", sys.executable, "agent.py", "Oslo"], tmp_path, base)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "llm vllm/qwen2.5-7b (substituted)" in replayed.stdout


def test_a_provider_that_is_not_host_equals_name_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(SCRIPT)
    refused = stepfork(
        ["record", "--provider", "vllm", "--", sys.executable, "agent.py", "Oslo"], tmp_path, ""
    )
    assert (refused.returncode, refused.stderr.count("\n")) == (2, 1), refused.stderr
    assert "invalid provider 'vllm': expected HOST=NAME" in refused.stderr
    assert not list(tmp_path.glob("*.sftrace"))
