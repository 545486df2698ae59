"""A 6-digit number drawn from the system's randomness is minted, not behaviour (docs/replay.md "Fresh
values"; stepfork.trace.minting ``MIN_NUMBER``).

An agent mints an order number with ``SystemRandom().randint(100000, 999999)`` and a one-time code with
``secrets.randbelow(900000) + 100000``, sends both to the model in its prompt (the real OpenAI SDK against
an OpenAI-compatible server on 127.0.0.1, fresh ids per response) and the code to an SMS tool as a number,
and returns them. Before, a drawn number of fewer than 8 digits was not noted, so two recordings of this
same code were BEHAVIOR CHANGED and its replay DIVERGED at the tool's ``code``. Now both rename as a
``uuid4()`` id does: ``stepfork diff`` says EQUIVALENT and ``stepfork replay`` MATCHED. A real change still
shows: the code made a constant (a 6-digit number the run did not draw), or the tool sent a second draw
where the prompt said the first (two places that held one number now hold two), is CHANGED in the diff and
DIVERGED in replay. All through the real CLI, ``stepfork record -- python agent.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import LocalOpenAI, serving

STEPFORK = Path(sys.executable).parent / "stepfork"

AGENT = """
import json
import secrets
import sys
from random import SystemRandom

from openai import OpenAI
from stepfork import trace_tool

client = OpenAI(base_url=sys.argv[1], api_key="sk-local", max_retries=0)


@trace_tool
def send_sms(phone: str, code: int) -> dict:
    return {{"status": "queued", "to": phone}}


def main() -> dict:
    order = SystemRandom().randint(100000, 999999)
    code = {code}
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {{"role": "system", "content": "You write short SMS messages."}},
            {{"role": "user", "content": f"Order {{order}} ships; tell the customer their code {{code}}."}},
        ],
    )
    sent = send_sms("+15550100", {sent})
    return {{"order": order, "code": str(code), "sms": reply.choices[0].message.content, "sent": sent}}


if __name__ == "__main__":
    print(json.dumps(main()))
"""

DRAWN = "secrets.randbelow(900000) + 100000"
PROGRAMS = {
    "agent": {"code": DRAWN, "sent": "code"},
    "constant": {"code": "482913", "sent": "code"},  # a 6-digit number written in the code: not drawn
    "second_draw": {"code": DRAWN, "sent": "SystemRandom().randint(100000, 999999)"},  # not the one it said
}


@pytest.fixture
def server() -> Iterator[LocalOpenAI]:
    with serving() as running:
        yield running


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


def program(folder: Path, name: str) -> Path:
    """The agent's folder for the program ``name`` (:data:`PROGRAMS`): ``agent.py`` in a folder of its
    own, so every version is the same script (the same agent name) as a user's edited file is."""
    work = folder / name
    work.mkdir(exist_ok=True)
    (work / "agent.py").write_text(textwrap.dedent(AGENT.format(**PROGRAMS[name])))
    return work


def record(folder: Path, name: str, server: LocalOpenAI, bundle: str) -> Path:
    work = program(folder, name)
    done = cli(work, "record", "-o", bundle, "--", sys.executable, "agent.py", server.base_url)
    assert done.returncode == 0, done.stderr
    return work / bundle


def test_two_recordings_of_the_same_code_are_equivalent_and_it_replays_matched(
    tmp_path: Path, server: LocalOpenAI
) -> None:
    first = record(tmp_path, "agent", server, "first.sftrace")
    again = record(tmp_path, "agent", server, "again.sftrace")
    done = cli(tmp_path, "diff", str(first), str(again))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Result: BEHAVIOR EQUIVALENT" in done.stdout
    assert "id(s) renamed" in done.stdout
    before = server.count()
    command = ("replay", str(first), "--json", "--", sys.executable, "agent.py", server.base_url)
    done = cli(tmp_path / "agent", *command)
    report = json.loads(done.stdout)
    assert done.returncode == 0, report["matching"]
    assert report["matching"]["status"] == "COMPLETE", report["matching"]
    assert server.count() == before  # served from the recording
    minted = json.loads((first / "minted.json").read_text())["values"]
    assert [len(value) for value in minted] == [6, 6], minted  # the order and the code


@pytest.mark.parametrize("changed", ["constant", "second_draw"])
def test_a_changed_code_is_still_changed_and_diverged(
    tmp_path: Path, server: LocalOpenAI, changed: str
) -> None:
    first = record(tmp_path, "agent", server, "first.sftrace")
    other = record(tmp_path, changed, server, "other.sftrace")
    done = cli(tmp_path, "diff", str(first), str(other))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Result: BEHAVIOR CHANGED" in done.stdout
    assert "input.code" in done.stdout or "input.body.messages" in done.stdout, done.stdout
    work = program(tmp_path, changed)
    done = cli(work, "replay", str(first), "--json", "--", sys.executable, "agent.py", server.base_url)
    report = json.loads(done.stdout)
    assert done.returncode == 1, report["matching"]
    assert report["matching"]["status"] == "DIVERGED", report["matching"]
