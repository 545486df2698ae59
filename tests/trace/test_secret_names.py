"""The key rule's secret names (docs/redaction.md rule 1; NEWCOMER2 findings 8 and 19).

A settings object holds its secrets under ordinary names (``openai_api_key``, ``db_password``,
``github_token``) with no vendor prefix in the value: the key rule replaces a string under a name whose last
words are a secret's, in any spelling, and never a count (``max_tokens``, ``promptTokenCount``), a cursor
(``next_page_token``) or a data key (``idempotency_key``). ``NAME=value`` in free text and a command line's
``--NAME VALUE`` follow the same rule.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stepfork.trace._redaction_names import (
    CREDENTIAL_TOKEN_KINDS,
    KEY_KINDS,
    NOT_CREDENTIAL_TOKENS,
    SECRET_NAME_ENDINGS,
    SENSITIVE_KEYS,
    STRING_VALUE,
    VALUE_SUFFIXES,
    WHOLE_VALUE,
    key_rule,
)
from stepfork.trace.command_redaction import redact_command
from stepfork.trace.jsonable import take_plain_facts
from stepfork.trace.redaction import RedactionFinding, Redactor, normalize_key, redact_json, redact_text

R = "[REDACTED]"

# NEWCOMER2 finding 8: the names its agents used, left in clear before
SETTING_NAMES = [
    *("openai_api_key", "OPENAI_API_KEY", "db_password", "github_token", "hf_token", "api_token"),
    *("bot_token", "access_key", "app_secret", "jwt", "X-Goog-Api-Key", "Ocp-Apim-Subscription-Key"),
    *("x-functions-key", "AccountKey", "SecretString", "db_password_prod", "SECRET_KEY_BASE", "openaiApiKey"),
    *("PGPASSWORD", "slackBotToken", "csrf_token", "basic_auth", "credentials", "aws_secret", "stripe_key"),
    *("api_key_2", "SUPABASE_SERVICE_ROLE_KEY", "FERNET_KEY", "anthropicApiKey", "webhookSecret"),
    *("X-Amz-Security-Token", "csrfmiddlewaretoken", "auth", "csrf", "X-XSRF", "otp", "pat", "github_pat"),
]
# counts, limits, cursors and data keys that share the words (every provider's usage object)
KEPT_NAMES = [
    *("max_tokens", "prompt_tokens", "total_tokens", "completion_tokens", "cached_tokens", "token_count"),
    *("max_completion_tokens", "tokens_per_minute", "num_tokens", "token_type", "next_page_token"),
    *("page_token", "pageToken", "nextPageToken", "NextToken", "ContinuationToken", "input_tokens"),
    *("output_tokens", "reasoning_tokens", "usageMetadata", "promptTokenCount", "candidatesTokenCount"),
    *("totalTokenCount", "thoughtsTokenCount", "inputTokens", "outputTokens", "totalTokens"),
    *("cache_creation_input_tokens", "cache_read_input_tokens", "cacheReadInputTokens", "idempotency_key"),
    *("sort_key", "cache_key", "partition_key", "key", "monkey", "tokens", "secretary", "secret_name"),
    *("SecretId", "api_key_id", "access_key_id", "private_key_id", "AWS_ACCESS_KEY_ID", "token_uri"),
    *("auth_type", "eos_token", "pad_token", "ClientRequestToken", "token_expires_in", "api_key_env"),
    *("accepted_prediction_tokens", "audio_tokens", "session_id", "keyboard", "KeyName", "nextForwardToken"),
    *("sequenceToken", "resumptionToken", "$skiptoken", "x-ratelimit-remaining-tokens", "ExclusiveStartKey"),
    *("anthropic-ratelimit-input-tokens-limit", "budget_tokens", "maxOutputTokens", "eos_token_id"),
]


@pytest.mark.parametrize("name", SETTING_NAMES)
def test_a_string_under_a_secret_name_is_redacted(name: str) -> None:
    result = Redactor().redact({"settings": {name: "v4lu3xyz", "model": "gpt-4o"}}, base_path="/input")
    assert result.value == {"settings": {name: R, "model": "gpt-4o"}}
    assert result.findings == [RedactionFinding(f"/input/settings/{name}", "sensitive_key")]


@pytest.mark.parametrize("name", KEPT_NAMES)
def test_counts_cursors_and_data_keys_keep_their_values(name: str) -> None:
    for value in ("CAoQAA-abcdefgh", 4096, {"n": 1}):
        document = {name: value}
        assert Redactor().redact(document).value is document
    assert key_rule(name) == 0


@pytest.mark.parametrize("value", [0, 128000, 1.5, True, None, ""])
def test_a_number_boolean_null_or_empty_string_under_a_secret_name_is_kept(value: Any) -> None:
    document = {"github_token": value, "db_password": value}
    assert Redactor().redact(document).value is document


def test_containers_under_a_secret_name_are_walked_and_tagged_bytes_replaced() -> None:
    value = {
        "gcp_credentials": {"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIE"},
        "api_keys": ["k1", "k2"],  # a reference name: the whole value
        "openai_api_key": {"$stepfork": "bytes", "value": "c2VjcmV0"},
    }
    result = redact_json(value)
    assert result.value == {
        "gcp_credentials": {"type": "service_account", "private_key": R},
        "api_keys": R,
        "openai_api_key": R,
    }


def test_reference_names_still_replace_any_value() -> None:
    document = {"token": 5, "password": {"a": 1}, "api_key": ["x"]}
    assert redact_json(document).value == {"token": R, "password": R, "api_key": R}


def test_secret_names_in_the_pairs_form_follow_the_same_rule() -> None:
    value = {"$stepfork": "dict", "value": [["github_token", "abcdefgh"], ["max_tokens", 5], ["hf_token", 7]]}
    out = redact_json(value).value
    assert out["value"] == [["github_token", R], ["max_tokens", 5], ["hf_token", 7]]


def test_provider_usage_objects_are_kept_and_never_sent_to_the_walk() -> None:
    usage = {
        "openai": {
            "usage": {
                "prompt_tokens": 12,
                "completion_tokens": 30,
                "total_tokens": 42,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "accepted_prediction_tokens": 0},
            },
            "max_completion_tokens": 256,
        },
        "anthropic": {
            "usage": {"input_tokens": 5, "output_tokens": 9, "cache_creation_input_tokens": 0},
            "max_tokens": 1024,
        },
        "gemini": {
            "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 8, "totalTokenCount": 12},
            "generationConfig": {"maxOutputTokens": 100},
        },
        "bedrock": {"usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}},
        "responses": {"usage": {"input_tokens": 1, "output_tokens_details": {"reasoning_tokens": 2}}},
        "page": {"next_page_token": "CAoQAA", "nextPageToken": "CAoQAB"},
    }
    facts = take_plain_facts(usage)
    assert facts is not None
    rules = Redactor()
    assert rules.may_change(facts.keys, facts.encoded) is False  # the recorder's screen passes it
    assert rules.redact(usage).value is usage


def test_added_keys_and_the_rule_agree_on_every_spelling() -> None:
    rules = Redactor(extra_keys=["tenant_pin"])
    assert rules.redact({"tenantPin": 42}).value == {"tenantPin": R}  # an added key: the whole value
    for spelling in ("openai_api_key", "OPENAI_API_KEY", "openai-api-key", "openaiApiKey", "OpenAIApiKey"):
        assert rules.is_sensitive_key(spelling)
        assert key_rule(spelling) == STRING_VALUE
    assert key_rule("API-KEY") == WHOLE_VALUE


# -- free text and command lines follow the key rule --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("db_password=Pa55word99 openai_api_key=Zq8X2mNvL4pR7tY1", f"db_password={R} openai_api_key={R}"),
        ('{"github_token": "deadbeefcafe0123"}', f'{{"github_token": "{R}"}}'),
        ("settings.hf_token: HFtok3nValue0123", f"settings.hf_token: {R}"),
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", f"AWS_SECRET_ACCESS_KEY={R}"),
        ("db_password_prod: hunter2hunter2", f"db_password_prod: {R}"),
    ],
)
def test_name_value_text_under_a_secret_name_is_redacted(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # NEWCOMER2 finding 19: replay's divergence line, whose path is a data key
        'output differs at \'idempotency_key\': expected "d6a748d5-1c2e", got "854dded9-0a1b"',
        'config_used.idempotency_key: expected "d6a748d5-1c2e" (string), actual "854dded9" (string)',
        "max_token_count=128000000",
        "sort_key=created_at_desc",
        "next_page_token=CAoQAAbcdefgh",
        '{"idempotency_key":"d6a748d5-1c2e-4d8f"}',
    ],
)
def test_name_value_text_under_other_names_is_kept(text: str) -> None:
    assert redact_text(text) == text


def test_the_divergence_line_keeps_its_words_and_shows_what_the_bundle_shows() -> None:
    # the value under idempotency_key is kept in a bundle, so the line shows it; under db_password both
    # sides are redacted in the bundle and in the live output, so no difference is ever reported there
    recorded = {"idempotency_key": "d6a748d5-1c2e", "db_password": "Pa55word-Prod-2026"}
    assert redact_json(recorded).value == {"idempotency_key": "d6a748d5-1c2e", "db_password": R}
    line = 'output differs at \'idempotency_key\': expected "d6a748d5-1c2e", got "854dded9-0a1b"'
    assert redact_text(line) == line


@pytest.mark.parametrize("name", SETTING_NAMES)
def test_a_command_line_option_named_like_a_secret_setting_hides_its_value(name: str) -> None:
    option = "--" + name.replace("_", "-")
    assert redact_command(["python", "a.py", option, "v4lu3xyz"]) == ["python", "a.py", option, R]
    assert redact_command(["python", "a.py", f"{option}=v4lu3xyz"]) == ["python", "a.py", f"{option}={R}"]


# -- properties -------------------------------------------------------------------------------------

_SPECIAL = (
    set(SECRET_NAME_ENDINGS) | KEY_KINDS | NOT_CREDENTIAL_TOKENS | CREDENTIAL_TOKEN_KINDS | VALUE_SUFFIXES
)
_SECRETISH = ("key", "token", "pass", "secret", "pwd", "cred", "auth", "jwt", "bearer", "cookie")
# plain words (no digits: they decide camelCase boundaries) that no rule gives a meaning
_WORD = st.text("abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8).filter(
    lambda w: w not in _SPECIAL and not any(s in w for s in _SECRETISH)
)
_ONE_WORD_SECRETS = ["password", "passwd", "pwd", "passphrase", "secret", "credentials", "jwt", "bearer"]
# the last words of a secret name, qualifiers drawn from the rule's own data
_SECRET_ENDINGS = st.one_of(
    st.sampled_from(_ONE_WORD_SECRETS).map(lambda word: [word]),
    st.sampled_from(sorted(KEY_KINDS)).map(lambda kind: [kind, "key"]),
    st.sampled_from(sorted(CREDENTIAL_TOKEN_KINDS)).map(lambda kind: [kind, "tokens"]),
    _WORD.map(lambda w: [w, "token"]),
)
# the last words of a name that is no secret: counts, limits, cursors, metadata, data keys
_KEPT_ENDINGS = st.one_of(
    _WORD.map(lambda w: [w, "tokens"]),  # input_tokens, max_tokens: counts
    _WORD.map(lambda w: [w, "key"]),  # sort_key, cache_key: a key of data
    st.sampled_from(sorted(NOT_CREDENTIAL_TOKENS)).map(lambda w: [w, "token"]),
    st.tuples(
        st.sampled_from(["token", "secret", "password", "api_key", "access_key"]),
        st.sampled_from(["count", "limit", "type", "usage", "id", "url", "uri", "name", "expiry", "file"]),
    ).map(lambda pair: [*pair[0].split("_"), pair[1]]),
)
_SUFFIX = st.one_of(st.just([]), st.sampled_from(sorted(VALUE_SUFFIXES)).map(lambda w: [w]))


def _spell(words: list[str], style: str) -> str:
    """``words`` written as a name in one of the styles settings, headers and env vars use."""
    if style == "snake":
        return "_".join(words)
    if style == "upper":
        return "_".join(words).upper()
    if style == "kebab":
        return "-".join(words)
    if style == "header":
        return "-".join(w.capitalize() for w in words)
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    return "".join(w.capitalize() for w in words)  # Pascal


_STYLES = st.sampled_from(["snake", "upper", "kebab", "header", "camel", "pascal"])
_SECRET_VALUES = st.text(min_size=1, max_size=20).filter(lambda v: v != R)
_NUMBERS = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.lists(_WORD, max_size=3),
    ending=_SECRET_ENDINGS,
    suffix=_SUFFIX,
    style=_STYLES,
    value=_SECRET_VALUES,
    count=_NUMBERS,
)
def test_generated_secret_names_hide_strings_in_every_spelling_and_keep_numbers(
    prefix: list[str], ending: list[str], suffix: list[str], style: str, value: str, count: Any
) -> None:
    name = _spell([*prefix, *ending, *suffix], style)
    result = redact_json({name: value, "other": 1})
    assert result.value == {name: R, "other": 1}
    assert result.findings == [RedactionFinding(f"/{name}", "sensitive_key")]
    if normalize_key(name) not in SENSITIVE_KEYS:  # a reference name replaces any value
        numbers = {name: count}
        assert redact_json(numbers).value is numbers


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.lists(_WORD, max_size=3),
    ending=_KEPT_ENDINGS,
    style=_STYLES,
    value=st.text("abcdefghij -0123456789", max_size=20) | _NUMBERS,
)
def test_generated_counts_cursors_and_data_keys_are_never_redacted_by_name(
    prefix: list[str], ending: list[str], style: str, value: Any
) -> None:
    name = _spell([*prefix, *ending], style)
    assume(normalize_key(name) not in SENSITIVE_KEYS)
    assert key_rule(name) == 0
    document = {name: value}
    assert redact_json(document).value is document


_NAME_TEXT = st.text("abcdefghijklmnopqrstuvwxyzAPIKEYTOKN_- ", max_size=24)


@settings(max_examples=300, deadline=None)
@given(name=st.one_of(_NAME_TEXT, _WORD), count=st.integers() | st.floats(allow_nan=False))
def test_a_number_is_never_redacted_unless_its_key_is_a_reference_name(name: str, count: float) -> None:
    assume(redact_text(name) == name)  # a key holding a credential shape is renamed (rule 2)
    document = {name: count}
    redacted = redact_json(document).value
    assert (redacted is document) is (normalize_key(name) not in SENSITIVE_KEYS)
