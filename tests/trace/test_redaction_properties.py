"""Property tests: planted secrets never survive redaction, redaction is idempotent, other data is untouched.

Secrets are planted at random places in random JSON documents: under random keys, inside longer strings,
in lists, inside tagged bytes, under sensitive keys, and as registered values glued to other text.
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stepfork.trace._redaction_names import STRING_VALUE, key_rule
from stepfork.trace.canonical import compact_json
from stepfork.trace.redaction import Redactor

B62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def token(alphabet: str, min_size: int, max_size: int) -> st.SearchStrategy[str]:
    """Random token text starting with "Z9", which the lowercase background text can never contain."""
    return st.text(alphabet=alphabet, min_size=max(min_size - 2, 0), max_size=max_size - 2).map(
        lambda t: "Z9" + t
    )


# (text to plant, the secret part that must disappear)
credentials: st.SearchStrategy[tuple[str, str]] = st.one_of(
    token(B62 + "_-", 8, 30).map(lambda t: ("sk-" + t, "sk-" + t)),
    token(B62, 8, 30).map(lambda t: ("sk-proj-" + t, "sk-proj-" + t)),
    token(B62, 8, 30).map(lambda t: ("sk-ant-api03-" + t, "sk-ant-api03-" + t)),
    st.tuples(st.sampled_from(["AKIA", "ASIA"]), token(UPPER_DIGITS, 16, 16)).map(
        lambda p: (p[0] + p[1],) * 2
    ),
    st.tuples(
        st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"]), token(B62, 8, 40)
    ).map(lambda p: (p[0] + p[1],) * 2),
    st.tuples(st.sampled_from("abprs"), token(B62 + "-", 8, 30)).map(lambda p: (f"xox{p[0]}-{p[1]}",) * 2),
    token(B62 + "_-", 35, 35).map(lambda t: ("AIza" + t, "AIza" + t)),
    token(B62, 34, 40).map(lambda t: ("hf_" + t, "hf_" + t)),
    st.tuples(st.sampled_from(["sk_live_", "rk_live_"]), token(B62, 8, 30)).map(lambda p: (p[0] + p[1],) * 2),
    st.tuples(token(B62, 4, 20), token(B62, 4, 20), token(B62, 0, 20)).map(
        lambda p: (f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}",) * 2
    ),
    token(B62 + "._~+/-", 8, 30).map(lambda t: (f"Authorization: Bearer {t}", t)),
    token(B62, 8, 30).map(lambda t: (f"https://user:{t}@example.com/x", t)),
    st.tuples(
        st.sampled_from(["key", "token", "sig", "signature", "access_token", "api_key", "password"]),
        token(B62 + "%.-", 4, 20),
    ).map(lambda p: (f"https://h.io/p?a=1&{p[0]}={p[1]}", p[1])),
    token(B62 + "\n", 10, 60).map(
        lambda t: (f"-----BEGIN PRIVATE KEY-----\n{t}\n-----END PRIVATE KEY-----", t)
    ),
    # Cookie / Set-Cookie header values in free text (a header dump, a headers dict's repr, JSON text in
    # a string): every cookie-pair of the value goes, the last one here
    st.tuples(
        st.sampled_from(
            ["Cookie: ", "Set-Cookie: ", "cookie:", "'Cookie': '", '"set-cookie": "', 'cookie = "']
        ),
        st.sampled_from(["session", "sessionid", "__Host-sid", "a"]),
        token(B62 + "%.-", 4, 20),
        token(B62 + "%.-_", 6, 30),
        st.sampled_from(["", "; Path=/; HttpOnly", "\r\nHost: h", "'", '"']),
    ).map(lambda p: (f"{p[0]}{p[1]}={p[2]}; csrftoken={p[3]}{p[4]}", p[3])),
    # provider key prefixes (NEWCOMER2 finding 9)
    st.tuples(
        st.sampled_from(["gsk_", "xai-", "fw_", "r8_", "pplx-", "pcsk_", "glpat-", "npm_", "whsec_"]),
        token(B62, 30, 40),
    ).map(lambda p: (p[0] + p[1],) * 2),
    st.tuples(token(B62, 22, 22), token(B62, 43, 43)).map(lambda p: (f"SG.{p[0]}.{p[1]}",) * 2),
    token(B62, 20, 60).map(lambda t: ("ya29." + t, "ya29." + t)),
    token(B62, 20, 40).map(lambda t: (f"the admin password is {t}", t)),
    token(B62 + "+/", 40, 60).map(lambda t: (f"AccountName=a;AccountKey={t}==;EndpointSuffix=x", t)),
)

# Background text that no rule matches: lowercase words, spaces and some punctuation/unicode.
safe_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,!é\u2028😀", max_size=12)
redactor_for_keys = Redactor()
safe_keys = safe_text.filter(lambda k: not redactor_for_keys.is_sensitive_key(k))
sensitive_keys = st.sampled_from(
    [
        "api_key",
        "apiKey",
        "X-API-KEY",
        "token",
        "Set-Cookie",
        "client_secret",
        "aws_secret_access_key",
        "privateKey",
        "password",
        "Authorization",
    ]
)
secret_names = st.sampled_from(
    [
        *("openai_api_key", "OPENAI_API_KEY", "db_password", "github_token", "hf_token", "X-Goog-Api-Key"),
        *("Ocp-Apim-Subscription-Key", "AccountKey", "jwt", "app_secret", "slackBotToken", "SecretString"),
    ]
)
background = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), safe_text
    ),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(safe_keys, c, max_size=4)),
    max_leaves=15,
)


# An AWS access key id, and a secret access key: 40 characters of base64 with both cases of letters
aws_key_id = st.tuples(st.sampled_from(["AKIA", "ASIA"]), token(UPPER_DIGITS, 16, 16)).map("".join)
aws_secret = (
    st.tuples(token(B62 + "/+", 38, 38), st.sampled_from(["aZ", "Zb", "q/"]))
    .map(lambda p: (p[0] + p[1])[:40])
    .filter(lambda s: any(c.islower() for c in s) and any(c.isupper() for c in s))
)


def aws_pair(key_id: str, secret: str) -> st.SearchStrategy[Any]:
    """The two as items of one list (in any order, among other items: a tuple of arguments, an argv) or
    as values of one object under neutral keys, the id alone or inside a longer string."""
    id_item = st.sampled_from([key_id, f"id {key_id}", f"{key_id}:"])
    secret_item = st.sampled_from([secret, f" {secret}", f"{secret}\n"])
    as_list = st.tuples(id_item, secret_item, st.lists(safe_text, max_size=3), st.randoms()).map(
        lambda p: p[3].sample([p[0], p[1], *p[2]], 2 + len(p[2]))
    )
    as_object = st.tuples(id_item, secret_item, st.dictionaries(safe_keys, safe_text, max_size=2)).map(
        lambda p: {**p[2], "a": p[0], "b": p[1]}
    )
    return st.one_of(as_list, as_object)


def bytes_tag(text: str) -> dict[str, str]:
    return {"$stepfork": "bytes", "value": base64.b64encode(text.encode()).decode()}


def planted(data: st.DataObject, registered: list[str]) -> tuple[Any, list[str]]:
    """A document with secrets at random places, and the list of secret strings that must disappear."""
    must_vanish: list[str] = []
    doc = data.draw(background)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        kind = data.draw(st.sampled_from(["pattern", "registered", "key", "secret_name", "aws_pair"]))
        if kind == "pattern":
            text, secret = data.draw(credentials)
            must_vanish.append(secret)
            value: Any = f"{data.draw(safe_text)} {text} {data.draw(safe_text)}"
        elif kind == "registered":
            secret = data.draw(st.sampled_from(registered))
            must_vanish.append(secret)
            value = f"{data.draw(safe_text)}{secret}{data.draw(safe_text)}"  # glued to other text
        elif kind == "key":
            secret = "zq" + data.draw(token(B62, 14, 20))
            must_vanish.append(secret)
            value = {data.draw(sensitive_keys): data.draw(st.sampled_from([secret, [secret], {"v": secret}]))}
        elif kind == "aws_pair":  # an AWS secret in a value holding its key id (NEWCOMER3 finding 5)
            key_id, secret = data.draw(aws_key_id), data.draw(aws_secret)
            must_vanish += [key_id, secret]
            if data.draw(st.booleans()):  # together in one list or object
                value = data.draw(aws_pair(key_id, secret))
            else:  # apart: the id somewhere, the secret somewhere else (as text: not inside tagged bytes)
                doc = insert(data, doc, key_id)
                value = data.draw(st.sampled_from([[secret], [f" {secret}"], {"v": secret}]))
        else:  # a secret name (NEWCOMER2 finding 8): its string goes, in any spelling
            secret = "zq" + data.draw(token(B62, 14, 20))
            must_vanish.append(secret)
            value = {data.draw(secret_names): secret}
        wrap = data.draw(st.sampled_from(["plain", "list", "bytes"]))
        if wrap == "list":
            value = [value]
        elif wrap == "bytes" and isinstance(value, str):
            value = bytes_tag(value)
        doc = insert(data, doc, value)
    return doc, must_vanish


def insert(data: st.DataObject, doc: Any, value: Any) -> Any:
    """Put ``value`` at a random place inside ``doc`` (a new container on the way down), never below a
    secret name's string (that would move the planted string out from under its name)."""
    keys = sorted(k for k in doc if key_rule(k) != STRING_VALUE) if isinstance(doc, dict) else []
    if keys and "$stepfork" not in doc and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(keys))
        return {**doc, key: insert(data, doc[key], value)}
    if isinstance(doc, list) and doc and data.draw(st.booleans()):
        i = data.draw(st.integers(min_value=0, max_value=len(doc) - 1))
        return [*doc[:i], insert(data, doc[i], value), *doc[i + 1 :]]
    return {"k" + data.draw(safe_text).replace(" ", ""): value, "rest": doc}


def visible_text(value: Any) -> str:
    """Everything a reader of the bundle could see: the JSON text plus the text inside tagged bytes."""
    parts = [compact_json(value).decode()]
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("$stepfork") == "bytes":
                parts.append(base64.b64decode(item["value"]).decode("utf-8", "replace"))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return "\n".join(parts)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.lists(token(B62, 6, 16), min_size=1, max_size=3))
def test_no_planted_secret_survives_and_redacting_twice_equals_once(data, registered):
    redactor = Redactor(secrets=registered)
    doc, must_vanish = planted(data, registered)
    once = redactor.redact(doc)
    seen = visible_text(once.value)
    for secret in must_vanish:
        assert secret not in seen
    twice = redactor.redact(once.value)
    assert twice.value is once.value
    assert twice.findings == []
    assert once.findings  # every plant changes something


@settings(max_examples=150, deadline=None)
@given(background)
def test_documents_without_secrets_come_back_unchanged_as_the_same_object(doc):
    result = Redactor(secrets=["registered-but-absent"]).redact(doc)
    assert result.value is doc
    assert result.findings == []


@settings(max_examples=150, deadline=None)
@given(background, aws_secret, st.sampled_from(["list", "object"]))
def test_an_aws_secret_without_its_key_id_beside_it_is_kept(doc, secret, shape):
    # 40 characters of base64 alone are not a secret (paths, base64 ids: docs/redaction.md rule 2)
    redactor = Redactor()
    assume(redactor.is_clean_text(secret))  # "AIza..." inside it is a Google key
    value = [secret, doc] if shape == "list" else {"a": secret, "b": doc}
    result = redactor.redact(value)
    assert result.value is value
    assert result.findings == []


# Prose about cookies: the words, header names and punctuation, but no "name=value" after them
_PROSE = ("cookie", "Cookie", "cookies", "Set-Cookie", "COOKIE", ":", "a", "jar", "the", ".", ",")
_PUNCTUATION = ("'", '"', "chocolate", "1", "-", "header")
cookie_prose = st.lists(
    st.sampled_from([*_PROSE, *_PUNCTUATION, " ", ": ", "\n"]),
    max_size=12,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(cookie_prose)
def test_the_word_cookie_in_prose_is_never_redacted(text):
    # the cookie_header rule needs a cookie-pair (name=) after "Cookie:"; without one nothing changes
    result = Redactor().redact({"note": text})
    assert result.value == {"note": text}
    assert result.findings == []
