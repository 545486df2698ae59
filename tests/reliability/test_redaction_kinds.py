"""The three kinds of leak the secrets campaign found, each pinned by behaviour (issue 7 part 3):

1. a secret used as a dict key (``{"sk-...": 1}``) was never scanned;
2. a secret inside bytes that are not UTF-8 was never scanned (the tagged bytes were skipped whole);
3. env-style assignments whose name merely contains a sensitive word (``AWS_SECRET_ACCESS_KEY=...``) were
   not matched by the assignment rule.
"""

from __future__ import annotations

import base64

from secret_corpus import CORPUS

from stepfork.trace.jsonable import from_jsonable, to_jsonable
from stepfork.trace.redaction import REPLACEMENT, Redactor

OPENAI = next(text for shape, text, _n, _h in CORPUS if shape == "openai_project_key")
GITHUB = next(text for shape, text, _n, _h in CORPUS if shape == "github_classic_pat")


def test_a_secret_used_as_a_dict_key_is_redacted_and_reported_at_the_new_key() -> None:
    result = Redactor().redact({"by_key": {f"key {OPENAI}": 1, "plain": 2}}, base_path="/output")
    assert result.value == {"by_key": {f"key {REPLACEMENT}": 1, "plain": 2}}
    assert [(f.path, f.reason) for f in result.findings] == [
        ("/output/by_key/key [REDACTED]", "credential_pattern")
    ]


def test_two_secret_keys_that_redact_alike_keep_both_values() -> None:
    value = {OPENAI: 1, GITHUB: 2}
    result = Redactor().redact(value)
    decoded = from_jsonable(result.value)
    assert OPENAI not in repr(result.value)
    assert GITHUB not in repr(result.value)
    assert sorted(result.value["value"], key=repr) == sorted([[REPLACEMENT, 1], [REPLACEMENT, 2]], key=repr)
    assert decoded == {REPLACEMENT: 2} or decoded == {REPLACEMENT: 1}


def test_a_secret_inside_bytes_that_are_not_utf8_is_redacted_and_the_other_bytes_kept() -> None:
    raw = b"\xff\xfe" + OPENAI.encode() + b"\x00\x81tail"
    result = Redactor().redact(to_jsonable({"blob": raw}), base_path="/input")
    out = base64.b64decode(result.value["blob"]["value"])
    assert out == b"\xff\xfe" + REPLACEMENT.encode() + b"\x00\x81tail"
    assert [f.path for f in result.findings] == ["/input/blob/value"]


def test_env_style_assignments_with_a_sensitive_word_inside_the_name_are_redacted() -> None:
    redactor = Redactor()
    for text in (
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "export GITHUB_TOKEN=abcdef0123456789abcdef",
        "db_password_prod: 'hunter2hunter2'",
        "STRIPE_API_KEY_LIVE = 'zzzzzzzzzzzzzzzzzz'",
    ):
        out = redactor.redact_text(text)
        assert REPLACEMENT in out, text
        assert out.split(REPLACEMENT)[0].rstrip("'\" ") in text


def test_ordinary_text_with_token_words_is_left_alone() -> None:
    redactor = Redactor()
    for text in ("max_tokens: 1024", "tokenizer: cl100k_base", "key_count=12", "the secret is love"):
        assert redactor.redact_text(text) == text


def test_redacting_twice_gives_the_same_value_as_once_for_the_new_kinds() -> None:
    redactor = Redactor()
    value = to_jsonable({OPENAI: b"\xff" + GITHUB.encode(), "env": "AWS_SECRET_ACCESS_KEY=" + "k" * 40})
    once = redactor.redact(value)
    twice = redactor.redact(once.value)
    assert twice.value == once.value
    assert twice.findings == []
