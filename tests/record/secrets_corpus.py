"""A corpus of secret shapes, one synthetic example per kind, and the places a secret may stand.

The kinds are those a maintained secret scanner's rule set knows (gitleaks' default rules: the
rule id of each is given); the shapes (prefix, alphabet, length) are facts about the providers'
formats, the patterns that catch them are loopnb's own (``loopnb.record._redact``). Every example
is generated here from a seeded random generator: the shapes are real, the values are not.

``CORPUS`` holds what the default redactor covers; ``NOT_COVERED`` the kinds it knows it misses,
so that the coverage is measured, not assumed. ``contexts(entry)`` are the ways a secret reaches a
recording: as it is, after control characters, URL-encoded, JSON-escaped twice, inside a
password with punctuation.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from urllib.parse import quote

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "_-"
B64 = ALNUM + "+/"


def fake(alphabet: str, n: int, seed: str) -> str:
    """``n`` characters of ``alphabet``, the same for the same ``seed``."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Entry:
    """One kind of secret: its ``kind``, the scanner's ``rule`` id, the ``secret`` that must not
    reach a file, and the ``text`` it stands in (the secret itself for a token recognised by its
    shape; a header, an assignment or a URL for one recognised by what is around it)."""

    kind: str
    rule: str
    secret: str
    text: str = ""

    @property
    def framed(self) -> str:
        return self.text or self.secret


def _token(kind: str, rule: str, secret: str) -> Entry:
    return Entry(kind, rule, secret)


def _framed(kind: str, rule: str, secret: str, template: str) -> Entry:
    return Entry(kind, rule, secret, template.format(secret))


_PEM_BODY = "\n".join(fake(B64, 64, f"pem{i}") for i in range(4)) + "\n" + fake(B64, 20, "pem-end") + "=="

CORPUS: tuple[Entry, ...] = (
    _token("openai project key", "openai-api-key", "sk-proj-" + fake(B64URL, 48, "oa-proj")),
    _token("openai service account key", "openai-api-key", "sk-svcacct-" + fake(B64URL, 48, "oa-svc")),
    _token("openai admin key", "openai-api-key", "sk-admin-" + fake(B64URL, 48, "oa-adm")),
    _token(
        "openai legacy key",
        "openai-api-key",
        "sk-" + fake(ALNUM, 20, "oa-l1") + "T3BlbkFJ" + fake(ALNUM, 20, "oa-l2"),
    ),
    _token("anthropic api key", "anthropic-api-key", "sk-ant-api03-" + fake(B64URL, 93, "an") + "AA"),
    _token(
        "anthropic admin key", "anthropic-admin-api-key", "sk-ant-admin01-" + fake(B64URL, 93, "ad") + "AA"
    ),
    _token("github personal access token", "github-pat", "ghp_" + fake(ALNUM, 36, "ghp")),
    _token("github oauth token", "github-oauth", "gho_" + fake(ALNUM, 36, "gho")),
    _token("github user-to-server token", "github-app-token", "ghu_" + fake(ALNUM, 36, "ghu")),
    _token("github server-to-server token", "github-app-token", "ghs_" + fake(ALNUM, 36, "ghs")),
    _token("github refresh token", "github-refresh-token", "ghr_" + fake(ALNUM, 36, "ghr")),
    _token(
        "github fine-grained token",
        "github-fine-grained-pat",
        "github_pat_" + fake(ALNUM, 22, "ghf1") + "_" + fake(ALNUM, 59, "ghf2"),
    ),
    _token("gitlab personal access token", "gitlab-pat", "glpat-" + fake(B64URL, 20, "glpat")),
    _token(
        "slack bot token",
        "slack-bot-token",
        "-".join(
            ("xoxb", fake(string.digits, 12, "sb1"), fake(string.digits, 13, "sb2"), fake(ALNUM, 24, "sb3"))
        ),
    ),
    _token(
        "slack user token",
        "slack-user-token",
        "-".join(
            ("xoxp", fake(string.digits, 12, "su1"), fake(string.digits, 13, "su2"), fake(HEX, 32, "su3"))
        ),
    ),
    _token(
        "slack app-level token",
        "slack-app-token",
        "-".join(("xapp-1-A" + fake(UPPER, 10, "sa1"), fake(string.digits, 13, "sa2"), fake(HEX, 64, "sa3"))),
    ),
    _token("stripe live secret key", "stripe-access-token", "sk_live_" + fake(ALNUM, 99, "stl")),
    _token("stripe test secret key", "stripe-access-token", "sk_test_" + fake(ALNUM, 24, "stt")),
    _token("stripe prod secret key", "stripe-access-token", "sk_prod_" + fake(ALNUM, 24, "stp")),
    _token("stripe restricted key", "stripe-access-token", "rk_live_" + fake(ALNUM, 24, "str")),
    _token("aws access key id", "aws-access-token", "AKIA" + fake(UPPER, 16, "akia")),
    _token("aws session key id", "aws-access-token", "ASIA" + fake(UPPER, 16, "asia")),
    _token("aws bearer token key id", "aws-access-token", "ABIA" + fake(UPPER, 16, "abia")),
    _token("aws certificate key id", "aws-access-token", "ACCA" + fake(UPPER, 16, "acca")),
    _token("google cloud api key", "gcp-api-key", "AIza" + fake(B64URL, 35, "gcp")),
    _token(
        "json web token",
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9."
        + "eyJ"
        + fake(B64URL, 40, "jwt-payload")
        + "."
        + fake(B64URL, 43, "jwt-signature"),
    ),
    _token(
        "hugging face access token", "huggingface-access-token", "hf_" + fake(string.ascii_letters, 34, "hf")
    ),
    _token("npm access token", "npm-access-token", "npm_" + fake(ALNUM, 36, "npm")),
    _token("pypi upload token", "pypi-upload-token", "pypi-AgEIcHlwaS5vcmc" + fake(B64URL, 60, "pypi")),
    _token("shopify access token", "shopify-access-token", "shpat_" + fake(HEX, 32, "shpat")),
    _token("shopify custom app token", "shopify-custom-access-token", "shpca_" + fake(HEX, 32, "shpca")),
    _token(
        "shopify private app token", "shopify-private-app-access-token", "shppa_" + fake(HEX, 32, "shppa")
    ),
    _token("shopify shared secret", "shopify-shared-secret", "shpss_" + fake(HEX, 32, "shpss")),
    _token("digitalocean personal token", "digitalocean-pat", "dop_v1_" + fake(HEX, 64, "dop")),
    _token("digitalocean oauth token", "digitalocean-access-token", "doo_v1_" + fake(HEX, 64, "doo")),
    _token("digitalocean refresh token", "digitalocean-refresh-token", "dor_v1_" + fake(HEX, 64, "dor")),
    _token("linear api key", "linear-api-key", "lin_api_" + fake(ALNUM, 40, "lin")),
    _token("groq api key", "groq-api-key", "gsk_" + fake(ALNUM, 52, "groq")),
    _framed(
        "private key (PEM)",
        "private-key",
        _PEM_BODY,
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
    ),
    _framed(
        "bearer authorization", "generic-api-key", fake(B64URL, 40, "bearer"), "Authorization: Bearer {}"
    ),
    _framed(
        "basic authorization",
        "curl-auth-header",
        fake(B64, 30, "basic") + "==",
        "Authorization: Basic {}",
    ),
    _framed("api key assignment", "generic-api-key", fake(ALNUM, 32, "apikey"), "API_KEY={}"),
    _framed("secret assignment", "generic-api-key", fake(ALNUM, 32, "secret"), 'client_secret: "{}"'),
    _framed("password in json", "generic-api-key", fake(ALNUM, 16, "pw"), '{{"password": "{}"}}'),
    _framed("access token assignment", "generic-api-key", fake(B64URL, 40, "atok"), "access_token={}"),
    _framed(
        "password in a url",
        "generic-api-key",
        fake(ALNUM, 16, "url"),
        "postgres://app:{}@db.internal:5432/app",
    ),
)
"""Every kind the default redactor covers, with a synthetic example."""

NOT_COVERED: tuple[Entry, ...] = (
    # Known gaps, measured: nothing in these but the bare shape, which would take a scan of every
    # turn for a prefix the events rarely hold (or none at all), or too short to be told apart.
    _token("aws secret access key (bare)", "aws-secret", fake(B64, 40, "aws-secret")),
    _token(
        "sendgrid api key",
        "sendgrid-api-token",
        "SG." + fake(B64URL, 22, "sg1") + "." + fake(B64URL, 43, "sg2"),
    ),
    _token("databricks token", "databricks-api-token", "dapi" + fake(HEX, 32, "dapi")),
    _token("age secret key", "age-secret-key", "AGE-SECRET-KEY-1" + fake(UPPER, 58, "age")),
    _token(
        "postman api key", "postman-api-token", "PMAK-" + fake(HEX, 24, "pm1") + "-" + fake(HEX, 34, "pm2")
    ),
    _token("twilio api key", "twilio-api-key", "SK" + fake(HEX, 32, "twilio")),
    _token("gitlab deploy token", "gitlab-deploy-token", "gldt-" + fake(B64URL, 20, "gldt")),
    _token(
        "slack webhook url",
        "slack-webhook-url",
        "/".join(
            (
                "https://hooks.slack.com/services",
                "T" + fake(UPPER, 10, "w1"),
                "B" + fake(UPPER, 10, "w2"),
                fake(ALNUM, 24, "w3"),
            )
        ),
    ),
)
"""Kinds in the rule set that the default redactor does not catch (a test keeps this honest)."""

PUNCTUATED = "Tr0ub4dor;3x,y&z{p}[l]ugh"
"""A password holding every character that once cut a value short."""


def contexts(entry: Entry) -> dict[str, str]:
    """The texts a run may hold ``entry`` in, by name: each must come out with no trace of it."""
    text = entry.framed
    out = {
        "plain": f"the key is {text} here",
        "ansi erase line": f"\x1b[K{text}",
        "ansi colour": f"\x1b[2K\x1b[1;32m{text}\x1b[0m",
        "vertical tab": f"\x0b{text}",
        "nul": f"\x00{text}",
        "json twice": json.dumps({"content": json.dumps({"stdout": f"line\n{text}\n"})}),
        "password with punctuation": json.dumps({"password": f"{PUNCTUATED} {text}"}),
        "quoted password with punctuation": f"password='{PUNCTUATED}{text}'",
    }
    if "\n" not in text and not entry.kind.endswith("in a url"):
        # URL-encoded: in a header and a query (a key's own characters are left as they are).
        out["url-encoded header"] = quote(f"Authorization: Bearer {text}", safe="")
        out["url-encoded query"] = "https://api.test/v1?" + quote(f"token={text}", safe="") + "&page=2"
        out["url-encoded framed"] = quote(text, safe="")
    return out


def traces(entry: Entry) -> tuple[str, ...]:
    """What must not appear once ``entry`` is redacted: the secret, its last 10 characters (a
    value cut short leaks its tail), and the tail of the punctuated password."""
    last = entry.secret.rstrip("=")[-10:]
    return (entry.secret, last, PUNCTUATED[-12:])
