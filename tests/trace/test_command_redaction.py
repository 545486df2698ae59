"""The command-line rule (stepfork.trace.command_redaction): which arguments are secrets (NEWCOMER 15).

One rule for program.json, replay's Entrypoint line and export's refusal (docs/redaction.md, "Command
lines"); the CLI stories are tests/integrations/test_program_command_secrets.py, export's refusal of the
same arguments tests/analysis/test_export_command_secrets.py. Runs with stepfork-trace alone (.ci/run).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepfork.trace.command_redaction import redact_command

R = "[REDACTED]"


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--token", "abcdef12345"], ["--token", R]),
        (["--password=hunter2pass"], [f"--password={R}"]),
        (["--db-password", "x"], ["--db-password", R]),
        (["--api-key", "k1"], ["--api-key", R]),
        (["--apiKey=k1"], [f"--apiKey={R}"]),
        (["--secret", "s"], ["--secret", R]),
        (["--client_secret", "s"], ["--client_secret", R]),
        (["--slack-webhook-secret", "s"], ["--slack-webhook-secret", R]),
        (["-token", "t"], ["-token", R]),
        (["--GITHUB_TOKEN", "t"], ["--GITHUB_TOKEN", R]),
        (["--header", "Authorization: Bearer abcdefgh12345"], ["--header", f"Authorization: Bearer {R}"]),
        # names the key rule calls secrets (NEWCOMER2 finding 9): the whole value
        (["--auth=hunter3"], [f"--auth={R}"]),
        (["--auth", "Bearer abcdefgh12345"], ["--auth", R]),
        (["--bearer", "abc"], ["--bearer", R]),
        (["--credentials", "user:pw"], ["--credentials", R]),
        (["--creds=user:pw"], [f"--creds={R}"]),
        (["--jwt", "e30.e30.x"], ["--jwt", R]),
        (["--openai-api-key", "Zq8X2mNv"], ["--openai-api-key", R]),
        (["--api_key", "abcdefgh123"], ["--api_key", R]),
        (["--basic-auth", "u:p"], ["--basic-auth", R]),
        (["--db", "postgres://app:s3cretpw@db/x"], ["--db", f"postgres://app:{R}@db/x"]),
    ],
)
def test_secret_values_are_redacted(args: list[str], shown: list[str]) -> None:
    assert redact_command(["python", "agent.py", *args]) == ["python", "agent.py", *shown]


@pytest.mark.parametrize(
    "args",
    [
        ["--token-file", "tok.txt"],
        ["--max-tokens", "100"],
        ["--auth-type", "basic"],
        ["--auth-file", "creds.json"],
        ["--next-page-token", "abc123"],
        ["--key", "user_id"],  # a one-word name is a secret only as a sensitive key (docs/redaction.md)
        ["--secret", "--verbose"],  # an option after a bare option is no value
        ["--token", "-v"],
        ["--password", "--", "a"],
        ["--password="],  # nothing to hide
        ["--city", "Paris", "tokens"],
    ],
)
def test_other_arguments_are_kept(args: list[str]) -> None:
    command = ["python", "agent.py", *args]
    assert redact_command(command) == command


WORD = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
OPTION = st.sampled_from(["--token", "--password", "--db-password", "--api-key", "--city", "-v", "--key"])


@given(st.lists(st.one_of(WORD, OPTION, OPTION.map(lambda o: o + "=v4lue")), max_size=8))
def test_redacting_keeps_the_length_is_idempotent_and_hides_every_option_value(args: list[str]) -> None:
    command = ["python", *args]
    shown = redact_command(command)
    assert len(shown) == len(command)
    assert redact_command(shown) == shown
    secret = ("--token", "--password", "--db-password", "--api-key")
    for index, word in enumerate(command):
        value = command[index + 1] if index + 1 < len(command) else ""
        if word in secret and value and not value.startswith("-"):
            assert shown[index + 1] == R
        if word.split("=", 1)[0] in secret and word.endswith("=v4lue"):
            assert shown[index] == word.replace("v4lue", R)
