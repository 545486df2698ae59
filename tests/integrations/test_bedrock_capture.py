"""boto3's Bedrock through the urllib3 capture (issue 30): ``converse`` with a tool and ``converse_stream``
(an AWS event stream) recorded against the local Bedrock API of examples/bedrock_agent and replayed with the
server stopped; the SigV4 signature, the dates and the SDK's ids never enter the matched input."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from stepfork.integrations.urllib3 import instrument_urllib3
from stepfork.replay import ReplayMismatchError, ReplaySession
from stepfork.trace import load_trace, record

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bedrock_agent"
sys.path.insert(0, str(EXAMPLE))

import bedrock_agent  # noqa: E402
from bedrock_server import Bedrock, serve  # noqa: E402

instrument_urllib3()


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Bedrock]]:
    srv, state = serve()
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", f"http://127.0.0.1:{srv.server_address[1]}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDRECORDING")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "recording-secret")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    yield srv, state
    srv.shutdown()
    srv.server_close()


def agent(city: str = "Paris") -> dict[str, str]:
    client = boto3.client("bedrock-runtime")
    return {"answer": bedrock_agent.ask(client, city), "forecast": bedrock_agent.forecast(client, city)}


def test_converse_and_converse_stream_replay_with_the_server_stopped_under_other_credentials(
    bedrock: tuple[Any, Bedrock], bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv, state = bedrock
    with record("bedrock", output=bundle):
        live = agent()
    assert live == {
        "answer": "It is 21 degrees and sunny in Paris.",
        "forecast": "Tomorrow in Paris: mild, light wind, no rain expected.",
    }
    assert len(state.requests) == 3
    assert all(a.startswith("AWS4-HMAC-SHA256 Credential=AKIDRECORDING/") for a in state.authorizations)
    srv.shutdown()
    # another key, another date: every signature differs, and the replay still matches
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDREPLAY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "replay-secret")
    with ReplaySession.from_trace(bundle) as session:
        again = agent()
    session.verify_complete()
    assert again == live
    assert len(state.requests) == 3
    events = load_trace(bundle).events
    calls = [e for e in events if str(e.type) == "llm_request"]
    model = "anthropic.claude-3-haiku-20240307-v1:0"
    assert [(e.provider, e.model) for e in calls] == [("bedrock", model)] * 3
    assert calls[0].input["path"] == "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    assert all(e.input["headers"] == {} for e in calls)  # no Authorization, X-Amz-Date, amz-sdk-*
    text = (bundle / "events.jsonl").read_text()
    for secret in ("AKIDRECORDING", "X-Amz-Date", "amz-sdk-invocation-id", "Signature="):
        assert secret not in text
    outputs = [e for e in events if str(e.type) == "llm_response"]
    assert [e.total_tokens for e in outputs[:2]] == [
        e.output["json"]["usage"]["totalTokens"] for e in outputs[:2]
    ]
    stream = outputs[2].output["eventstream"]
    assert stream["end"] == "finished"
    assert [e["headers"][":event-type"] for e in stream["events"]][-2:] == ["messageStop", "metadata"]
    assert outputs[2].total_tokens == stream["events"][-1]["json"]["usage"]["totalTokens"]
    assert json.loads((bundle / "sdk-versions.json").read_text()) == {"boto3": boto3.__version__}


def test_a_changed_tool_description_diverges_at_its_path(
    bedrock: tuple[Any, Bedrock], bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, state = bedrock
    with record("bedrock", output=bundle):
        agent()
    sent = len(state.requests)
    spec = bedrock_agent.TOOL_CONFIG["tools"][0]["toolSpec"]
    monkeypatch.setitem(spec, "description", "Get the weather forecast of a city.")
    session = ReplaySession.from_trace(bundle)
    with session, contextlib.suppress(Exception):  # botocore wraps the divergence (HTTPClientError)
        agent()
    error = session.divergence
    assert isinstance(error, ReplayMismatchError)
    assert error.code == "input_diverged"
    assert error.path == "$.body.toolConfig.tools[0].toolSpec.description"
    assert len(state.requests) == sent
