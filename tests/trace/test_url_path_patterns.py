"""Credential patterns for URL paths (NEWCOMER 17): Telegram bot tokens, Slack and Discord webhooks.

Matched with or without the host, since an ``http`` call's ``function`` holds the path alone; the recorder's
one-pass screen finds them (their needles are screen needles). The CLI story is
tests/integrations/test_url_path_credentials.py.
"""

from __future__ import annotations

import orjson
import pytest

from stepfork.trace.redaction import Redactor, redact_json, redact_text

TG = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
DISCORD = "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789-_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"https://api.telegram.org/bot{TG}/sendMessage", "https://api.telegram.org/bot[REDACTED]/sendMessage"),
        (f"https://api.telegram.org/file/bot{TG}/photos/a.jpg", "https://api.telegram.org/file/bot[REDACTED]/photos/a.jpg"),
        (f"http POST http://127.0.0.1:8081/bot{TG}/getUpdates", "http POST http://127.0.0.1:8081/bot[REDACTED]/getUpdates"),
        (f"requests:POST /bot{TG}/sendMessage", "requests:POST /bot[REDACTED]/sendMessage"),
        (
            "https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/aBcDeFgHiJkLmNoPqRsTuVwX",
            "https://hooks.slack.com/services/[REDACTED]",
        ),
        (
            "httpx:POST /services/T024BE7LD/B01ABCDEF12/aBcDeFgHiJkLmNoPqRsTuVwX",
            "httpx:POST /services/[REDACTED]",
        ),
        (
            "https://hooks.slack.com/workflows/T024BE7LD/A05ABC12345/498765432101234567/aBcDeFgHiJkLmNoP",
            "https://hooks.slack.com/workflows/[REDACTED]",
        ),
        (
            f"https://discord.com/api/webhooks/1234567890123456789/{DISCORD}",
            "https://discord.com/api/webhooks/1234567890123456789/[REDACTED]",
        ),
        (
            f"https://discord.com/api/v10/webhooks/1234567890123456789/{DISCORD}?wait=true",
            "https://discord.com/api/v10/webhooks/1234567890123456789/[REDACTED]?wait=true",
        ),
    ],
)  # fmt: skip
def test_a_credential_in_a_url_path_is_redacted(text: str, shown: str) -> None:
    assert redact_text(text) == shown
    assert redact_text(shown) == shown  # redacting twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com/bottles/12345",
        "the bot said 123456:abc",
        "https://example.com/services/TODO/list",
        "https://github.com/o/r/actions/workflows/ci.yml",
        "https://example.com/api/webhooks/12/short",
    ],
)
def test_paths_that_hold_no_credential_are_kept(text: str) -> None:
    assert redact_text(text) == text


def test_the_recorders_screen_finds_them() -> None:
    value = {"method": "POST", "url": f"https://api.telegram.org/bot{TG}/sendMessage", "body": None}
    assert Redactor().may_change(set(value), orjson.dumps(value))
    result = redact_json(value, base_path="/input")
    assert result.value["url"] == "https://api.telegram.org/bot[REDACTED]/sendMessage"
    assert [(f.path, f.reason) for f in result.findings] == [("/input/url", "credential_pattern")]
