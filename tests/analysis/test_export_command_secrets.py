"""Export refuses a command exactly when the command-line rule would redact it (CASES C5, NEWCOMER 15).

``command_secret_problem`` (stepfork.analysis.export) and ``redact_command`` (stepfork.trace) are one rule:
the rule's own cases are tests/trace/test_command_redaction.py, which runs with stepfork-trace alone.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stepfork.analysis.export import command_secret_problem
from stepfork.trace.command_redaction import redact_command

WORD = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
OPTION = st.sampled_from(["--token", "--password", "--db-password", "--api-key", "--auth", "--city", "-v"])
SECRET = st.sampled_from(["Bearer abcdefgh12345", "postgres://app:s3cretpw@db/x", "hunter2pass"])


@given(st.lists(st.one_of(WORD, OPTION, SECRET, OPTION.map(lambda o: o + "=v4lue")), max_size=8))
def test_export_refuses_what_the_rule_redacts_and_names_the_argument(args: list[str]) -> None:
    command = ["python", "agent.py", *args]
    shown = redact_command(command)
    problem = command_secret_problem(command)
    if shown == command:
        assert problem is None
    else:
        first = next(i for i, (a, b) in enumerate(zip(command, shown, strict=True)) if a != b)
        assert problem is not None
        assert problem.startswith(f"argument {first} of the command holds a secret ({shown[first]})")


def test_a_plain_command_is_exported_and_a_password_option_is_refused() -> None:
    assert command_secret_problem(["python", "agent.py", "--city", "Paris"]) is None
    problem = command_secret_problem(["python", "agent.py", "--password", "hunter2pass"])
    assert problem is not None
    assert "argument 3" in problem
    assert "hunter2pass" not in problem
