"""diff and noise (issue 28): provider values ignored in every shape the HTTP capture writes, provider ids
paired into one renaming so their echoes compare equal, the first real change still first; --strict,
--show-ignored, the summary line and a user's rules file (--noise-rules), through the API and the CLI."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from stepfork.analysis import diff_traces
from stepfork.trace import Trace
from stepfork.trace.models import LLMRequest, LLMResponse, RunEnd, RunStart, ToolCall, ToolResult

STEPFORK = Path(sys.executable).parent / "stepfork"


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def recording(system: str = "Be brief.", *, echo_wrong: bool = False) -> Trace:
    """An OpenAI tool loop as the HTTP capture records it, every provider value fresh."""
    call_id, answer_id = _id("call_"), _id("chatcmpl-")
    headers = {
        "content-type": "application/json",
        "x-request-id": _id("req_"),
        "date": "Tue, 01 Dec 2026 12:00:0" + str(uuid.uuid4().int % 10) + " GMT",
    }
    first = {
        "id": _id("chatcmpl-"),
        "created": 1767225600 + uuid.uuid4().int % 100,
        "system_fingerprint": _id("fp_")[:13],
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": call_id, "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
                    ],
                }
            }
        ],
    }
    events = [
        {"data": {"id": answer_id, "created": 1767225601, "choices": [{"delta": {"content": "Sunny."}}]}}
    ]
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Umbrella?"}]
    echo = _id("call_") if echo_wrong else call_id
    followup = [
        *messages,
        {
            "role": "assistant",
            "tool_calls": [
                {"id": call_id, "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": echo, "content": "sunny"},
    ]
    trace = Trace(run_id="run_x", agent_name="a")
    add: Any = trace.add

    def request(event_id: str, body: dict[str, Any]) -> LLMRequest:
        http = {"method": "POST", "path": "/v1/chat/completions", "headers": {}, "body": body}
        return LLMRequest(
            id=event_id, run_id="run_x", parent_id="s", provider="openai", model="m", input=http
        )

    add(RunStart(id="s", run_id="run_x", input=None))
    add(request("q1", {"messages": messages}))
    output = {"status": 200, "headers": headers, "json": first}
    add(LLMResponse(id="r1", run_id="run_x", parent_id="q1", model="m", output=output))
    add(ToolCall(id="t", run_id="run_x", parent_id="s", name="get_weather", input={"city": "Paris"}))
    add(ToolResult(id="tr", run_id="run_x", parent_id="t", name="get_weather", output="sunny"))
    add(request("q2", {"messages": followup, "stream": True}))
    sse = {"end": "finished", "event_count": 1, "events": events, "error": None}
    add(
        LLMResponse(
            id="r2",
            run_id="run_x",
            parent_id="q2",
            model="m",
            output={"status": 200, "headers": headers, "sse": sse},
        )
    )
    add(
        RunEnd(
            id="e",
            run_id="run_x",
            parent_id="s",
            run_status="completed",
            output={"answer": "Sunny.", "reply_to": answer_id, "local": f"lc_run--{uuid.uuid4()}-0"},
        )
    )
    return trace


def test_two_recordings_of_the_same_code_are_equivalent_up_to_the_providers_noise() -> None:
    a, b = recording(), recording()
    result = diff_traces(a, b)
    assert result.equivalent, str(result)
    assert result.renamed >= 4  # the call id, both completion ids, the run's own lc_run id
    reasons = {c.path: c.noise for s in result.steps for c in s.ignored}
    assert reasons["input.body.messages[3].tool_call_id"] == "renamed id"
    assert reasons["output.reply_to"] == "renamed id"
    assert reasons["output.local"] == "renamed id"
    assert reasons["output.headers.x-request-id"] == "openai-headers"
    assert reasons["output.sse.events[0].data.id"] == "openai-chat-completion"
    assert "Ignored: " in str(result)
    assert "--show-ignored lists them" in str(result)
    shown = str(diff_traces(a, b, show_ignored=True))
    assert "ignored: output.json.system_fingerprint" in shown
    strict = diff_traces(a, b, strict=True)
    assert not strict.equivalent
    assert (strict.ignored, strict.renamed) == (0, 0)
    assert "output.json.id" in {c.path for c in strict.changes}


def test_a_changed_prompt_is_the_first_change_and_a_wrong_echo_is_still_a_change() -> None:
    result = diff_traces(recording(), recording("Be thorough."))
    changes = [c.path for c in result.changes]
    assert changes == ["input.body.messages[0].content", "input.body.messages[0].content"]
    wrong = diff_traces(recording(), recording(echo_wrong=True))
    assert [c.path for c in wrong.changes] == ["input.body.messages[3].tool_call_id"]
    assert wrong.to_dict()["counts"]["renamed"] >= 1


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(STEPFORK), *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_the_cli_takes_a_users_rules_file_and_refuses_a_bad_one(tmp_path: Path) -> None:
    for name in ("a.sftrace", "b.sftrace"):
        trace = recording()
        response = trace.events[2]
        stamped = {**response.output["json"], "x_gateway": str(uuid.uuid4().int)[:12]}  # a gateway's stamp
        object.__setattr__(response, "output", {**response.output, "json": stamped})
        trace.save(tmp_path / name)
    plain = run_cli(tmp_path, "diff", "a.sftrace", "b.sftrace")
    assert plain.returncode == 1, plain.stdout
    assert "output.json.x_gateway (first)" in plain.stdout
    (tmp_path / "noise.toml").write_text(
        '[[rule]]\nname = "gateway"\nwhere = "body"\npaths = ["x_gateway"]\n'
        'reason = "our gateway stamps it"\n'
    )
    ruled = run_cli(
        tmp_path, "diff", "a.sftrace", "b.sftrace", "--noise-rules", "noise.toml", "--show-ignored"
    )
    assert ruled.returncode == 0, ruled.stdout + ruled.stderr
    assert "ignored: output.json.x_gateway" in ruled.stdout
    assert "(gateway)" in ruled.stdout
    (tmp_path / "bad.toml").write_text('[[rule]]\nname = "x"\nwhere = "body"\npaths = ["a["]\nreason = "r"\n')
    bad = run_cli(tmp_path, "diff", "a.sftrace", "b.sftrace", "--noise-rules", "bad.toml")
    assert bad.returncode == 2
    assert "invalid path 'a['" in bad.stderr
    assert "Traceback" not in bad.stderr
