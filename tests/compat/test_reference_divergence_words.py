"""Divergence messages keep today's lines and name the fingerprints as the spec's "Matching guarantees" and
the earlier messages do (issue 32): ``recorded input fingerprint``, ``actual input fingerprint``,
``recorded output fingerprint``, ``invalid input/output fingerprint``. Public API and the real CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stepfork import ReplaySession, llm_request, record, trace_tool
from stepfork.replay import ReplayExhaustedError, ReplayMismatchError
from stepfork.trace import TraceIntegrityError, fingerprint, load_trace

from ..conftest import as_legacy_bundle
from ..e2e.conftest import run_cli

HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


@trace_tool
def lookup(order_id: str) -> dict:
    return {"order_id": order_id, "status": "shipped"}


def _ask(text: str) -> dict:
    return llm_request(
        provider="fake", model="demo", input={"messages": [{"role": "user", "content": text}]},
        call=lambda: {"content": "ok"},
    )  # fmt: skip


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    path = tmp_path / "run.sftrace"
    with record("words", output=path):
        lookup("ORD-1")
        _ask("hi")
    return path


def test_a_changed_input_keeps_the_headline_and_names_both_input_fingerprints(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle), pytest.raises(ReplayMismatchError) as info:
        lookup("ORD-2")
    text = str(info.value)
    assert text.splitlines()[0].startswith("call #1: input diverged from the recording at $.order_id")
    expected = fingerprint({"order_id": "ORD-1"})[:12]
    actual = fingerprint({"order_id": "ORD-2"})[:12]
    assert f"  recorded input fingerprint: {expected}…" in text.splitlines()
    assert f"  actual input fingerprint:   {actual}…" in text.splitlines()
    assert info.value.diagnostic.actual_input_fingerprint == fingerprint({"order_id": "ORD-2"})  # full


def test_a_changed_prompt_names_the_input_fingerprint(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle):
        lookup("ORD-1")
        with pytest.raises(ReplayMismatchError, match="input fingerprint"):
            _ask("different")


def test_an_extra_call_names_the_actual_input_fingerprint(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle):
        lookup("ORD-1")
        _ask("hi")
        with pytest.raises(ReplayExhaustedError) as info:
            lookup("ORD-3")
    text = str(info.value)
    assert "already consumed" in text
    assert "actual input fingerprint" in text
    assert "recorded input fingerprint" not in text  # no recorded call, no recorded fingerprint


def test_a_missing_call_names_the_recorded_input_fingerprint(bundle: Path) -> None:
    with ReplaySession.from_trace(bundle) as replay:
        lookup("ORD-1")
    with pytest.raises(ReplayMismatchError) as info:
        replay.verify_complete()
    assert str(info.value).startswith("replay ended before consuming 1 recorded dependency call(s)")
    assert "recorded input fingerprint" in str(info.value)


def _tamper_output(bundle: Path) -> None:
    path = bundle / "events.jsonl"
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    result = next(e for e in events if e["type"] == "tool_result")
    result["output"]["status"] = "lost"  # the stored output fingerprint no longer matches
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    as_legacy_bundle(bundle)  # checked by replay's fingerprints alone


def test_a_recorded_output_that_does_not_match_its_fingerprint_is_invalid(bundle: Path) -> None:
    _tamper_output(bundle)
    # read from a path, the bundle is refused before anything runs, as export refuses it
    with pytest.raises(TraceIntegrityError, match=r"output_hash does not match .*payload_hash_mismatch"):
        ReplaySession.from_trace(bundle)
    # an in-memory Trace is checked by replay's fingerprints when the call is reached
    with (
        ReplaySession(load_trace(bundle)),
        pytest.raises(ReplayMismatchError, match="invalid output fingerprint"),
    ):
        lookup("ORD-1")


def test_the_cli_abbreviates_fingerprints_unless_verbose(bundle: Path) -> None:
    (bundle.parent / "words_agent.py").write_text(
        "from stepfork import trace_tool\n\n\n@trace_tool\ndef lookup(order_id: str) -> dict:\n"
        "    return {}\n\n\ndef run() -> None:\n    lookup('ORD-9')\n",
        encoding="utf-8",
    )
    args = ("replay", bundle.name, "--entrypoint", "words_agent:run")
    short = run_cli(*args, cwd=bundle.parent)
    verbose = run_cli(*args, "--verbose", cwd=bundle.parent)
    assert short.code == verbose.code == 1
    assert "recorded input fingerprint: " in short.out
    assert "…" in short.out
    assert not HEX64.search(short.out)
    assert "actual input fingerprint" in verbose.out
    assert HEX64.search(verbose.out)
