"""An AWS secret access key in a value that holds its access key id (one list, tuple, object, a tool's
result echoing it elsewhere) or on a command line with it is redacted; a lone 40-character string is not
(docs/redaction.md rule 2, NEWCOMER3 finding 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepfork.trace as stepfork  # the trace tests run with stepfork-trace alone (.ci/run)
from stepfork.trace import trace_tool
from stepfork.trace.command_redaction import redact_command
from stepfork.trace.jsonable import to_jsonable
from stepfork.trace.redaction import RedactionFinding, Redactor, redact_text

R = "[REDACTED]"
AK = "AKIAZ7QRSTUVWX2345AB"
SK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SHA1 = "da39a3ee5e6b4b0d3255bfef95601890afd80709"  # 40 hex characters, one case: a digest, not a key


@pytest.mark.parametrize(
    ("value", "expected", "secret_at"),
    [
        ([AK, SK], [R, R], "/1"),
        ([SK, AK], [R, R], "/0"),  # either order
        (["role", AK, "x", f" {SK}\n"], ["role", R, "x", R], "/3"),
        ({"id": AK, "value": SK, "n": 1}, {"id": R, "value": R, "n": 1}, "/value"),
        ([f"key id {AK}", SK], [f"key id {R}", R], "/1"),
        ([[AK], SK], [[R], R], "/1"),  # in another list of the same value
        # a tool's result holding the pair and echoing the secret under a neutral key (NEWCOMER3's agent)
        ({"acct": {"misc": ["x", AK, SK]}, "echo": SK}, {"acct": {"misc": ["x", R, R]}, "echo": R}, "/echo"),
    ],
)
def test_a_secret_in_a_value_holding_its_key_id_is_redacted(value, expected, secret_at):
    result = Redactor().redact({"pair": value})
    assert result.value == {"pair": expected}
    assert RedactionFinding(f"/pair{secret_at}", "credential_pattern") in result.findings
    again = Redactor().redact(result.value)
    assert again.value is result.value
    assert again.findings == []


def test_a_tuple_of_arguments_is_a_list_once_recorded_and_its_secret_goes():
    # boto3.client("s3", "us-east-1", None, True, None, None, AK, SK): positional arguments
    args = to_jsonable(("s3", "us-east-1", None, True, None, None, AK, SK))
    redacted = Redactor().redact({"args": args}).value
    assert SK not in str(redacted)
    assert AK not in str(redacted)


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ([SK], SK),  # alone: 40 characters of base64 are not a secret (paths, base64 ids)
        ({"a": SK, "b": "text"}, SK),
        ([SHA1, AK], SHA1),  # a SHA-1 digest has one case of letters
        ({"tag": {"$stepfork": "bytes", "value": SK}, "id": AK}, SK),  # base64 of bytes is not text
        ([AK, SK + "A"], SK + "A"),  # 41 characters: not a secret's shape
    ],
)
def test_a_40_character_string_without_its_key_id_beside_it_is_kept(value, kept):
    assert f"'{kept}'" in str(Redactor().redact({"v": value}).value)


def test_a_key_pair_on_one_text_line_is_redacted():
    line = f"aws_access_key_id={AK} aws_secret_access_key={SK}"
    assert redact_text(line) == f"aws_access_key_id={R} aws_secret_access_key={R}"


def test_a_command_line_with_the_pair_as_positional_arguments_loses_the_secret():
    command = ["python", "agent.py", AK, SK, "--region", "eu-west-1"]
    assert redact_command(command) == ["python", "agent.py", R, R, "--region", "eu-west-1"]
    assert redact_command(redact_command(command)) == redact_command(command)
    assert redact_command(["python", "agent.py", SK]) == ["python", "agent.py", SK]


@trace_tool
def assume_role(role: str) -> dict[str, object]:
    # a tool returning the pair as a list, beside the STS Credentials shape
    return {"Credentials": {"AccessKeyId": AK, "SecretAccessKey": SK}, "pair": [AK, SK], "role": role}


@trace_tool
def make_client(service: str, *args: str) -> str:
    return service


def test_a_recorded_bundle_holds_no_secret_of_a_value_holding_its_key_id(tmp_path: Path) -> None:
    path = tmp_path / "aws.sftrace"
    with stepfork.record("aws-agent", output=path) as session:
        make_client("s3", AK, SK)
        session.set_output(assume_role("arn:aws:iam::123456789012:role/agent"))
    text = "".join(p.read_text() for p in path.iterdir() if p.is_file())
    assert SK not in text
    assert AK not in text
    assert '"pair":["[REDACTED]","[REDACTED]"]' in text
