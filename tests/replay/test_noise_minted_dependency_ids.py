"""An id a dependency minted in the recording's own process, handed to the agent, compares exactly and equal.

A fake transport or an in-process model (a test double, a local model wrapper) makes its response ids with
``random.SystemRandom().choices``: the recording notes them as minted (stepfork.trace.minting), while the
replay serves the response without running the body, so it mints nothing. The agent returning that id
unchanged replayed DIVERGED with "expected "fp_044ced959c", got "fp_044ced959c"": the recorded side cut the
string at its minted span and the replayed side did not (tests/integrations/test_noise_agents.py's LangGraph
agents, 2026-12-06). Equal strings are cut alike; a handed-out id still has to match exactly.
"""

from __future__ import annotations

import random
import string
import uuid
from pathlib import Path
from typing import Any

from stepfork.replay.outcome import replay_entrypoint
from stepfork.trace import llm_request, record

_random = random.SystemRandom()


def provider(prompt: str) -> dict[str, Any]:
    """A model answered in-process: fresh ids per response, as providers make them."""
    pick = "".join
    return {
        "id": "chatcmpl-" + pick(_random.choices(string.ascii_letters + string.digits, k=24)),
        "system_fingerprint": "fp_" + pick(_random.choices("0123456789abcdef", k=10)),
        "content": f"answer to {prompt}",
    }


def agent() -> dict[str, Any]:
    response = llm_request(model="gpt-4o-mini", input={"prompt": "hi"}, call=lambda: provider("hi"))
    # the agent's own fresh id: the outputs differ, so their leaves are compared one by one
    mine = str(uuid.uuid4())
    return {"fingerprint": response["system_fingerprint"], "id": response["id"], "request": mine}


def wrong_agent() -> dict[str, Any]:
    response = llm_request(model="gpt-4o-mini", input={"prompt": "hi"}, call=lambda: provider("hi"))
    return {"fingerprint": "fp_0123456789", "id": response["id"], "request": str(uuid.uuid4())}


def test_a_provider_id_minted_in_process_replays_matched(tmp_path: Path) -> None:
    path = tmp_path / "run.sftrace"
    with record("minted-provider", output=path) as session:
        session.set_output(agent())
    for _ in range(5):
        outcome = replay_entrypoint(path, agent)
        assert outcome.behavior.status == "MATCHED", outcome.behavior


def test_another_id_in_its_place_still_diverges(tmp_path: Path) -> None:
    path = tmp_path / "run.sftrace"
    with record("minted-provider", output=path) as session:
        session.set_output(agent())
    outcome = replay_entrypoint(path, wrong_agent)
    assert outcome.behavior.status == "DIVERGED"
    assert "fingerprint" in (outcome.behavior.message or "")
