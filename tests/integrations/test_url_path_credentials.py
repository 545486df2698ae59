"""Credentials in URL paths are never written or printed (NEWCOMER 17, CASES C5).

A Telegram bot token (``/bot<id>:<token>/sendMessage``), a Slack incoming webhook
(``/services/T.../B.../<secret>``) and a Discord webhook (``/api/webhooks/<id>/<token>``) are the URL's
path: an ``http`` call holds them in its input URL, its tool name (``http POST URL``) and its ``function``
(the path alone). A program written as those APIs' docs write it (``requests.post`` and ``httpx.post`` of
the URL, the token from the environment) is recorded with ``stepfork record --`` against a local server on
127.0.0.1 standing in for the three APIs; neither the bundle nor ``inspect``/``replay``/``validate`` output
holds a credential, and the replay still matches every call by its redacted URL (the server's counter
proves nothing was sent).
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import ClassVar

import pytest

STEPFORK = Path(sys.executable).parent / "stepfork"

TELEGRAM_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
SLACK_PATH = "/services/T024BE7LD/B01ABCDEF12/aBcDeFgHiJkLmNoPqRsTuVwX"
DISCORD_TOKEN = "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789-_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234"
SECRETS = (TELEGRAM_TOKEN, "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "aBcDeFgHiJkLmNoPqRsTuVwX", DISCORD_TOKEN)

AGENT = '''"""Tell the on-call channels that the deploy finished (the three APIs as their docs call them)."""
import json
import os

import httpx
import requests

TELEGRAM = f"{os.environ['TELEGRAM_API']}/bot{os.environ['TELEGRAM_BOT_TOKEN']}"

sent = requests.post(f"{TELEGRAM}/sendMessage", json={"chat_id": 42, "text": "deploy done"}, timeout=10)
slack = requests.post(os.environ["SLACK_WEBHOOK_URL"], json={"text": "deploy done"}, timeout=10)
discord = httpx.post(os.environ["DISCORD_WEBHOOK_URL"], json={"content": "deploy done"})
print(json.dumps({"telegram": sent.json()["ok"], "slack": slack.text, "discord": discord.status_code}))
'''


class Api(http.server.BaseHTTPRequestHandler):
    """Telegram's Bot API, a Slack and a Discord webhook, as they answer: JSON with a fresh message id and
    date, ``ok``, ``204``."""

    requests: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        Api.requests.append(self.path)
        if "/sendMessage" in self.path:
            result = {"message_id": len(Api.requests), "date": int(time.time()), "text": "deploy done"}
            body, kind, status = json.dumps({"ok": True, "result": result}).encode(), "application/json", 200
        elif self.path.startswith("/services/"):
            body, kind, status = b"ok", "text/plain", 200
        else:
            body, kind, status = b"", "text/plain", 204
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("date", formatdate(usegmt=True))
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def api() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(STEPFORK), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


@pytest.mark.slow  # a long end-to-end story: `hatch run slow:test` (hatch test's time budget)
def test_bot_and_webhook_credentials_in_url_paths_are_redacted_and_still_replay(
    tmp_path: Path, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    monkeypatch.setenv("TELEGRAM_API", api)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN)
    monkeypatch.setenv("SLACK_WEBHOOK_URL", f"{api}{SLACK_PATH}")
    monkeypatch.setenv("DISCORD_WEBHOOK_URL", f"{api}/api/webhooks/1234567890123456789/{DISCORD_TOKEN}")
    recorded = cli("record", "-o", "run.sftrace", "--", "python", "agent.py", cwd=tmp_path)
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout) == {"telegram": True, "slack": "ok", "discord": 204}
    assert len(Api.requests) == 3

    bundle = tmp_path / "run.sftrace"
    assert not leaked("".join(p.read_text(encoding="utf-8") for p in bundle.iterdir()))
    events = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]
    names = [e["name"] for e in events if e["type"] == "tool_call"]
    assert names == [
        f"http POST {api}/bot[REDACTED]/sendMessage",
        f"http POST {api}/services/[REDACTED]",
        f"http POST {api}/api/webhooks/1234567890123456789/[REDACTED]",
    ]
    for event in (e for e in events if e["type"] == "tool_call"):
        assert event["input"]["url"] == event["name"].split(" ", 2)[2]
        assert "/input/url" in event["redactions"]

    for args in (("inspect", "run.sftrace", "--events", "--full"), ("inspect", "run.sftrace", "--json")):
        shown = cli(*args, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert "[REDACTED]" in shown.stdout
        assert not leaked(shown.stdout + shown.stderr)
    validated = cli("validate", "run.sftrace", cwd=tmp_path)
    assert validated.returncode == 0
    assert "unredacted_secret" not in validated.stdout + validated.stderr

    replayed = cli("replay", "run.sftrace", "--", "python", "agent.py", cwd=tmp_path)
    output = replayed.stdout + replayed.stderr
    assert replayed.returncode == 0, output
    assert "3 served (of 3 recorded)" in output, output
    assert not leaked(output)
    assert len(Api.requests) == 3  # every call was served from the bundle
