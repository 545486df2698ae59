"""The LiteLLM example (examples/litellm_agent), end to end through the real CLI (issue 30).

``litellm.completion`` (twice: a question, then a follow-up holding the first answer), ``acompletion``,
``completion(stream=True, stream_options={"include_usage": True})`` and the LiteLLM proxy as a gateway
(``litellm_proxy/gpt-4o-mini`` at ``LITELLM_PROXY_URL``), as LiteLLM's docs write them, with no Stepfork
line, against a local OpenAI-compatible server on 127.0.0.1 (helpers/local_openai.py), which also serves
LiteLLM's model-cost map (``LITELLM_MODEL_COST_MAP_URL``): its GET at import is an ``http`` call. The proxy
is not run here (``litellm[proxy]`` is not installed): the same local server stands in for it, as any
OpenAI-compatible gateway would answer. test_litellm_agent.py replays the cost map's retry thread 20
times; this file tells the example's story. Slow: ``hatch run slow:test -- tests/integrations/
test_litellm_example.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import serving
from program_runs import Program, matched_in_process, replays_pass, story

pytestmark = pytest.mark.slow

SCRIPT = "weather_litellm.py"

CHANGES = {  # an edit of the example and where its replay diverges (the Chat Completions request)
    "prompt": (
        '"What is the weather in {city}?"',
        '"How is the weather in {city}?"',
        "$.body.messages[0].content",
    ),
    "argument": (
        'messages=messages(f"Say it shorter: {answer} In {city}?"))\n    return second',
        'messages=messages(f"Say it shorter: {answer} In {city}?"), temperature=0)\n    return second',
        "$.body.temperature",
    ),
}


@pytest.fixture
def program(tmp_path: Path) -> Iterator[Program]:
    with serving() as server:
        root = server.base_url.removesuffix("/v1")
        yield Program.copy(
            "litellm_agent",
            tmp_path / "agent",
            server,
            LITELLM_MODEL_COST_MAP_URL=f"{root}/model_prices.json",
            LITELLM_PROXY_URL=root,
            LITELLM_LOG="ERROR",
        )


def test_completion_records_replays_diverges_diffs_and_its_test_passes(program: Program) -> None:
    cost_map = f"http GET {program.server.base_url.removesuffix('/v1')}/model_prices.json"
    figures = story(program, [SCRIPT, "sync", "Paris"], CHANGES, script=SCRIPT, llm_calls=2, tools=[cost_map])
    print(f"completion: {figures}")


@pytest.mark.parametrize(("how", "calls"), [("async", 2), ("stream", 2), ("proxy", 1)])
def test_acompletion_streaming_and_the_proxy_replay_with_their_tokens(
    program: Program, how: str, calls: int
) -> None:
    print(f"{how}: {replays_pass(program, [SCRIPT, how, 'Lyon'], llm_calls=calls)} replays passed")


def test_recorded_in_process_the_replay_is_matched(program: Program) -> None:
    print(f"in-process: {matched_in_process(program, 'weather_litellm:main', 'sync', 'Paris')} MATCHED")
