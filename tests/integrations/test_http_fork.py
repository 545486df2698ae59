"""A program that forks while Stepfork records or replays it (issue 11 break-it review).

A session belongs to the process that started it. A forked child (``os.fork``, a ``multiprocessing`` pool
with the ``fork`` start method) inherits its memory, its bundle's open file and its context: before the
fix its LLM calls were appended to the parent's events.jsonl and its exit finalized the parent's bundle
(duplicate event ids, two ``run_end`` events, a manifest counting other events: a bundle ``validate``
refuses). Now the child runs outside the session, as a subprocess would: its calls are neither recorded
nor replayed, and nothing it does touches the parent's bundle.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx2
import openai
import pytest

from stepfork.integrations.openai import instrument_openai
from stepfork.replay import ReplaySession
from stepfork.trace import record, validate_bundle

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")


def _answer(request: httpx2.Request) -> httpx2.Response:
    question = json.loads(request.content)["messages"][-1]["content"]
    return httpx2.Response(
        200,
        headers={"x-request-id": "req_fork"},
        json={
            "id": "chatcmpl-fork",
            "object": "chat.completion",
            "created": 1767225600,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"echo {question}"},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        },
    )


def ask(question: str) -> str:
    """One chat completion, as the OpenAI SDK docs write it (on a fake transport)."""
    client = openai.OpenAI(
        api_key="sk-fork-test-key", http_client=httpx2.Client(transport=httpx2.MockTransport(_answer))
    )
    instrument_openai(client)
    completion = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return str(completion.choices[0].message.content)


def forking_agent(session: object) -> list[str]:
    """Ask, fork a child that asks and leaves the session's ``with`` block, ask again."""
    answers = [ask("before")]
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 3
        try:
            if ask("child") == "echo child":
                session.__exit__(None, None, None)  # type: ignore[attr-defined]
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    answers.append(ask("after"))
    return answers


def test_a_forked_child_leaves_the_parents_bundle_alone(bundle: Path) -> None:
    session = record("fork", output=bundle)
    with session:
        answers = forking_agent(session)
    assert answers == ["echo before", "echo after"]
    report = validate_bundle(bundle)
    assert report.valid, report
    lines = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]
    asked = [e["input"]["body"]["messages"][-1]["content"] for e in lines if e["type"] == "llm_request"]
    assert asked == ["before", "after"]  # the child's call is not the parent's
    assert [e["type"] for e in lines].count("run_end") == 1

    replay = ReplaySession.from_trace(bundle)
    with replay:
        assert forking_agent(replay) == answers
    replay.verify_complete()
    assert replay.divergence is None


FORKING_SCRIPT = """
import os, sys
pid = os.fork()
if pid == 0:
    print("child done", flush=True)
    sys.exit(0)  # the child leaves the script as a script would, into whatever runs it
_, status = os.waitpid(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(os.waitstatus_to_exitcode(status)))
"""


def test_stepfork_script_mode_ends_a_forked_child_where_the_script_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `stepfork record|replay -- python script.py` run the script with scriptrun.run_program: a child
    # leaving the script must exit there, not go on into the recording's end or print a replay report
    from stepfork.cli.scriptrun import run_program

    monkeypatch.setattr(sys, "argv", list(sys.argv))  # run_program sets the script's argv and path
    monkeypatch.setattr(sys, "path", list(sys.path))
    script = tmp_path / "forker.py"
    script.write_text(FORKING_SCRIPT)
    status_file = tmp_path / "child-status"
    parent = os.getpid()
    try:
        run_program([str(script), str(status_file)])
    finally:
        if os.getpid() != parent:  # the child came back here: never let it run the rest of pytest
            os._exit(99)
    assert status_file.read_text() == "0"
