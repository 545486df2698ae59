"""A corpus of secret shapes for the leak campaign (issue 7 part 3).

Each entry is ``(shape, text, needle, header)``: ``text`` is how the secret appears in a value, ``needle`` the
part that must never appear in any artifact, ``header`` a header name under which a bare value is secret by
its key alone (None: the shape is placed in free text, where its own pattern must catch it). The values
are synthetic (random-looking, right shape); none is a real credential.
"""

from __future__ import annotations

import base64
import hashlib


def _token(
    seed: str, length: int, alphabet: str = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
) -> str:
    """A deterministic pseudo-random token of ``length`` characters from ``alphabet``."""
    digest = b""
    counter = 0
    while len(digest) < length:
        digest += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    return "".join(alphabet[b % len(alphabet)] for b in digest[:length])


_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_HEX = "0123456789abcdef"
_PEM_BODY = base64.b64encode(hashlib.sha512(b"pem-body").digest() * 3).decode()
_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    + base64.urlsafe_b64encode(b'{"sub":"user-81","scope":"admin"}').decode().rstrip("=")
    + "."
    + _token("jwt-sig", 43)
)
_BASIC = base64.b64encode(b"svc-user:" + _token("basic", 18).encode()).decode()

REGISTERED = "acct-7781-" + _token("registered", 10)

CORPUS: list[tuple[str, str, str, str | None]] = [
    ("openai_project_key", (k := "sk-proj-" + _token("openai", 48)), k, None),
    ("openai_legacy_key", (k := "sk-" + _token("openai-legacy", 48)), k, None),
    ("anthropic_key", (k := "sk-ant-api03-" + _token("anthropic", 64)), k, None),
    ("aws_access_key_id", (k := "AKIA" + _token("aws", 16, _UPPER)), k, None),
    ("aws_sts_key_id", (k := "ASIA" + _token("aws-sts", 16, _UPPER)), k, None),
    ("aws_secret_in_env_text", "AWS_SECRET_ACCESS_KEY=" + (k := _token("aws-secret", 40)), k, None),
    ("github_classic_pat", (k := "ghp_" + _token("ghp", 36)), k, None),
    (
        "github_fine_grained_pat",
        (k := "github_pat_" + _token("ghpat", 22) + "_" + _token("ghpat2", 59)),
        k,
        None,
    ),
    ("github_oauth", (k := "gho_" + _token("gho", 36)), k, None),
    (
        "slack_bot_token",
        (k := "xoxb-" + _token("slack", 12, "0123456789") + "-" + _token("slack2", 24)),
        k,
        None,
    ),
    (
        "slack_user_token",
        (k := "xoxp-" + _token("slackp", 12, "0123456789") + "-" + _token("slackp2", 24)),
        k,
        None,
    ),
    ("google_api_key", (k := "AIza" + _token("google", 35)), k, None),
    ("huggingface_token", (k := "hf_" + _token("huggingface", 34)), k, None),
    ("stripe_secret_key", (k := "sk_live_" + _token("stripe", 24)), k, None),
    ("stripe_restricted_key", (k := "rk_live_" + _token("stripe-rk", 24)), k, None),
    ("jwt", _JWT, _JWT.rsplit(".", 1)[1], None),
    (
        "pem_rsa_private_key",
        "-----BEGIN RSA PRIVATE KEY-----\n"
        f"{_PEM_BODY[:64]}\n{_PEM_BODY[64:128]}\n-----END RSA PRIVATE KEY-----",
        _PEM_BODY[:64],
        None,
    ),
    (
        "pem_openssh_private_key",
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_PEM_BODY[128:192]}\n-----END OPENSSH PRIVATE KEY-----",
        _PEM_BODY[128:192],
        None,
    ),
    ("bearer_header_text", "Authorization: Bearer " + (k := _token("bearer", 32)), k, None),
    ("basic_auth_header_text", "Authorization: Basic " + _BASIC, _BASIC, None),
    (
        "password_in_url",
        f"postgres://app:{(k := 'Pw' + _token('dbpass', 14))}@db.internal:5432/prod",
        k,
        None,
    ),
    ("api_key_query_param", "https://api.example.com/v1?q=1&api_key=" + (k := _token("query", 32)), k, None),
    (
        "access_token_query_param",
        "https://cdn.example.com/f?access_token=" + (k := _token("qat", 30)),
        k,
        None,
    ),
    (
        "signed_url_signature",
        "https://bucket.example.com/o?X-Amz-Signature=" + (k := _token("sig", 40)),
        k,
        None,
    ),
    ("password_assignment", "login with password=" + (k := _token("pwd", 16)), k, None),
    ("token_colon_text", "token: " + (k := _token("tokcolon", 28)), k, None),
    ("api_key_in_json_text", '{"api_key": "' + (k := _token("jsontext", 30)) + '"}', k, None),
    ("client_secret_assignment", "client_secret=" + (k := _token("clientsec", 32)), k, None),
    ("registered_custom_secret", f"account {REGISTERED} on file", REGISTERED, None),
    ("cookie_header_value", (k := "sessionid=" + _token("cookie", 32)), k.split("=", 1)[1], "Cookie"),
    (
        "set_cookie_header_value",
        (k := "refresh=" + _token("setcookie", 32) + "; HttpOnly"),
        k[8:40],
        "Set-Cookie",
    ),
    ("x_api_key_header_value", (k := _token("xapikey", 32)), k, "X-Api-Key"),
    ("authorization_header_value", (k := "Token " + _token("authhdr", 32)), k[6:], "Authorization"),
    (
        "cookie_in_free_text",  # a header dump in a tool output: no key to go by, the cookie_header rule
        "HTTP/1.1 200 OK\r\nSet-Cookie: sid=" + (k := _token("cookietext", 32)) + "; Path=/; HttpOnly\r\n",
        k,
        None,
    ),
    # keys of providers and tools agents call, by their published prefixes (NEWCOMER2 finding 9)
    ("groq_key", (k := "gsk_" + _token("groq", 52)), k, None),
    ("xai_key", (k := "xai-" + _token("xai", 80)), k, None),
    ("fireworks_key", (k := "fw_" + _token("fireworks", 24)), k, None),
    ("replicate_token", (k := "r8_" + _token("replicate", 37)), k, None),
    ("perplexity_key", (k := "pplx-" + _token("perplexity", 48)), k, None),
    (
        "langsmith_key",
        (k := "lsv2_pt_" + _token("lsv2", 32, _HEX) + "_" + _token("lsv2b", 10, _HEX)),
        k,
        None,
    ),
    ("tavily_key", (k := "tvly-dev-" + _token("tavily", 32)), k, None),
    ("pinecone_key", (k := "pcsk_" + _token("pinecone", 5) + "_" + _token("pinecone2", 64)), k, None),
    ("gitlab_pat", (k := "glpat-" + _token("gitlab", 20)), k, None),
    ("sendgrid_key", (k := "SG." + _token("sendgrid", 22) + "." + _token("sendgrid2", 43)), k, None),
    ("npm_token", (k := "npm_" + _token("npm", 36)), k, None),
    ("google_oauth_access_token", (k := "ya29." + _token("ya29", 100)), k, None),
    ("stripe_webhook_secret", (k := "whsec_" + _token("whsec", 32)), k, None),
    (
        "azure_storage_connection_string",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        + (k := _token("azure", 86, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"))
        + "==;EndpointSuffix=core.windows.net",
        k,
        None,
    ),
    (
        "aws_secret_after_its_key_id",  # no "aws" in sight: the access key id says what follows
        "AKIA" + _token("aws-pair", 16, _UPPER) + ":" + (k := _token("aws-pair-secret", 40)),
        k,
        None,
    ),
    ("password_in_prose", "the admin password is " + (k := "Hx" + _token("prose", 14) + "7"), k, None),
    # bare values under setting names (NEWCOMER2 finding 8): secrets by their key alone
    ("openai_api_key_setting", (k := _token("setting-openai", 32)), k, "openai_api_key"),
    ("db_password_setting", (k := "Pa55-" + _token("setting-db", 12)), k, "db_password"),
    ("github_token_setting", (k := _token("setting-gh", 32)), k, "githubToken"),
    ("subscription_key_header", (k := _token("setting-apim", 32)), k, "Ocp-Apim-Subscription-Key"),
]
