"""Provider, model, SDK and tokens of every provider the HTTP capture names (issue 30), on the headers and
bodies the SDKs and providers really send."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stepfork.integrations import _http_naming as naming
from stepfork.integrations._http_naming import (
    model_of,
    name_providers,
    parse_provider,
    provider_for,
    sdk_from_headers,
)
from stepfork.integrations._http_usage import body_usage, events_usage


@pytest.fixture(autouse=True)
def _no_process_table() -> Iterator[None]:
    saved = naming.named_providers()
    naming._process_hosts.clear()
    yield
    naming._process_hosts.clear()
    naming._process_hosts.update(saved)


def test_known_hosts_and_patterns() -> None:
    assert provider_for("generativelanguage.googleapis.com") == "google"
    assert provider_for("us-central1-aiplatform.googleapis.com") == "vertex_ai"
    assert provider_for("bedrock-runtime.us-east-1.amazonaws.com") == "bedrock"
    assert provider_for("bedrock-runtime-fips.us-west-2.amazonaws.com") == "bedrock"
    assert provider_for("s3.us-east-1.amazonaws.com") == "s3.us-east-1.amazonaws.com"
    assert provider_for("api.mistral.ai") == "mistral"
    assert provider_for("api.cohere.com") == "cohere"
    assert provider_for("api.groq.com") == "groq"


def test_a_local_server_of_an_api_one_provider_serves_is_that_provider() -> None:
    gemini = "/v1beta/models/gemini-2.5-flash:generateContent"
    assert provider_for("127.0.0.1", path=gemini) == "google"
    assert provider_for("127.0.0.1", path="/v1beta/models/gemini-2.5-flash:streamGenerateContent") == "google"
    vertex = "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent"
    assert provider_for("10.0.0.5", path=vertex) == "vertex_ai"
    converse = "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    assert provider_for("localhost", path=converse) == "bedrock"
    # an OpenAI-shaped path says nothing: the host (or the integration's default) names it
    assert provider_for("127.0.0.1", path="/v1/chat/completions") == "127.0.0.1"
    assert provider_for("127.0.0.1", default="openai", path="/v1/chat/completions") == "openai"


def test_hosts_first_by_port_then_host_then_the_process_table() -> None:
    assert provider_for("127.0.0.1", {"127.0.0.1:8000": "vllm"}, port=8000) == "vllm"
    assert provider_for("127.0.0.1", {"127.0.0.1:8000": "vllm"}, port=9000) == "127.0.0.1"
    assert provider_for("127.0.0.1", {"127.0.0.1": "ollama"}, port=11434) == "ollama"
    name_providers({"gw.internal": "litellm-proxy", "127.0.0.1:4000": "litellm"})
    assert provider_for("gw.internal") == "litellm-proxy"
    assert provider_for("127.0.0.1", port=4000) == "litellm"
    assert provider_for("gw.internal", {"gw.internal": "mine"}) == "mine"  # a client's own table first
    name_providers({"api.openai.com": "openai-via-proxy"})  # the process table before the built-in one
    assert provider_for("api.openai.com") == "openai-via-proxy"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("127.0.0.1:8000=vllm", ("127.0.0.1:8000", "vllm")), ("GW.Internal.=openai", ("gw.internal", "openai"))],
)
def test_parse_provider(text: str, expected: tuple[str, str]) -> None:
    assert parse_provider(text) == expected


@pytest.mark.parametrize("text", ["vllm", "=vllm", "host=", "http://h/x=n"])
def test_parse_provider_refuses_what_is_not_host_equals_name(text: str) -> None:
    with pytest.raises(ValueError, match="expected HOST=NAME"):
        parse_provider(text)


def test_the_model_from_the_body_else_from_the_path() -> None:
    assert model_of({"model": "gpt-4o-mini"}, "/v1/chat/completions") == "gpt-4o-mini"
    assert model_of({"contents": []}, "/v1beta/models/gemini-2.5-flash:generateContent") == "gemini-2.5-flash"
    path = "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
    assert model_of({"messages": []}, path) == "anthropic.claude-3-haiku-20240307-v1:0"
    arn = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.meta.llama3/converse"
    assert model_of({}, arn) == "arn:aws:bedrock:us-east-1:1:inference-profile/us.meta.llama3"
    assert model_of({"messages": []}, "/v1/chat/completions") is None


def headers(**values: str) -> object:
    table = {k.replace("_", "-").lower(): v for k, v in values.items()}
    return table.get


@pytest.mark.parametrize(
    ("sent", "sdk"),
    [
        (headers(user_agent="OpenAI/Python 3.57.0"), ("openai", "3.57.0")),
        (headers(user_agent="AsyncOpenAI/Python 2.54.0"), ("openai", "2.54.0")),  # LlamaIndex's client
        (headers(user_agent="AzureOpenAI/Python 3.57.0"), ("openai", "3.57.0")),
        (headers(user_agent="AsyncAnthropic/Python 2.17.0"), ("anthropic", "2.17.0")),
        (headers(user_agent="Groq/Python 0.31.0"), ("groq", "0.31.0")),
        (
            headers(
                user_agent="google-genai-sdk/3.6.1+afc+chat gl-python/3.11.7",
                x_goog_api_client="google-genai-sdk/3.6.1+afc+chat gl-python/3.11.7",
            ),
            ("google-genai", "3.6.1"),
        ),
        (
            headers(
                user_agent="Boto3/1.43.117 md/Botocore#1.43.117 ua/2.1 os/linux#6 lang/python#3.11.7 "
                "m/g,Z cfg/retry-mode#legacy Botocore/1.43.117"
            ),
            ("boto3", "1.43.117"),
        ),
        (headers(user_agent="Botocore/1.43.117 ua/2.1 lang/python#3.11.7"), ("botocore", "1.43.117")),
        (
            headers(x_fern_sdk_name="cohere", x_fern_sdk_version="5.20.0", x_fern_language="Python"),
            ("cohere", "5.20.0"),
        ),
        (headers(user_agent="speakeasy-sdk/python 1.9.10 2.634.2 1.0.0 mistralai"), ("mistralai", "1.9.10")),
        (headers(user_agent="python-requests/2.34.2"), None),
        (headers(), None),
    ],
)
def test_the_sdk_from_its_headers(sent: object, sdk: tuple[str, str] | None) -> None:
    assert sdk_from_headers(sent) == sdk  # type: ignore[arg-type]


def test_tokens_of_every_provider_body() -> None:
    gemini = {
        "usageMetadata": {
            "promptTokenCount": 9,
            "candidatesTokenCount": 12,
            "thoughtsTokenCount": 19,
            "totalTokenCount": 40,
        }
    }
    assert body_usage(gemini) == {"prompt_tokens": 9, "completion_tokens": 31, "total_tokens": 40}
    converse = {"usage": {"inputTokens": 30, "outputTokens": 12, "totalTokens": 42}}
    assert body_usage(converse) == {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}
    cohere_v2 = {
        "usage": {
            "billed_units": {"input_tokens": 5, "output_tokens": 7},
            "tokens": {"input_tokens": 70, "output_tokens": 7},
        }
    }
    assert body_usage(cohere_v2) == {"prompt_tokens": 70, "completion_tokens": 7, "total_tokens": 77}
    cohere_v1 = {"meta": {"billed_units": {"input_tokens": 3, "output_tokens": 4}}}
    assert body_usage(cohere_v1) == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    mistral = {"usage": {"prompt_tokens": 8, "completion_tokens": 2, "total_tokens": 10}}
    assert body_usage(mistral) == {"prompt_tokens": 8, "completion_tokens": 2, "total_tokens": 10}
    # Gemini's streamGenerateContent without alt=sse answers a JSON array of chunks
    chunks = [{"usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}, gemini]
    assert body_usage(chunks) == {"prompt_tokens": 9, "completion_tokens": 31, "total_tokens": 40}


def test_tokens_of_every_provider_stream() -> None:
    gemini = [
        {"data": {"usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}},
        {
            "data": {
                "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 5, "totalTokenCount": 14}
            }
        },
    ]
    assert events_usage(gemini) == {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}
    bedrock = [
        {"headers": {":event-type": "messageStart"}, "json": {"role": "assistant"}},
        {
            "headers": {":event-type": "metadata"},
            "json": {"usage": {"inputTokens": 4, "outputTokens": 6, "totalTokens": 10}},
        },
    ]
    assert events_usage(bedrock) == {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10}
    groq = [
        {
            "data": {
                "choices": [],
                "x_groq": {"usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}},
            }
        }
    ]
    assert events_usage(groq) == {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    cohere = [
        {
            "data": {
                "type": "message-end",
                "delta": {"usage": {"tokens": {"input_tokens": 6, "output_tokens": 2}}},
            }
        }
    ]
    assert events_usage(cohere) == {"prompt_tokens": 6, "completion_tokens": 2, "total_tokens": 8}
