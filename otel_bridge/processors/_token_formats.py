"""Known token formats: a vendor's prefix and the body its format says (GitHub, GitLab, Slack,
AWS, Google, Stripe, OpenAI, Anthropic, npm, PyPI, Vault, DigitalOcean, SendGrid...: the formats
of the public secret-scanning rule sets of gitleaks and detect-secrets), JWTs and PEM private
key blocks. One pass of one regular expression over every text (`TOKENS`): every branch starts
with a literal, so the engine skips ahead to the characters a token can start with; which kind
a match is, is found only for the (rare) matches (`token_kind`)."""

from __future__ import annotations

import re

__all__ = ["TOKENS", "token_kind"]

#: Known token formats: (kind, regular expression), each starting with a literal, so that the
#: alternation of them all is searched fast. From the public rule sets of gitleaks and
#: detect-secrets (the formats, not their code).
_TOKEN_FORMATS: tuple[tuple[str, str], ...] = (
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{30,255}"),
    ("github_token", r"github_pat_[A-Za-z0-9_]{20,255}"),
    ("aws_access_key", r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"),
    ("google_api_key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("google_api_key", r"GOCSPX-[A-Za-z0-9_\-]{24,}"),
    ("google_api_key", r"ya29\.[A-Za-z0-9_\-]{20,}"),
    ("slack_token", r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    ("slack_token", r"xapp-\d-[A-Za-z0-9-]{10,}"),
    ("slack_token", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}"),
    ("stripe_key", r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    ("anthropic_key", r"sk-ant-(?:api|admin|sid|oat)\d\d-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("vault_token", r"s\.[A-Za-z0-9]{24}"),  # legacy; checked: digits and both cases
    ("service_token", r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("service_token", r"gl(?:dt|rt|ft|soat|ffct|cbt|agent|oas|imt)-[A-Za-z0-9_\-]{20,}"),
    ("service_token", r"glptt-[0-9a-f]{40}"),
    ("service_token", r"GR1348941[A-Za-z0-9_\-]{20}"),
    ("service_token", r"glc_[A-Za-z0-9+/]{32,}={0,3}"),
    ("service_token", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("service_token", r"npm_[A-Za-z0-9]{36}"),
    ("service_token", r"pypi-[A-Za-z0-9_\-]{50,}"),
    ("service_token", r"do[por]_v1_[a-f0-9]{64}"),
    ("service_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("service_token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("service_token", r"lin_api_[A-Za-z0-9]{40}"),
    ("service_token", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("service_token", r"pul-[a-f0-9]{40}"),
    ("service_token", r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    ("service_token", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    ("service_token", r"dckr_pat_[A-Za-z0-9_\-]{27,}"),
    ("service_token", r"ATATT3[A-Za-z0-9_\-=]{100,}"),
    ("service_token", r"NRAK-[A-Z0-9]{27}"),
    ("service_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.\-]{32,64}"),
    ("service_token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("service_token", r"rubygems_[a-f0-9]{48}"),
    ("service_token", r"rdme_[a-z0-9]{70}"),
    ("service_token", r"figd_[A-Za-z0-9_\-]{40,}"),
    ("service_token", r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9_\-]{20,}"),
    ("service_token", r"fo1_[A-Za-z0-9_\-]{43}"),
    ("service_token", r"sh(?:pat|pca|ppa|pss)_[a-fA-F0-9]{32}"),
    ("service_token", r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,60}"),
    ("service_token", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ("service_token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("service_token", r"hf_[A-Za-z]{34}"),
    ("service_token", r"api_org_[A-Za-z]{34}"),
    ("service_token", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("service_token", r"EZ[AT]K[A-Za-z0-9]{54}"),
    ("service_token", r"pnu_[A-Za-z0-9]{36}"),
    ("service_token", r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    ("service_token", r"LTAI[A-Za-z0-9]{20}"),
    ("service_token", r"CLOJARS_[A-Za-z0-9]{60}"),
    ("service_token", r"FLWSECK(?:_TEST)?-[A-Za-z0-9]{12,}"),
    ("service_token", r"sha256~[A-Za-z0-9_\-]{43}"),
    ("service_token", r"SK[0-9a-f]{32}"),  # Twilio
    ("service_token", r"key-[0-9a-f]{32}"),  # Mailgun
    ("service_token", r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}"),
)
#: Kinds whose match needs a word boundary before it (their prefix is short or a word's end).
_BOUNDED = re.compile(r"(?:s\.|SK|key-|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|sk|rk)")
#: The one pass over every text for all the known formats (non-capturing: a capturing group
#: per kind would cost the engine its skip-ahead, 40 times the time).
TOKENS = re.compile("|".join(f"(?:{pattern})" for _, pattern in _TOKEN_FORMATS))
_KINDS = [(kind, re.compile(pattern)) for kind, pattern in _TOKEN_FORMATS]
_TOKEN_END = re.compile(r"[A-Za-z0-9]")


def token_kind(match: re.Match[str]) -> str | None:
    """The kind of a `TOKENS` match, or None when it is none after all: glued to the word
    before or after it where its format says a word ends (`KMS.` in `AWS.KMS.`...), or a legacy
    Vault token without digits and both cases (`s.getInstanceConfiguration`)."""
    text = match.group(0)
    kind = next(kind for kind, pattern in _KINDS if pattern.match(text))
    if _BOUNDED.match(text):
        string, start, end = match.string, match.start(), match.end()
        if start and (string[start - 1].isalnum() or string[start - 1] in "_.-"):
            return None
        if end < len(string) and _TOKEN_END.match(string[end]) and kind != "private_key":
            return None
    if kind == "vault_token" and text.startswith("s."):
        body = text[2:]
        if not (
            any(c.isdigit() for c in body)
            and any(c.isupper() for c in body)
            and any(c.islower() for c in body)
        ):
            return None
    return kind
