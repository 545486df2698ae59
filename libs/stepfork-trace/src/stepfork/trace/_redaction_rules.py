"""The default rules of :mod:`stepfork.trace.redaction`: sensitive key names and credential patterns.

Sources: interop/REFERENCE-NOTES.md section 3 (the reference list and patterns), section 9 item 9 and
issue 2 item 4 (what the reference missed). Data only; the redaction module applies them.
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = ["PATTERNS", "SCREEN_NEEDLES", "SENSITIVE_KEYS", "normalize_key"]

# Notes 3 (the reference list) plus the keys it missed (notes 9 item 9, issue 2 item 4), normalized.
SENSITIVE_KEYS: Final = frozenset(
    {
        # reference
        "apikey", "accesstoken", "refreshtoken", "authtoken", "authorization", "password", "passwd",
        "secret", "clientsecret", "privatekey", "sessiontoken", "bearertoken",
        # added
        "token", "xapikey", "apikeys", "apisecret", "secretkey", "secretaccesskey", "awssecretaccesskey",
        "awssessiontoken", "cookie", "cookies", "setcookie", "proxyauthorization", "xauthtoken",
        "idtoken", "passwords", "passphrase", "pwd", "privatekeys", "clientkey", "xapitoken",
    }
)  # fmt: skip

# Names whose value is a secret in "name=value" text and in URL query strings (regex alternations).
_ASSIGNED_NAMES: Final = (
    r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
)
_QUERY_NAMES: Final = (
    r"(?:key|api[_-]?key|token|access[_-]?token|sig|signature|password|passwd|secret"
    r"|client[_-]?secret|credential)"
)

# (name, needles, pattern). A group named "secret" marks the part replaced, else the whole match goes.
# Every match contains one of the needles once ASCII-lowercased (also in JSON-escaped text), so a payload
# with none of them is passed over in one C-speed scan; a pattern runs only on strings holding a needle.
_ASSIGN_NEEDLES: Final = ("password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "api-key")
_QUERY_NEEDLES: Final = (
    "key=",
    "token=",
    "sig=",
    "signature=",
    "password=",
    "passwd=",
    "secret=",
    "credential=",
)
PATTERNS: Final[tuple[tuple[str, tuple[str, ...], str], ...]] = (
    (
        "pem_private_key",
        ("private key",),
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
    ),
    ("bearer", ("bearer",), r"(?i:\bbearer)\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})"),
    # base64 of user:pass; the lookahead (a digit, + / =, or an inner capital) spares "Basic information"
    (
        "basic_auth",
        ("basic",),
        r"(?i:\bbasic)\s+(?P<secret>(?=[A-Za-z0-9+/]*[0-9+/=]|[A-Za-z0-9+/]+[A-Z])[A-Za-z0-9+/]{8,}={0,2})",
    ),
    (
        "authorization",
        ("authorization",),
        r"(?i:\b(?:proxy-)?authorization\s*[:=]\s*)(?!(?i:bearer|basic)\s)(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
    ),
    # A Cookie / Set-Cookie header value in free text (a header dump, a log line, a repr of a headers dict,
    # document.cookie = "..."): all of it goes, the rest of its line or up to a closing quote, as the
    # cookie-pairs can all be credentials. It must start as an RFC 6265 cookie-pair ("name="), so prose
    # ("cookie: a treat", "the cookie is set") is left alone. A backslash ends it (no cookie-octet is one):
    # the escaped quote of JSON inside a string stays whole.
    (
        "cookie_header",
        ("cookie",),
        r"(?i:\b(?:set-)?cookies?(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?)"
        r"(?P<secret>[!#$%&*+.^_`|~0-9A-Za-z-]+=[^\r\n\"'\\]*)",
    ),
    ("openai_anthropic", ("sk-",), r"\bsk-[A-Za-z0-9_-]{8,}"),  # sk-..., sk-proj-..., sk-ant-...
    ("stripe", ("k_live_", "k_test_"), r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{8,}"),
    ("aws_access_key", ("akia", "asia"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    # An AWS secret access key is 40 characters of base64 with no prefix of its own: redact such a token
    # when "aws" stands at most 30 characters before it ("aws AKIA... <secret>", "AWS key: <secret>").
    (
        "aws_secret_key",
        ("aws",),
        r"(?i:\baws)[^\n]{0,30}?(?<![A-Za-z0-9/+])(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    (
        "github",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,})",
    ),
    ("slack", ("xox",), r"\bxox[abprs]-[A-Za-z0-9-]{8,}"),
    ("google_api_key", ("aiza",), r"\bAIza[0-9A-Za-z_-]{30,}"),
    ("huggingface", ("hf_",), r"\bhf_[A-Za-z0-9]{34,}"),  # Hugging Face user access tokens
    ("jwt", ("eyj",), r"\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"),
    (
        "url_query_secret",
        _QUERY_NEEDLES,
        rf"(?i:[?&;](?:[a-z0-9_.-]*[_.-])?{_QUERY_NAMES}=)(?P<secret>[^&#\s\"'<>]+)",
    ),
    (
        "assignment",
        _ASSIGN_NEEDLES,
        rf"""(?i:\b{_ASSIGNED_NAMES}["']?\s*[=:]\s*["']?)(?P<secret>[^\s&#"',;<>]{{3,}})""",
    ),
    ("url_password", ("://",), r"(?i:\b[a-z][a-z0-9+.-]*://[^\s/:@\"'<>]*:)(?P<secret>[^\s/@\"'<>]+)(?=@)"),
    # Credentials in a URL's path (NEWCOMER 17): a bot API's or a webhook's URL is its credential, and an
    # http call holds it in its URL, its tool name (``http POST URL``) and its ``function`` (the path
    # alone), so these match the path with or without the host. Telegram's Bot API: /bot<id>:<35 chars>/
    # METHOD (and /file/bot<token>/PATH).
    ("telegram_bot_token", ("/bot",), r"(?i:/bot)(?P<secret>\d{5,}:[A-Za-z0-9_-]{30,})"),
    # Slack webhooks: hooks.slack.com/services/T<team>/B<id>/<secret>, /workflows/T.../..., /triggers/T.../...
    (
        "slack_webhook",
        ("services/t", "workflows/t", "triggers/t"),
        r"(?<![A-Za-z0-9])(?:services|workflows|triggers)/(?P<secret>T[A-Z0-9]{6,}/[A-Za-z0-9_/-]{10,})",
    ),
    # Discord webhooks: discord.com/api[/v10]/webhooks/<id>/<token> (the id is kept)
    ("discord_webhook", ("/webhooks/",), r"/webhooks/\d{15,22}/(?P<secret>[A-Za-z0-9_-]{40,})"),
    # env/config style names holding a sensitive word as one of their segments: AWS_SECRET_ACCESS_KEY=...,
    # GITHUB_TOKEN=..., db_password_prod: ... (issue 7: "assignment" needs the bare word). A match starts
    # only at the beginning of a name and the name is matched atomically, so the cost stays linear.
    (
        "named_assignment",
        ("secret", "token", "passw", "pwd", "_key", "-key", "key_", "key-", "credential"),
        r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*?(?<![A-Za-z0-9])"
        r"(?i:secret|token|password|passwd|pwd|key|apikey|credentials?)(?![A-Za-z0-9]))"
        r"(?>[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)+)[\"']?\s*[=:]\s*[\"']?(?P<secret>[^\s&#\"',;<>]{8,})",
    ),
)
# The payload screen needs only the needles that do not contain a shorter one.
_ALL_NEEDLES: Final = sorted({n for _, needles, _ in PATTERNS for n in needles})
SCREEN_NEEDLES: Final = tuple(
    n.encode() for n in _ALL_NEEDLES if not any(m != n and m in n for m in _ALL_NEEDLES)
)

_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM: Final = re.compile(r"[^a-z0-9]")


@functools.lru_cache(maxsize=4096)
def normalize_key(key: str) -> str:
    """Normalize a dict key as notes 3 does: ``apiKey``, ``API-KEY``, ``api_key`` all give ``apikey``."""
    return _NON_ALNUM.sub("", _BOUNDARY.sub("_", key).lower())
