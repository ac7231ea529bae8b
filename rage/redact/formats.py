"""The catalogue of provider secret formats: data, one place.

Each entry is a credential format a provider documents (or a public secret scanner's rule
describes), matched on its own, without a key name or header around it. The engine compiles
these; this module holds no matching logic.

Rules for an entry (the engine relies on them):

- ``regex`` is Python ``re`` syntax (str) and never crosses a newline. It has no boundary
  assertions: the engine requires that a match is not glued to ``[A-Za-z0-9]`` on either
  side. When context is part of the pattern (a URL path, a connection-string key), a named
  group ``(?P<secret>...)`` marks what is replaced.
- ``prefixes`` are case-sensitive literals of at least 3 characters; every match contains
  one of them (usually starts with it). They are the engine's prefilter.
- Formats are precise (fixed prefixes, lengths, checksummed shapes). Generic high-entropy
  matching is deliberately absent: git SHAs, UUIDs and digests are evidence, not secrets.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SecretFormat:
    """A documented credential format; a match becomes ``[REDACTED:<kind>]``."""

    kind: str
    regex: str
    prefixes: tuple[str, ...]
    source: str
    provider: str = ""


_F = SecretFormat

FORMATS: tuple[SecretFormat, ...] = (
    # -- migrated from rage/redact/patterns.py (TOKEN_FORMATS) ----------------------------
    _F("aws-access-key", r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
       ("AKIA", "ASIA", "ABIA", "ACCA"),
       "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html", "AWS"),
    _F("github-token", r"gh[pousr]_[A-Za-z0-9]{36,251}",
       ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
       "https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/",
       "GitHub"),
    _F("github-token", r"github_pat_[A-Za-z0-9_]{22,255}", ("github_pat_",),
       "https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/"
       "about-authentication-to-github#githubs-token-formats", "GitHub"),
    _F("gitlab-token", r"gl(?:pat|dt|rt)-[A-Za-z0-9_\-]{20,255}", ("glpat-", "gldt-", "glrt-"),
       "https://docs.gitlab.com/ee/security/tokens/#token-prefixes", "GitLab"),
    _F("slack-token", r"xox[abposre]-[A-Za-z0-9\-]{10,250}",
       tuple(f"xox{c}-" for c in "abposre"),
       "https://api.slack.com/authentication/token-types", "Slack"),
    _F("slack-token", r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,200}",
       ("hooks.slack.com/services/",),
       "https://api.slack.com/messaging/webhooks", "Slack"),
    _F("stripe-key", r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,250}",
       ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
       "https://docs.stripe.com/keys", "Stripe"),
    _F("npm-token", r"npm_[A-Za-z0-9]{36}", ("npm_",),
       "https://github.blog/security/announcing-npms-new-access-token-format/", "npm"),
    _F("pypi-token", r"pypi-AgE[A-Za-z0-9_\-]{50,1000}", ("pypi-AgE",),
       "https://pypi.org/help/#apitoken", "PyPI"),
    # before openai: both start with "sk-"
    _F("anthropic-key", r"sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{20,300}",
       ("sk-ant-",),
       "https://docs.anthropic.com/en/api/getting-started", "Anthropic"),
    # project/service keys carry a dash-separated type; legacy keys are one alphanumeric run
    # (a dash-separated slug like "sk-learn-tutorial-..." must not match)
    _F("openai-key", r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,300}|[A-Za-z0-9]{32,300})",
       ("sk-",),
       "https://platform.openai.com/docs/api-reference/authentication", "OpenAI"),
    _F("google-api-key", r"AIza[0-9A-Za-z_\-]{35}", ("AIza",),
       "https://cloud.google.com/docs/authentication/api-keys", "Google"),
    _F("jwt", r"eyJ[A-Za-z0-9_\-]{8,4096}\.[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{0,4096}",
       ("eyJ",),
       "https://datatracker.ietf.org/doc/html/rfc7519", "JWT"),
)
