"""The default credential patterns of :mod:`stepfork.trace.redaction` (docs/redaction.md rule 2) and the
needles of the payload screen; the key rule's names live in :mod:`stepfork.trace._redaction_names` (and
are re-exported here).

Sources: interop/REFERENCE-NOTES.md section 3 (the reference list and patterns), section 9 item 9 and
issue 2 item 4 (what the reference missed), NEWCOMER2 findings 8, 9 and 19, and the published key formats
of the providers named below. Data only; the redaction module applies them.
"""

from __future__ import annotations

from typing import Final

from stepfork.trace._redaction_names import SENSITIVE_KEYS as SENSITIVE_KEYS
from stepfork.trace._redaction_names import normalize_key as normalize_key

__all__ = ["PATTERNS", "SCREEN_GROUPS", "SCREEN_NEEDLES", "SENSITIVE_KEYS", "normalize_key"]

# Names whose value is a secret in "name=value" text and in URL query strings (regex alternations).
_ASSIGNED_NAMES: Final = (
    r"(?:password|passwd|pwd|secret|token|api[ _-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
)
_QUERY_NAMES: Final = (
    r"(?:key|api[_-]?key|token|access[_-]?token|sig|signature|password|passwd|secret"
    r"|client[_-]?secret|credential)"
)

# (name, needles, pattern). A group named "secret" marks the part replaced, else the whole match goes; a
# group named "name" makes a match count only when the key rule calls that name a secret
# (_redaction_text._matches).
# Every match contains one of the needles once ASCII-lowercased (also in JSON-escaped text), so a payload
# with none of them is passed over in one C-speed scan; a pattern runs only on strings holding a needle.
_ASSIGN_NEEDLES: Final = (
    "password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "api-key", "api key",
)  # fmt: skip
# Substrings one of which a name in "NAME=value" text holds to be a candidate of named_assignment (the key
# rule then decides): the words of _redaction_names.SECRET_NAME_ENDINGS that text can be screened for
# without sending every payload that says "key" to the walk.
_NAMED_NEEDLES: Final = (
    "secret", "token", "passw", "pwd", "credential", "apikey", "_key", "-key", "key_", "key-",
)  # fmt: skip
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
    # ... or within 80 characters after an access key id (a CSV export, "id:secret", a pasted pair),
    # with both cases of letters (a SHA-1 hex digest has one)
    (
        "aws_secret_after_key_id",
        ("akia", "asia"),
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b[^\n]{0,80}?(?<![A-Za-z0-9/+])"
        r"(?P<secret>(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    (
        "github",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,})",
    ),
    ("slack", ("xox",), r"\bxox[abprs]-[A-Za-z0-9-]{8,}"),
    ("google_api_key", ("aiza",), r"\bAIza[0-9A-Za-z_-]{30,}"),
    ("huggingface", ("hf_",), r"\bhf_[A-Za-z0-9]{34,}"),  # Hugging Face user access tokens
    # Keys of providers and tools agents call, by their published prefixes (NEWCOMER2 finding 9; the
    # formats of gitleaks' and GitHub secret scanning's rules). The length after the prefix is a floor
    # below the real one, so a key cut short in a log still goes; the prefix keeps ids (chatcmpl-...,
    # call_..., uuids, hex digests) out.
    ("groq", ("gsk_",), r"\bgsk_[A-Za-z0-9]{20,}"),  # gsk_ + 52
    ("xai", ("xai-",), r"\bxai-[A-Za-z0-9]{20,}"),  # xai- + 80
    ("fireworks", ("fw_",), r"\bfw_[A-Za-z0-9]{20,}"),
    ("replicate", ("r8_",), r"\br8_[A-Za-z0-9]{20,}"),  # r8_ + 37
    ("perplexity", ("pplx-",), r"\bpplx-[A-Za-z0-9]{20,}"),  # pplx- + 48
    ("langsmith", ("lsv2_",), r"\blsv2_(?:pt|sk)_[A-Za-z0-9_]{16,}"),  # lsv2_pt_ / lsv2_sk_ + 32 hex _ 10 hex
    ("tavily", ("tvly-",), r"\btvly-(?:[a-z]+-)?[A-Za-z0-9]{16,}"),  # tvly-[dev-|prod-] + 32
    ("pinecone", ("pcsk_",), r"\bpcsk_[A-Za-z0-9_]{20,}"),  # pcsk_<5-6>_<60+>
    ("gitlab", ("glpat-",), r"\bglpat-[A-Za-z0-9_.-]{20,}"),  # personal, project and group access tokens
    ("sendgrid", ("sg.",), r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),  # SG.<22>.<43>
    ("npm", ("npm_",), r"\bnpm_[A-Za-z0-9]{30,}"),  # npm_ + 36 (npm_config_* names have no such run)
    ("google_oauth_token", ("ya29.",), r"\bya29\.[A-Za-z0-9_-]{20,}"),  # a Google OAuth access token
    ("stripe_webhook_secret", ("whsec_",), r"\bwhsec_[A-Za-z0-9+/=]{20,}"),
    # Azure storage / Service Bus / Event Hubs connection strings: ...;AccountKey=<base64>;... and
    # SharedAccessKey=<base64> (the account name and endpoint kept)
    (
        "azure_connection_key",
        ("key=",),
        r"(?i:\b(?:Account|SharedAccess)Key=)(?P<secret>[A-Za-z0-9+/]{16,}={0,2})",
    ),
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
    # env/config style names: AWS_SECRET_ACCESS_KEY=..., GITHUB_TOKEN=..., db_password_prod: ...,
    # githubToken: ... (issue 7: "assignment" needs the bare word). The group named "name" makes a match
    # count only when the key rule calls the name a secret (_redaction_names.is_secret_name), so free text
    # follows the rule of dict keys: "'idempotency_key': expected" and "max_token_count=128000" are kept
    # (NEWCOMER2 finding 19). A candidate name holds one of the needles; a match starts only at the
    # beginning of a name and the name is matched atomically, so the cost stays linear.
    (
        "named_assignment",
        _NAMED_NEEDLES,
        r"(?<![A-Za-z0-9_.-])(?=[A-Za-z0-9_.-]*?(?i:" + "|".join(_NAMED_NEEDLES) + r"))"
        r"(?P<name>(?>[A-Za-z0-9]+(?:[_.-][A-Za-z0-9]+)*))[\"']?\s*[=:]\s*[\"']?(?P<secret>[^\s&#\"',;<>]{8,})",
    ),
    # Prose (NEWCOMER2 finding 9): "the admin password is Hunter2Tr0ub4dor", "the API key was set to
    # Zq8X...". The word after "<secret word> is/was/set to" goes when it is shaped like a credential: 6 or
    # more characters, a letter, and a digit, a symbol or a capital after a small letter; so "the password is
    # incorrect", "the token is expired" and "the token is 4096" are kept. Nothing further: "use hunter2 as
    # the password" is not recognised (docs/redaction.md, "What is NOT protected").
    (
        "prose_secret",
        ("password", "passwd", "secret", "token", "api key"),
        r"(?i:\b(?:password|passwd|secret|token|api key)[ \t]+"
        r"(?:is|was|will be|has been|remains|set to|changed to|reset to)"
        r"(?:[ \t]+(?:set to|changed to|reset to|now))?[ \t]*:?[ \t]+)[\"'`]?"
        r"(?P<secret>(?=[^\s\"'`]*?[A-Za-z])(?=[^\s\"'`]*?(?:[0-9]|[!@#$%^&*+=~?/\\|]|[a-z][A-Z]))"
        r"[^\s\"'`,;]{6,})",
    ),
)


def _fewest(needles: set[str], covered: frozenset[str] = frozenset()) -> tuple[bytes, ...]:
    """The needles that contain neither a shorter one nor one of ``covered``, sorted, as bytes."""
    every = needles | covered
    return tuple(
        n.encode() for n in sorted(needles) if not any(m != n and m in n for m in every) and n not in covered
    )


# The payload screen needs only the needles that do not contain a shorter one. It searches two groups,
# one search each (_redaction_text): the needles of the rules before the provider prefixes, then the
# provider prefixes (_PREFIX_RULES). One search of all of them cost more than the two (the SIMD search
# checks more false candidates as its buckets fill: docs/performance.md, "Recording").
_PREFIX_RULES: Final = frozenset(
    {"groq", "xai", "fireworks", "replicate", "perplexity", "langsmith", "tavily", "pinecone", "gitlab",
     "sendgrid", "npm", "google_oauth_token", "stripe_webhook_secret"}
)  # fmt: skip
_FIRST: Final = {n for name, needles, _ in PATTERNS if name not in _PREFIX_RULES for n in needles}
_SECOND: Final = {n for name, needles, _ in PATTERNS if name in _PREFIX_RULES for n in needles}
SCREEN_GROUPS: Final = (_fewest(_FIRST), _fewest(_SECOND, frozenset(_FIRST)))
"""The needles of the payload screen in its two searches (every needle of a rule holds one of them)."""
SCREEN_NEEDLES: Final = tuple(sorted(n for group in SCREEN_GROUPS for n in group))
"""Every needle of the payload screen: a text whose lowercased form holds none matches no rule."""
