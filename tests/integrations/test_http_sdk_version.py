"""A bundle recorded under another SDK version (issue 11 break-it review).

With the HTTP capture the matched input is the request the SDK builds, so an SDK upgrade that changes it
(a new default field, a renamed parameter) diverges, rightly, at its JSON path, yet nothing said the SDK
had changed, though the bundle names the version it was recorded with (sdk-versions.json). The
divergence now hints at it; with the same version no such hint is given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from capture_harness import divergence, record_run
from fake_providers import FakeProvider

from stepfork.integrations.httpx import instrument_httpx
from stepfork.integrations.openai import instrument_openai


def client(fake: FakeProvider) -> openai.OpenAI:
    http = httpx2.Client(transport=fake.transport())
    return instrument_openai(openai.OpenAI(api_key="sk-secret-test-key", http_client=http, max_retries=0))


def ask(question: str) -> Any:
    def agent(c: openai.OpenAI) -> Any:
        messages = [{"role": "user", "content": question}]
        return c.chat.completions.create(model="gpt-4o-mini", messages=messages)

    return agent


def test_a_divergence_under_another_sdk_version_names_both_versions(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:  # the recording's SDK: an older openai
        patch.setattr(openai, "__version__", "3.0.0")  # what the integration reads (sdk_version)
        record_run(bundle, ask("Weather in Paris?"), client)
    error = divergence(bundle, ask("Weather in Lyon?"), client)
    assert error.code == "input_diverged"
    assert error.diagnostic is not None
    hint = error.diagnostic.hint or ""
    assert f"recorded with openai 3.0.0; this replay runs openai {openai.__version__}" in hint
    assert "hint: " in str(error)


def test_no_sdk_hint_when_the_version_is_the_same(bundle: Path) -> None:
    record_run(bundle, ask("Weather in Paris?"), client)
    error = divergence(bundle, ask("Weather in Lyon?"), client)
    assert "this replay runs openai" not in str(error)


def generic_client(user_agent: str | None) -> Any:
    """An OpenAI client on an ``instrument_httpx`` client, as zero-code recording (``stepfork record --
    python ...``) instruments it: the capture is not told which SDK it serves."""

    def make(fake: FakeProvider) -> openai.OpenAI:
        http = instrument_httpx(httpx2.Client(transport=fake.transport()))
        headers = {"User-Agent": user_agent} if user_agent else None
        return openai.OpenAI(
            api_key="sk-secret-test-key", http_client=http, max_retries=0, default_headers=headers
        )

    return make


def test_an_sdk_the_capture_was_not_told_of_is_named_by_its_user_agent(bundle: Path) -> None:
    record_run(bundle, ask("Weather in Paris?"), generic_client("OpenAI/Python 3.0.0"))
    assert json.loads((bundle / "sdk-versions.json").read_text()) == {"openai": "3.0.0"}
    error = divergence(bundle, ask("Weather in Lyon?"), generic_client(None))
    assert f"recorded with openai 3.0.0; this replay runs openai {openai.__version__}" in str(error)
