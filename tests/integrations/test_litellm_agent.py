"""A LiteLLM agent replays 20 of 20 times with its background model-cost-map fetch (issue 29, CASES C14).

What LiteLLM does (verified on the release installed here, litellm 1.110; ``litellm/litellm_core_utils/
get_model_cost_map.py``): ``import litellm`` fetches the model-cost map with ``httpx.get`` (a fresh
``httpx.Client``) from ``LITELLM_MODEL_COST_MAP_URL`` (default: raw.githubusercontent.com) unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set; on a transport error, a 429 or a 5xx it falls back to its bundled map
and retries from a daemon thread (``litellm-model-cost-map-retry``, started without the caller's context),
after ``Retry-After`` or ``2**n + U(0, 1)`` seconds. Under ``stepfork record --`` every one of those requests
is captured; before issue 29 the import's GET was an *LLM call* in the agent's order and the retry landed in
it at a moment of its own (17 of 20 replays MATCHED in the issue).

Here the map comes from the test's OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py: fresh
ids, times and request ids per response), which answers the first fetch 503 with ``retry-after: 0``, as a
CDN under load does: the retry runs at once from LiteLLM's thread, racing the agent's own calls, in the
recording and in every replay. Nothing reaches the internet, and ``LITELLM_LOCAL_MODEL_COST_MAP`` stays
unset. The agent is written as LiteLLM's documentation writes it (``litellm.completion(model=
"openai/gpt-4o-mini", api_base=..., messages=...)``). Slow (LiteLLM's import alone takes seconds):
``hatch run slow:test -- tests/integrations/test_litellm_agent.py -n 0``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from local_openai import LocalOpenAI, serving

from stepfork.trace import load_trace

STEPFORK = Path(sys.executable).parent / "stepfork"
REPLAYS = 20

AGENT = '''"""A weather agent on LiteLLM, as LiteLLM's docs write it."""
import json
import os
import sys

import litellm


def ask(question):
    response = litellm.completion(
        model="openai/gpt-4o-mini",
        api_base=os.environ["AGENT_API_BASE"],
        api_key="sk-local",
        messages=[{"role": "user", "content": question}],
    )
    return response.choices[0].message.content


def main(city="Paris"):
    first = ask(f"What is the weather in {city}?")
    second = ask(f"Say it again, shorter: {first} What about {city}?")
    return {"city": city, "first": first, "answer": second}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))
'''

# the in-process form: the program captures every httpx client it creates, as `stepfork record --` does, so
# that LiteLLM's own fetches are recorded (they use a fresh client of their own)
IN_PROCESS = """
import json
import sys

from stepfork.integrations.autocapture import enable

enable()

from stepfork.trace import record

with record("litellm-weather", output=sys.argv[1]) as session:
    import agent  # LiteLLM's import fetches the cost map here, under the recording

    session.set_output(agent.main())
"""

REPLAY_IN_PROCESS = """
import json
import sys

from stepfork.integrations.autocapture import enable

enable()

from stepfork.replay.outcome import replay_entrypoint


def run():
    import agent  # imported under the replay: the cost-map fetch and its retry are served

    return agent.main()


outcome = replay_entrypoint(sys.argv[1], run)
print(json.dumps(outcome.to_dict()))
"""


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving(unavailable=1) as running:
        yield running


@pytest.fixture
def workdir(tmp_path: Path, server: LocalOpenAI, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    monkeypatch.setenv("AGENT_API_BASE", server.base_url)
    prices = server.base_url.removesuffix("/v1") + "/model_prices.json"
    monkeypatch.setenv("LITELLM_MODEL_COST_MAP_URL", prices)
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.setenv("LITELLM_LOG", "ERROR")
    return tmp_path


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)


def assert_fetch_recorded(bundle: Path, server: LocalOpenAI) -> None:
    """The recording holds the two LLM calls in the agent's order and LiteLLM's two cost-map fetches as
    ``http`` calls, the retry from a thread without the context (recorded under the run)."""
    events = load_trace(bundle).events
    assert [e.model for e in events if str(e.type) == "llm_request"] == ["gpt-4o-mini", "gpt-4o-mini"]
    fetches = [e for e in events if str(e.type) == "tool_call"]
    url = server.base_url.removesuffix("/v1") + "/model_prices.json"
    assert [e.name for e in fetches] == [f"http GET {url}"] * 2
    statuses = [e.output["status"] for e in events if str(e.type) == "tool_result"]
    assert statuses == [503, 200]
    assert server.count("/model_prices.json") == 2


@pytest.mark.slow
def test_a_litellm_program_recorded_with_stepfork_record_replays_20_of_20(
    workdir: Path, server: LocalOpenAI
) -> None:
    recorded = run([str(STEPFORK), "record", "-o", "lite.sftrace", "--", sys.executable, "agent.py"], workdir)
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    bundle = workdir / "lite.sftrace"
    assert_fetch_recorded(bundle, server)
    sent = len(server.requests)
    reports: list[dict[str, Any]] = []
    for _ in range(REPLAYS):
        done = run(
            [str(STEPFORK), "replay", str(bundle), "--json", "--", sys.executable, "agent.py"], workdir
        )
        report = json.loads(done.stdout)
        assert done.returncode == report["exit_code"]
        reports.append(report)
    complete = [r for r in reports if r["exit_code"] == 0 and r["matching"]["status"] == "COMPLETE"]
    print(f"stepfork record -- python agent.py: {len(complete)} of {REPLAYS} replays passed")
    assert len(complete) == REPLAYS, [r["matching"]["message"] for r in reports if r not in complete]
    assert len(server.requests) == sent  # no replay reached the server
    assert all(r["requests"]["served"] == 2 and r["requests"]["recorded"] == 2 for r in reports)


@pytest.mark.slow
def test_a_litellm_agent_recorded_in_process_replays_20_of_20_matched(
    workdir: Path, server: LocalOpenAI
) -> None:
    (workdir / "record_agent.py").write_text(IN_PROCESS)
    (workdir / "replay_agent.py").write_text(REPLAY_IN_PROCESS)
    recorded = run([sys.executable, "record_agent.py", "inproc.sftrace"], workdir)
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    bundle = workdir / "inproc.sftrace"
    assert_fetch_recorded(bundle, server)
    sent = len(server.requests)
    statuses = []
    for _ in range(REPLAYS):
        done = run([sys.executable, "replay_agent.py", str(bundle)], workdir)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        statuses.append((report["exit_code"], report["matching"]["status"], report["behavior"]["status"]))
    matched = statuses.count((0, "COMPLETE", "MATCHED"))
    print(f"in-process record: {matched} of {REPLAYS} replays MATCHED")
    assert matched == REPLAYS, statuses
    assert len(server.requests) == sent


def test_the_agent_needs_no_local_cost_map(workdir: Path) -> None:
    """The premise of the two tests above: nothing sets LITELLM_LOCAL_MODEL_COST_MAP for the agent."""
    assert "LITELLM_LOCAL_MODEL_COST_MAP" not in os.environ
    assert "LITELLM_LOCAL_MODEL_COST_MAP" not in AGENT + IN_PROCESS + REPLAY_IN_PROCESS
