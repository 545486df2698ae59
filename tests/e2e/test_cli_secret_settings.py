"""Secrets under ordinary setting names never reach a file or a screen (NEWCOMER2 findings 8 and 19).

An agent reads its settings from the environment with pydantic-settings, as that library's docs show, and
hands the settings object to a ``@trace_tool``: the values (no vendor prefix: a Mistral/Azure-style key, a
password) sit under ``openai_api_key``, ``db_password``, ``github_token``, ``hf_token``, ``api_token``.
Recorded with the real ``stepfork record --``, then validated, inspected, exported, run, replayed
(matching and diverging), viewed and diffed against a second recording made with other secret values: no
secret value appears in any file of the bundles, the exported test, the HTML view or any command's output,
while the count ``max_tokens`` and the cursor ``next_page_token`` stay readable.

And replay's divergence line about an output key named like a data key (``idempotency_key``) keeps its
word "expected" and shows both values, as the bundle does (finding 19).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Result, cli_env, stepfork_executable

AGENT = '''"""An agent whose tool gets the app's settings, read from the environment (pydantic-settings)."""
import json

from pydantic_settings import BaseSettings

from stepfork import trace_tool


class Settings(BaseSettings):
    openai_api_key: str
    db_password: str
    github_token: str
    hf_token: str
    api_token: str
    max_tokens: int = 512
    next_page_token: str = "CAoQAA"


@trace_tool
def init_clients(settings: Settings) -> dict:
    return {"ready": True, "config": settings.model_dump()}


def run_agent() -> dict:
    ready = init_clients(Settings())
    return {"ready": ready["ready"], "max_tokens": ready["config"]["max_tokens"]}


if __name__ == "__main__":
    print(json.dumps(run_agent()))
'''

FIRST = {
    "OPENAI_API_KEY": "Zq8X2mNvL4pR7tY1wK9sB3dF6gH0jA5c",
    "DB_PASSWORD": "Pa55word-Prod-2026",
    "GITHUB_TOKEN": "deadbeefcafe0123456789abcdef0123",
    "HF_TOKEN": "HFtok3nValue0123456789",
    "API_TOKEN": "apitok-7781-9921-XYZ",
}
SECOND = {
    "OPENAI_API_KEY": "Other0penAIkeyValue1234567890ab",
    "DB_PASSWORD": "Winter-Pa55-2027",
    "GITHUB_TOKEN": "0123456789abcdef0123456789abcdef",
    "HF_TOKEN": "HFtok3nOther9876543210",
    "API_TOKEN": "apitok-1111-2222-ABC",
}
SECRETS = [*FIRST.values(), *SECOND.values()]


def run(folder: Path, env: dict[str, str], *args: str) -> Result:
    """``stepfork ARGS`` in ``folder`` with the settings' environment variables ``env`` set."""
    done = subprocess.run(
        [stepfork_executable(), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        encoding="utf-8",
        input="",
        env={**cli_env(), **env},
        timeout=120,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def files_text(*paths: Path) -> str:
    texts = []
    for path in paths:
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file():
                texts.append(file.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_setting_secrets_are_absent_from_every_file_and_every_output(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    outputs: list[Result] = []
    first = run(tmp_path, FIRST, "record", "-o", "s.sftrace", "--", "python", "agent.py")
    assert first.code == 0, first.text
    changed = {**SECOND, "MAX_TOKENS": "1024"}
    second = run(tmp_path, changed, "record", "-o", "s2.sftrace", "--", "python", "agent.py")
    assert second.code == 0, second.text

    bundle = files_text(tmp_path / "s.sftrace")
    assert leaked(bundle) == []
    assert leaked(files_text(tmp_path / "s2.sftrace")) == []
    events = [json.loads(line) for line in (tmp_path / "s.sftrace" / "events.jsonl").read_text().splitlines()]
    settings = next(e for e in events if e["type"] == "tool_call")["input"]["settings"]["value"]
    assert settings["openai_api_key"] == settings["db_password"] == "[REDACTED]"
    assert (settings["max_tokens"], settings["next_page_token"]) == (512, "CAoQAA")  # a count, a cursor

    validated = run(tmp_path, FIRST, "validate", "s.sftrace")
    assert (validated.code, "unredacted_secret" in validated.text) == (0, False), validated.text
    outputs += [validated, run(tmp_path, FIRST, "inspect", "s.sftrace", "--full")]

    exported = run(tmp_path, FIRST, "export", "s.sftrace", "-o", "test_s.py", "--", "python", "agent.py")
    assert exported.code == 0, exported.text
    ran = run(tmp_path, FIRST, "run", "test_s.py")
    assert (ran.code, "Verdict: PASSED" in ran.out) == (0, True), ran.text
    outputs += [exported, ran]

    matched = run(tmp_path, FIRST, "replay", "s.sftrace", "--", "python", "agent.py")
    assert (matched.code, "Dependency matching: COMPLETE" in matched.out) == (0, True), matched.text
    diverged = run(tmp_path, changed, "replay", "s.sftrace", "--", "python", "agent.py")
    assert (diverged.code, "max_tokens (first): expected 512" in diverged.out) == (1, True), diverged.text
    as_json = run(tmp_path, SECOND, "replay", "s.sftrace", "--json", "--", "python", "agent.py")
    outputs += [matched, diverged, as_json]

    viewed = run(tmp_path, FIRST, "view", "s.sftrace", "-o", "s.html")
    assert viewed.code == 0, viewed.text
    diffed = run(tmp_path, FIRST, "diff", "s.sftrace", "s2.sftrace")
    assert (diffed.code, "BEHAVIOR CHANGED" in diffed.out) == (1, True), diffed.text
    assert "candidate: 1024" in diffed.out  # the change is shown, the secrets are not
    outputs += [viewed, diffed, run(tmp_path, FIRST, "diff", "s.sftrace", "s2.sftrace", "--json")]

    written = files_text(tmp_path / "test_s.py", tmp_path / "s.html", tmp_path / "s.sftrace")
    assert leaked(written) == []
    assert leaked("\n".join(result.text for result in outputs)) == []


PICK_AGENT = '''"""Book the cheaper of two offers; BUG=2 reuses the confirmation id as the idempotency key."""
import os
import sys
import uuid

from stepfork import record, trace_tool


@trace_tool
def search_flights(dest: str) -> list:
    return [{"id": str(uuid.uuid4()), "price": 320}, {"id": str(uuid.uuid4()), "price": 450}]


def run_agent():
    offers = search_flights("LIS")
    confirmation, key = str(uuid.uuid4()), str(uuid.uuid4())
    if os.environ.get("BUG") == "2":
        key = confirmation
    return {"booked": offers[0]["id"], "confirmation": confirmation, "idempotency_key": key}


if __name__ == "__main__":
    with record("pick", output=sys.argv[1]) as session:
        session.set_output(run_agent())
'''


def test_the_divergence_line_of_a_data_key_keeps_its_words_and_values(tmp_path: Path) -> None:
    (tmp_path / "agent_pick.py").write_text(PICK_AGENT)
    subprocess.run([sys.executable, "agent_pick.py", "p.sftrace"], cwd=tmp_path, check=True, timeout=120)
    recorded = json.loads((tmp_path / "p.sftrace" / "events.jsonl").read_text().splitlines()[-1])["output"]
    replayed = run(tmp_path, {"BUG": "2"}, "replay", "p.sftrace", "-e", "agent_pick:run_agent")
    assert replayed.code == 1, replayed.text
    line = next(line for line in replayed.out.splitlines() if "output differs at" in line)
    assert "[REDACTED]" not in line
    assert f'output differs at \'idempotency_key\': expected "{recorded["idempotency_key"]}", got "' in line
