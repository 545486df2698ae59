"""Secrets typed on a program's command line are never written or printed (NEWCOMER 15, CASES C5).

``stepfork record -- python agent.py --token T --password=P --db-password D``: the bundle's program.json
keeps the command redacted by the rule ``export`` refuses it with (stepfork.trace.command_redaction), replay
prints it redacted on its Entrypoint line, and ``stepfork replay BUNDLE -- COMMAND`` with the real values
still runs the program, which sees them (docs/decisions.md: replay runs the command typed; the recorded
command is never matched). Real CLI, a real OpenAI SDK program and the OpenAI-compatible server on
127.0.0.1, whose request counter proves the replay sent nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_openai import serving
from program_runs import Program

TOKEN, PASSWORD, DB_PASSWORD = "abcdef12345", "hunter2pass", "hunter3pass"
SECRETS = (TOKEN, PASSWORD, DB_PASSWORD)

# A program as one writes it: its credentials on the command line (argparse), the token as the API key.
AGENT = f'''"""Ask the model about a city with credentials given on the command line."""
import argparse
import json
import os
import sys

import openai

parser = argparse.ArgumentParser()
parser.add_argument("--token")
parser.add_argument("--password")
parser.add_argument("--db-password")
parser.add_argument("--city")
args = parser.parse_args()
if (args.token, args.password, args.db_password) != {SECRETS!r}:
    sys.exit(3)  # the program did not get the values typed
client = openai.OpenAI(base_url=os.environ["AGENT_BASE_URL"], api_key=args.token, max_retries=0)
reply = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{{"role": "user", "content": f"Weather in {{args.city}}?"}}]
)
print(json.dumps({{"answer": reply.choices[0].message.content}}))
'''
COMMAND = [
    "python", "agent.py", "--token", TOKEN, f"--password={PASSWORD}", "--db-password", DB_PASSWORD,
    "--city", "Paris",
]  # fmt: skip
REDACTED = [
    "python", "agent.py", "--token", "[REDACTED]", "--password=[REDACTED]", "--db-password", "[REDACTED]",
    "--city", "Paris",
]  # fmt: skip


@pytest.fixture
def program(tmp_path: Path) -> Iterator[Program]:
    """The agent in a folder of its own, run against the local OpenAI-compatible server."""
    (tmp_path / "agent.py").write_text(AGENT)
    with serving() as server:
        yield Program(tmp_path, server, {"AGENT_BASE_URL": server.base_url})


def bundle_text(bundle: Path) -> str:
    return "".join(path.read_text(encoding="utf-8") for path in sorted(bundle.iterdir()))


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_record_writes_the_command_redacted_and_replay_with_the_real_values_runs_it(program: Program) -> None:
    recorded = program.stepfork("record", "-o", "run.sftrace", "--", *COMMAND)
    assert recorded.returncode == 0, recorded.stderr
    assert "21 degrees" in json.loads(recorded.stdout)["answer"]
    written = json.loads((program.folder / "run.sftrace" / "program.json").read_text())
    assert written["command"] == REDACTED
    text = bundle_text(program.folder / "run.sftrace")
    assert not [secret for secret in SECRETS if secret in text]

    sent = len(program.server.requests)
    replayed = program.stepfork("replay", "run.sftrace", "--", *COMMAND)
    output = replayed.stdout + replayed.stderr
    assert replayed.returncode == 0, output  # the program got its values (else exit 3) and was served
    assert f"Entrypoint    {' '.join(REDACTED)}" in replayed.stdout
    assert not [secret for secret in SECRETS if secret in output]
    assert len(program.server.requests) == sent


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_export_refuses_each_argument_record_redacts(program: Program) -> None:
    assert program.stepfork("record", "-o", "run.sftrace", "--", *COMMAND).returncode == 0
    for index in (3, 4, 6):  # --token T, --password=P, --db-password D: one rule, the same arguments
        command = [*COMMAND[:3], *REDACTED[3:]]
        command[index] = COMMAND[index]
        done = program.stepfork("export", "run.sftrace", "--pytest", "-o", "t.py", "--", *command)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"argument {index} of the command holds a secret ({REDACTED[index]})" in done.stderr
        assert not [secret for secret in SECRETS if secret in done.stdout + done.stderr]
        assert not (program.folder / "t.py").exists()


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_the_command_an_entrypoint_export_suggests_says_a_value_was_redacted(program: Program) -> None:
    assert program.stepfork("record", "-o", "run.sftrace", "--", *COMMAND).returncode == 0
    done = program.stepfork("export", "run.sftrace", "--pytest", "-o", "t.py", "--entrypoint", "agent:main")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"-o TEST.py -- {' '.join(REDACTED)} (each [REDACTED] stood for a secret" in done.stderr
    assert not [secret for secret in SECRETS if secret in done.stderr]
