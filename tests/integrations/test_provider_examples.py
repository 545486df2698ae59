"""examples/google_genai_agent and examples/bedrock_agent end to end through the real CLI (issue 30).

Each agent is written as its SDK's docs write it, with no Stepfork import, and talks to a real local
provider server on 127.0.0.1 started here (the example's own: Gemini's JSON and SSE, Bedrock's JSON and
AWS event stream, fresh ids per response). Each is recorded with ``stepfork record --``, inspected (provider,
model, tokens), replayed MATCHED with the server stopped, replayed with a changed prompt, tool description
and argument (each DIVERGED at its JSON path), exported and run (PASSED). Two recordings of the unchanged
example diff EQUIVALENT (NEWCOMER finding 7: Gemini's base64url ``responseId``, Bedrock's
``metrics.latencyMs`` and its event stream's random ``p`` padding are noise), and ``--strict`` shows
that they differed. Slow (three SDK imports per command): ``hatch run slow:test --
tests/integrations/test_provider_examples.py -n 0``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEPFORK = Path(sys.executable).parent / "stepfork"


@dataclass(frozen=True)
class Example:
    folder: str
    script: str
    server: str
    provider_model: str
    env: dict[str, str]  # PORT is replaced by the server's port
    prompt_path: str
    description: tuple[str, str, str]  # (text in the script, its replacement, the divergence path)
    argument: tuple[str, str, str]


GENAI = Example(
    "google_genai_agent",
    "genai_agent.py",
    "gemini_server",
    "google/gemini-2.5-flash",
    {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:PORT", "GEMINI_API_KEY": "local-gemini-key"},
    "$.body.contents[0].parts[0].text",
    (
        "Returns the current weather in a city.",
        "Returns the weather forecast of a city.",
        "$.body.tools[0].functionDeclarations[0].description",
    ),
    ("temperature=0", "temperature=0.7", "$.body.generationConfig.temperature"),
)
BEDROCK = Example(
    "bedrock_agent",
    "bedrock_agent.py",
    "bedrock_server",
    "bedrock/anthropic.claude-3-haiku-20240307-v1:0",
    {
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://127.0.0.1:PORT",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIDLOCALEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "local-example-secret",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    },
    "$.body.messages[0].content[0].text",
    (
        "Get the current weather in a city.",
        "Get the weather forecast of a city.",
        "$.body.toolConfig.tools[0].toolSpec.description",
    ),
    ('"maxTokens": 256', '"maxTokens": 512', "$.body.inferenceConfig.maxTokens"),
)


def command(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def serve(example: Example, into: Path) -> tuple[Any, Any, dict[str, str]]:
    """Start the example's own provider server on a free port and copy its script into ``into``: the
    server, its state (the requests it received) and the environment pointing the SDK at it."""
    folder = EXAMPLES / example.folder
    sys.path.insert(0, str(folder))
    try:
        server_module: Any = __import__(example.server)
    finally:
        sys.path.remove(str(folder))
    srv, state = server_module.serve()
    port = str(srv.server_address[1])
    shutil.copy2(folder / example.script, into)
    return srv, state, {k: v.replace("PORT", port) for k, v in example.env.items()}


@pytest.mark.slow
@pytest.mark.parametrize("example", [GENAI, BEDROCK], ids=["google-genai", "bedrock"])
def test_the_example_records_inspects_replays_diverges_exports_and_runs(
    example: Example, tmp_path: Path
) -> None:
    srv, state, env = serve(example, tmp_path)
    program = [sys.executable, example.script, "Paris"]
    try:
        recorded = command(["record", "-o", "run.sftrace", "--", *program], tmp_path, env)
        assert recorded.returncode == 0, recorded.stderr[-3000:]
        output = json.loads(recorded.stdout)
        assert output["answer"].endswith("It is 21 degrees and sunny in Paris.")
        assert output["forecast"] == "Tomorrow in Paris: mild, light wind, no rain expected."
    finally:
        srv.shutdown()
        srv.server_close()
    sent = len(state.requests)
    assert sent == 3
    events = (tmp_path / "run.sftrace" / "events.jsonl").read_text()
    assert env.get("GEMINI_API_KEY", env.get("AWS_SECRET_ACCESS_KEY", "")) not in events

    inspected = command(["inspect", "run.sftrace"], tmp_path, env)
    assert inspected.returncode == 0, inspected.stderr
    assert inspected.stdout.count(example.provider_model) == 6  # three requests, three responses
    tokens = next(line for line in inspected.stdout.splitlines() if line.startswith("Tokens:"))
    assert "prompt" in tokens
    assert "completion" in tokens

    replayed = command(["replay", "run.sftrace", "--", *program], tmp_path, env)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout.splitlines()[0]) == output
    assert replayed.stdout.count("(substituted)") == 3
    assert "Dependency matching: COMPLETE" in replayed.stdout
    assert len(state.requests) == sent

    prompt = command(["replay", "run.sftrace", "--", sys.executable, example.script, "Lyon"], tmp_path, env)
    assert prompt.returncode == 1, prompt.stdout + prompt.stderr
    assert f"input diverged from the recording at {example.prompt_path}" in prompt.stdout

    for old, new, path in (example.description, example.argument):
        changed = tmp_path / f"changed_{example.script}"
        text = (tmp_path / example.script).read_text()
        assert old in text
        changed.write_text(text.replace(old, new))
        diverged = command(
            ["replay", "run.sftrace", "--", sys.executable, changed.name, "Paris"], tmp_path, env
        )
        assert diverged.returncode == 1, diverged.stdout + diverged.stderr
        assert f"input diverged from the recording at {path}" in diverged.stdout
    assert len(state.requests) == sent

    exported = command(["export", "run.sftrace", "-o", "test_example.py", "--", *program], tmp_path, env)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    passed = command(["run", "test_example.py"], tmp_path, env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Verdict: PASSED" in passed.stdout
    assert len(state.requests) == sent


@pytest.mark.slow
@pytest.mark.parametrize("example", [GENAI, BEDROCK], ids=["google-genai", "bedrock"])
def test_two_recordings_of_the_unchanged_example_diff_equivalent(example: Example, tmp_path: Path) -> None:
    srv, _, env = serve(example, tmp_path)
    try:
        for bundle in ("a.sftrace", "b.sftrace"):
            done = command(
                ["record", "-o", bundle, "--", sys.executable, example.script, "Paris"], tmp_path, env
            )
            assert done.returncode == 0, done.stderr[-3000:]
    finally:
        srv.shutdown()
        srv.server_close()
    same = command(["diff", "a.sftrace", "b.sftrace", "--show-ignored"], tmp_path, env)
    assert same.returncode == 0, same.stdout
    assert "Result: BEHAVIOR EQUIVALENT" in same.stdout
    noise = {
        "google-genai": [r"ignored: output\.json\.responseId: .* \(google-genai\)"],
        "bedrock": [
            r"ignored: output\.eventstream\.events\[0\]\.json\.p: .* \(bedrock\)",
            r"ignored: output\.json\.metrics\.latencyMs: \d+ -> \d+ \(bedrock\)",
        ],
    }
    for pattern in noise["google-genai" if example is GENAI else "bedrock"]:
        assert re.search(pattern, same.stdout), same.stdout
    strict = command(["diff", "a.sftrace", "b.sftrace", "--strict"], tmp_path, env)
    assert strict.returncode == 1, strict.stdout  # the provider's values did differ
