"""Ids an agent draws from the stdlib ``secrets`` module are minted values, as ``uuid4`` ids are.

Two recordings of the same agent, and a replay of one, differ in such ids only: ``stepfork diff`` reads
``BEHAVIOR EQUIVALENT`` (the id renamed, exit 0) and ``stepfork replay`` ``MATCHED`` (exit 0), never a
change. ``token_hex``/``token_urlsafe`` read ``secrets.token_bytes`` (minted before this test existed);
ids built one character at a time, the Python documentation's recipe (``"".join(secrets.choice(alphabet)
for i in range(n))``, also after ``from secrets import choice``), and a ``SystemRandom``'s ``choices`` and
``sample`` read as a change until these picks were noted (``stepfork.trace.minting``). What stays a change:
a pick among words (behaviour, not an id) and an id the replay did not draw. The real ``stepfork``
executable in a subprocess; each agent recorded by its own process, as a user's run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import cli_env, run_cli

AGENT = '''
"""Support desk: looks the order up and opens a ticket with an id of its own."""

import os
import random
import secrets
import string
import sys
from secrets import choice

from stepfork import record, trace_tool

ALPHABET = string.ascii_letters + string.digits


@trace_tool
def order_status(order_id: str) -> dict:
    return {"order_id": order_id, "status": "delayed"}


def _ticket(ticket_id: str) -> dict:
    order = order_status("ORD-7")
    return {"ticket": ticket_id, "order": order["order_id"], "status": order["status"]}


def token_hex_id():
    return _ticket(f"tkt_{secrets.token_hex(8)}")


def token_urlsafe_id():
    return _ticket(secrets.token_urlsafe(16))


def choice_recipe_id():
    code = os.environ.get("FIXED_CODE") or "".join(secrets.choice(ALPHABET) for i in range(12))
    return _ticket(f"inv-{code}")


def imported_choice_id():
    return _ticket("".join(choice(ALPHABET) for i in range(16)))


def system_choices_id():
    return _ticket("".join(secrets.SystemRandom().choices(ALPHABET, k=16)))


def system_sample_id():
    return _ticket("".join(random.SystemRandom().sample(ALPHABET, 12)))


def word_pick():
    queue = secrets.choice(os.environ["QUEUES"].split(","))
    return {**_ticket("fixed"), "queue": queue}


if __name__ == "__main__":
    with record("support-desk", output=sys.argv[2], overwrite=True) as session:
        session.set_output(globals()[sys.argv[1]]())
'''

MINTED = [
    "token_hex_id",
    "token_urlsafe_id",
    "choice_recipe_id",
    "imported_choice_id",
    "system_choices_id",
    "system_sample_id",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("secrets")
    (work / "desk.py").write_text(AGENT)
    return work


def recorded(folder: Path, function: str, name: str, **env: str) -> str:
    bundle = f"{name}.sftrace"
    command = [sys.executable, "desk.py", function, bundle]
    subprocess.run(command, cwd=folder, env={**cli_env(), **env}, check=True, timeout=120)
    return bundle


def output_of(folder: Path, bundle: str) -> dict[str, object]:
    events = [json.loads(line) for line in (folder / bundle / "events.jsonl").read_text().splitlines()]
    (end,) = [event for event in events if event["type"] == "run_end"]
    output: dict[str, object] = end["output"]
    return output


@pytest.mark.parametrize("function", MINTED)
def test_a_secrets_id_is_renamed_by_diff_and_replay_never_a_change(folder: Path, function: str) -> None:
    first = recorded(folder, function, f"{function}-1")
    second = recorded(folder, function, f"{function}-2")
    assert output_of(folder, first)["ticket"] != output_of(folder, second)["ticket"]  # fresh ids

    diff = run_cli("diff", first, second, cwd=folder)
    assert diff.code == 0, diff.text
    assert "Result: BEHAVIOR EQUIVALENT" in diff.out, diff.out
    assert "1 id(s) renamed" in diff.out, diff.out

    replay = run_cli("replay", first, "-e", f"desk:{function}", cwd=folder)
    assert replay.code == 0, replay.text
    assert "Recorded behavior: MATCHED" in replay.out, replay.out
    assert "ignored as noise: ticket (renamed id)" in replay.out, replay.out


def test_an_id_the_replay_did_not_draw_is_a_change(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = recorded(folder, "choice_recipe_id", "recipe")
    monkeypatch.setenv("FIXED_CODE", "A1b2C3d4E5f6")  # the replay's id is a constant now: not minted there
    replay = run_cli("replay", bundle, "-e", "desk:choice_recipe_id", cwd=folder)
    assert replay.code == 1, replay.text
    assert "Recorded behavior: DIVERGED" in replay.out, replay.out


def test_a_pick_among_words_is_behaviour_compared_exactly(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``secrets.choice`` of a word is a decision, not an id: another word is a change, in diff and
    replay (the one-word lists make each run's pick certain)."""
    first = recorded(folder, "word_pick", "word-1", QUEUES="priority-support")
    second = recorded(folder, "word_pick", "word-2", QUEUES="standard-support")
    diff = run_cli("diff", first, second, cwd=folder)
    assert "Result: BEHAVIOR CHANGED" in diff.out, diff.out

    monkeypatch.setenv("QUEUES", "standard-support")
    replay = run_cli("replay", first, "-e", "desk:word_pick", cwd=folder)
    assert replay.code == 1, replay.text
    assert "Recorded behavior: DIVERGED" in replay.out, replay.out
