"""The key rule's data (docs/redaction.md rule 1): which names hold a secret, as dict keys, ``NAME=value``
in free text and command-line options.

Two kinds of name:

- **Reference names** (:data:`SENSITIVE_KEYS`, compared after :func:`normalize_key`): interop/
  REFERENCE-NOTES.md section 3 and the keys it missed (notes 9 item 9, issue 2 item 4). The whole value
  goes, whatever its type.
- **Secret names** (:func:`key_rule`): a name whose last words are a secret's (``openai_api_key``,
  ``OPENAI_API_KEY``, ``db_password``, ``github_token``, ``X-Goog-Api-Key``, ``AccountKey``, ``jwt``),
  NEWCOMER2 finding 8: settings objects hold their secrets under such names, with no vendor prefix in the
  value. Only a non-empty string value goes (containers are walked; numbers, booleans and null are kept):
  counts and limits share these words (``max_tokens``, ``prompt_tokens``, ``promptTokenCount``) and a count
  is a number, a secret a string.

A name is split into words at every character that is not an ASCII letter or digit and at camelCase
(``XGoogApiKey`` -> ``x goog api key``, ``APIKey`` -> ``api key``), lowercased. Trailing words that only say
which copy or encoding of the value it is (:data:`VALUE_SUFFIXES`: ``SecretString``, ``db_password_prod``,
``api_key_2``) are dropped, and a last word that ends in a secret word is split (``apikey`` -> ``api key``,
``PGPASSWORD`` -> ``pg password``, ``NextToken`` is already two words). The last word then decides, with the
word before it (:data:`SECRET_NAME_ENDINGS`). Data only (no pydantic, no orjson: ``stepfork validate``'s
quick verdict imports it).
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = [
    "SECRET_NAME_ENDINGS",
    "SENSITIVE_KEYS",
    "STRING_VALUE",
    "VALUE_SUFFIXES",
    "WHOLE_VALUE",
    "is_secret_name",
    "key_rule",
    "name_words",
    "normalize_key",
]

WHOLE_VALUE: Final = 1
""":func:`key_rule` of a reference name: the value is replaced whatever its type."""
STRING_VALUE: Final = 2
""":func:`key_rule` of a secret name: a non-empty string (or tagged bytes/str) value is replaced."""

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

# The word before "key"/"keys" that makes it a credential: what kind of key (api key, access key, private
# key, subscription key: Azure's Ocp-Apim-Subscription-Key, x-functions-key, AccountKey) or whose (a provider
# agents call: openai_key, STRIPE_KEY). A bare "key" and the keys of data (sort_key, cache_key,
# partition_key, idempotency_key, primary_key, object_key) are not secrets.
KEY_KINDS: Final = frozenset(
    {
        # kinds of credential key
        "api", "access", "secret", "private", "client", "subscription", "function", "functions", "account",
        "master", "signing", "sign", "encryption", "encrypt", "decryption", "auth", "authentication",
        "session", "shared", "admin", "service", "role", "license", "licence", "app", "application",
        "consumer", "deploy", "webhook", "hmac", "jwt", "ssh", "pgp", "gpg", "rsa", "aes", "fernet",
        "crypto", "cipher", "sas", "storage", "write", "bot", "root", "sdk", "server", "developer",
        "browser", "restricted",
        # providers and services agents call (docs/integrations.md and their neighbours)
        "openai", "azure", "anthropic", "claude", "gemini", "google", "gcp", "vertex", "groq", "mistral",
        "cohere", "together", "fireworks", "replicate", "perplexity", "pplx", "deepseek", "xai", "grok",
        "huggingface", "hf", "openrouter", "cerebras", "voyage", "jina", "nvidia", "aws", "pinecone",
        "weaviate", "qdrant", "tavily", "serpapi", "serper", "brave", "exa", "firecrawl", "langsmith",
        "langchain", "langfuse", "wandb", "stripe", "twilio", "sendgrid", "mailgun", "postmark", "resend",
        "slack", "github", "gitlab", "discord", "telegram", "notion", "airtable", "elevenlabs", "deepgram",
        "assemblyai", "algolia", "mapbox", "supabase", "firebase",
    }
)  # fmt: skip

# The word before "token" that makes it something else than a credential: a page cursor (next_page_token,
# AWS NextToken, S3 ContinuationToken, CloudWatch nextForwardToken and sequenceToken, Google pageToken,
# MS Graph deltaToken, OAI-PMH resumptionToken), an idempotency token (AWS ClientRequestToken), a
# tokenizer's special token (eos_token: "</s>") or a text token of a model's answer.
NOT_CREDENTIAL_TOKENS: Final = frozenset(
    {
        "next", "page", "prev", "previous", "continuation", "pagination", "sync", "skip", "delta", "change",
        "resume", "resumption", "cursor", "marker", "sequence", "forward", "backward", "continue",
        "idempotency", "request", "cancellation", "cancel",
        "stop", "eos", "bos", "pad", "padding", "unk", "unknown", "sep", "separator", "cls", "mask",
        "special", "start", "end", "begin", "image", "audio", "video", "vision", "decoder",
        "max", "min", "num", "total", "first", "last", "input", "output", "prompt", "completion",
        "reasoning", "cached",
    }
)  # fmt: skip

# The word before "tokens" (plural) that makes them credentials; otherwise tokens are counted (input_tokens,
# max_tokens, cache_read_input_tokens, Bedrock's inputTokens) or text (a tokenizer's output).
CREDENTIAL_TOKEN_KINDS: Final = frozenset(
    {"access", "refresh", "auth", "api", "bearer", "session", "id", "oauth", "bot", "personal", "csrf", "jwt"}
)

_ANY: Final[frozenset[str] | None] = None
_NONE: Final[frozenset[str]] = frozenset()

SECRET_NAME_ENDINGS: Final[dict[str, tuple[frozenset[str] | None, frozenset[str], str]]] = {
    # last word: (the word before it must be one of these, None: any or none; it must not be one of
    # these; why)
    "password": (_ANY, _NONE, "a password: db_password, smtpPassword, PGPASSWORD"),
    "passwords": (_ANY, _NONE, "passwords"),
    "passwd": (_ANY, _NONE, "a password (Unix spelling)"),
    "pwd": (_ANY, _NONE, "a password (db_pwd; a bare PWD is a reference name)"),
    "passphrase": (_ANY, _NONE, "a key's passphrase"),
    "passcode": (_ANY, _NONE, "a passcode"),
    "secret": (_ANY, _NONE, "a shared secret: client_secret, app_secret, webhook_secret, AWS SecretString"),
    "secrets": (_ANY, _NONE, "shared secrets"),
    "token": (_ANY, NOT_CREDENTIAL_TOKENS, "a credential token: github_token, hf_token, csrf_token"),
    "tokens": (CREDENTIAL_TOKEN_KINDS, _NONE, "credential tokens (access_tokens), not token counts"),
    "key": (KEY_KINDS, _NONE, "a credential key: openai_api_key, access_key, AccountKey, x-functions-key"),
    "keys": (KEY_KINDS, _NONE, "credential keys: api_keys"),
    "credential": (_ANY, _NONE, "a credential"),
    "credentials": (_ANY, _NONE, "credentials as one string (a service account's JSON text)"),
    "creds": (_ANY, _NONE, "credentials"),
    "jwt": (_ANY, _NONE, "a signed token (a JWT)"),
    "bearer": (_ANY, _NONE, "a bearer token"),
    "auth": (_ANY, _NONE, "an auth value: basic_auth, proxy_auth, --auth (a token or user:password)"),
    "cookie": (_ANY, _NONE, "a cookie value: session_cookie"),
    "csrf": (_ANY, _NONE, "a CSRF token"),
    "xsrf": (_ANY, _NONE, "an XSRF token"),
    "otp": (_ANY, _NONE, "a one-time password"),
    "pat": (_ANY, _NONE, "a personal access token: github_pat"),
}
"""The key rule for secret names (module docstring), as data with the reason for each ending."""

VALUE_SUFFIXES: Final = frozenset(
    {
        "value", "val", "string", "str", "text", "plain", "plaintext", "raw", "data", "bytes", "binary",
        "b64", "base64", "hex", "encoded", "enc", "base", "prod", "production", "dev", "development",
        "staging", "stage", "test", "live", "sandbox", "local", "default", "old", "new", "current",
        "previous", "prev", "primary", "secondary", "backup", "fallback", "override", "main",
    }
)  # fmt: skip
"""Trailing words that name a copy or an encoding of the value (``SecretString``, ``api_key_b64``,
``db_password_prod``, Rails' ``SECRET_KEY_BASE``), dropped before the last word is read; digits and
``v2``-like words too."""

# Last words split when they end in one of these (apikey, accesstoken, PGPASSWORD, clientsecret); the part
# before is then the word before (monkey -> mon key, not a key kind).
_COMPOUND_ENDINGS: Final = (
    "passwords", "password", "passwd", "passphrase", "secrets", "secret", "tokens", "token", "keys", "key",
    "credentials", "credential",
)  # fmt: skip

_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM: Final = re.compile(r"[^a-z0-9]")
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD_SPLIT: Final = re.compile(r"[^a-z0-9]+")
_VERSION: Final = re.compile(r"v?[0-9]+")


@functools.lru_cache(maxsize=4096)
def normalize_key(key: str) -> str:
    """Normalize a dict key as notes 3 does: ``apiKey``, ``API-KEY``, ``api_key`` all give ``apikey``."""
    return _NON_ALNUM.sub("", _BOUNDARY.sub("_", key).lower())


def name_words(name: str) -> list[str]:
    """The words of a name, lowercased: split at non-alphanumeric characters and at camelCase
    (``X-Goog-Api-Key`` and ``XGoogApiKey`` -> ``["x", "goog", "api", "key"]``)."""
    return [word for word in _WORD_SPLIT.split(_CAMEL.sub("_", name).lower()) if word]


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    words = name_words(name)
    while len(words) > 1 and (words[-1] in VALUE_SUFFIXES or _VERSION.fullmatch(words[-1])):
        words.pop()
    if not words:
        return False
    last = words[-1]
    before = words[-2] if len(words) > 1 else ""
    if last not in SECRET_NAME_ENDINGS:
        ending = next((e for e in _COMPOUND_ENDINGS if last.endswith(e) and last != e), None)
        if ending is None:
            return False
        before, last = last[: -len(ending)], ending
    kinds, not_kinds, _why = SECRET_NAME_ENDINGS[last]
    if before in not_kinds:
        return False
    return kinds is None or before in kinds


def key_rule(key: object, names: frozenset[str] = SENSITIVE_KEYS) -> int:
    """What the key rule replaces under the dict key ``key``.

    Args:
        key: a dict key (a non-str key is never sensitive).
        names: the normalized reference names (:data:`SENSITIVE_KEYS`, plus a Redactor's added keys).

    Returns:
        :data:`WHOLE_VALUE` (1) for a reference name, :data:`STRING_VALUE` (2) for a secret name
        (:data:`SECRET_NAME_ENDINGS`), 0 otherwise (``max_tokens``, ``next_page_token``, ``sort_key``).
    """
    if type(key) is not str:
        return 0
    if normalize_key(key) in names:
        return WHOLE_VALUE
    return STRING_VALUE if _secret_name(key) else 0


def is_secret_name(name: str) -> bool:
    """True when the default key rule replaces a string value under ``name`` (a reference or a secret
    name): what makes ``NAME=value`` in free text and ``--NAME VALUE`` on a command line a secret."""
    return key_rule(name) != 0
