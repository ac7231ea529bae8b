"""Example secrets, one generator per documented shape (random content, seeded: never real).

``SAMPLES`` maps a sample name to (kind, make): ``make(rng)`` returns ``(secret, planted)``:
``secret`` is what must not survive redaction, ``planted`` is the text placed in a context
(the secret itself, or the URL / connection string it naturally lives in).
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable

Make = Callable[[random.Random], tuple[str, str]]

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = string.ascii_letters + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
CRYPT = "./" + ALNUM  # crypt(3)'s base64 alphabet
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()


def r(rng: random.Random, chars: str, n: int) -> str:
    """``n`` random characters of ``chars``, never starting/ending with a separator."""
    body = "".join(rng.choice(chars) for _ in range(n))
    if n > 1 and body[0] in "_-+/.":
        body = rng.choice(ALNUM) + body[1:]
    if n > 1 and body[-1] in "_-+/.":
        body = body[:-1] + rng.choice(ALNUM)
    return body


def uuid(rng: random.Random) -> str:
    return "-".join(r(rng, HEX, n) for n in (8, 4, 4, 4, 12))


def tok(fn: Callable[[random.Random], str]) -> Make:
    """A token that is planted as itself."""

    def make(rng: random.Random) -> tuple[str, str]:
        s = fn(rng)
        return s, s

    return make


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _discord(rng: random.Random) -> str:
    uid = str(rng.randint(10**17, 10**19 - 1)).encode()
    first = base64.b64encode(uid).decode().rstrip("=")
    return f"{first}.{r(rng, URLSAFE, 6)}.{r(rng, URLSAFE, 38)}"


def _pem_b64(rng: random.Random) -> str:
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(b64(rng.randbytes(48)) for _ in range(6))
        + "\n-----END RSA PRIVATE KEY-----\n"
    )
    return b64(pem.encode())


def _ctx(prefix: str, fn: Callable[[random.Random], str], suffix: str = "") -> Make:
    """A secret planted inside the text it naturally lives in."""

    def make(rng: random.Random) -> tuple[str, str]:
        s = fn(rng)
        return s, prefix + s + suffix

    return make


def _split(head: Callable[[random.Random], str], secret: Callable[[random.Random], str]) -> Make:
    """A token whose first part is public: only ``secret``'s part must go."""

    def make(rng: random.Random) -> tuple[str, str]:
        h = head(rng)
        s = secret(rng)
        return s, h + s

    return make


SAMPLES: dict[str, tuple[str, Make]] = {
    # cloud
    "aws-access-key": ("aws-access-key", tok(lambda g: "AKIA" + r(g, UPPER + DIGITS, 16))),
    "aws-access-key/sts": ("aws-access-key", tok(lambda g: "ASIA" + r(g, UPPER + DIGITS, 16))),
    "aws-secret-key": ("aws-secret-key", _ctx("aws_secret_access_key = ", lambda g: r(g, B64, 40))),
    "aws-session-token": (
        "aws-session-token",
        tok(lambda g: "IQoJb3JpZ2luX2Vj" + r(g, B64, 300) + "=="),
    ),
    "aws-mws-key": ("aws-mws-key", tok(lambda g: "amzn.mws." + uuid(g))),
    "google-api-key": ("google-api-key", tok(lambda g: "AIza" + r(g, URLSAFE, 35))),
    "google-oauth-token": ("google-oauth-token", tok(lambda g: "ya29." + r(g, URLSAFE, 160))),
    "google-oauth-client-secret": (
        "google-oauth-client-secret",
        tok(lambda g: "GOCSPX-" + r(g, URLSAFE, 28)),
    ),
    "google-oauth-refresh-token": (
        "google-oauth-refresh-token",
        tok(lambda g: "1//0" + r(g, URLSAFE, 99)),
    ),
    "firebase-fcm-server-key": (
        "firebase-fcm-server-key",
        tok(lambda g: "AAAA" + r(g, URLSAFE, 7) + ":APA91b" + r(g, URLSAFE, 134)),
    ),
    "azure-storage-key/connection-string": (
        "azure-storage-key",
        _ctx(
            "DefaultEndpointsProtocol=https;AccountName=acmeprodlogs;AccountKey=",
            lambda g: r(g, B64, 86) + "==",
            ";EndpointSuffix=core.windows.net",
        ),
    ),
    "azure-storage-key/identifiable": (
        "azure-storage-key",
        tok(lambda g: r(g, ALNUM, 76) + "+ASt" + r(g, B64, 6) + "=="),
    ),
    "azure-shared-access-key": (
        "azure-shared-access-key",
        _ctx(
            "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=",
            lambda g: r(g, B64, 43) + "=",
        ),
    ),
    "azure-sas-signature": (
        "azure-sas-signature",
        _ctx(
            "https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
            "&se=2026-12-31T00:00:00Z&spr=https&sig=",
            lambda g: r(g, ALNUM, 40) + "%2B" + r(g, ALNUM, 3) + "%3D",
        ),
    ),
    "azure-cosmosdb-key": (
        "azure-cosmosdb-key",
        tok(lambda g: r(g, ALNUM, 76) + "ACDb" + r(g, B64, 6) + "=="),
    ),
    "azure-search-key": (
        "azure-search-key",
        tok(lambda g: r(g, ALNUM, 42) + "AzSe" + r(g, ALNUM, 6)),
    ),
    "azure-function-key": (
        "azure-function-key",
        tok(lambda g: r(g, ALNUM, 44) + "AzFu" + r(g, ALNUM, 6) + "=="),
    ),
    "azure-redis-key": (
        "azure-redis-key",
        tok(
            lambda g: r(g, ALNUM, 33) + "AzCa" + g.choice("ABCDEFGHIJKLMNOP") + r(g, ALNUM, 5) + "="
        ),
    ),
    "azure-ad-client-secret": (
        "azure-ad-client-secret",
        tok(lambda g: r(g, ALNUM, 3) + str(g.randint(0, 9)) + "Q~" + r(g, ALNUM + "_~.-", 34)),
    ),
    "azure-devops-pat": (
        "azure-devops-pat",
        tok(lambda g: r(g, ALNUM, 76) + "AZDO" + r(g, ALNUM, 4)),
    ),
    "alibaba-access-key": ("alibaba-access-key", tok(lambda g: "LTAI" + r(g, ALNUM, 20))),
    "tencent-secret-id": ("tencent-secret-id", tok(lambda g: "AKID" + r(g, ALNUM, 32))),
    "yandex-api-key": ("yandex-api-key", tok(lambda g: "AQVN" + r(g, URLSAFE, 36))),
    "scaleway-access-key": ("scaleway-access-key", tok(lambda g: "SCW" + r(g, UPPER + DIGITS, 17))),
    "digitalocean-token": ("digitalocean-token", tok(lambda g: "dop_v1_" + r(g, HEX, 64))),
    "heroku-api-key": ("heroku-api-key", tok(lambda g: "HRKU-AA" + r(g, URLSAFE, 58))),
    "databricks-token": ("databricks-token", tok(lambda g: "dapi" + r(g, HEX, 32))),
    "cloudflare-origin-ca-key": (
        "cloudflare-origin-ca-key",
        tok(lambda g: "v1.0-" + r(g, HEX, 24) + "-" + r(g, HEX, 146)),
    ),
    "flyio-token": ("flyio-token", tok(lambda g: "fm2_" + r(g, B64, 180) + "==")),
    "render-api-key": ("render-api-key", tok(lambda g: "rnd_" + r(g, ALNUM, 32))),
    "netlify-token": ("netlify-token", tok(lambda g: "nfp_" + r(g, ALNUM, 36))),
    "supabase-token": ("supabase-token", tok(lambda g: "sbp_" + r(g, HEX, 40))),
    "neon-api-key": ("neon-api-key", tok(lambda g: "napi_" + r(g, LOWER + DIGITS, 64))),
    "planetscale-token": ("planetscale-token", tok(lambda g: "pscale_pw_" + r(g, ALNUM, 43))),
    "tailscale-key": (
        "tailscale-key",
        tok(lambda g: "tskey-auth-" + r(g, ALNUM, 12) + "-" + r(g, ALNUM, 32)),
    ),
    "openshift-token": ("openshift-token", tok(lambda g: "sha256~" + r(g, URLSAFE, 43))),
    "docker-swarm-join-token": (
        "docker-swarm-join-token",
        tok(lambda g: "SWMTKN-1-" + r(g, LOWER + DIGITS, 50) + "-" + r(g, LOWER + DIGITS, 25)),
    ),
    "k3s-token": ("k3s-token", tok(lambda g: "K10" + r(g, HEX, 64) + "::server:" + r(g, HEX, 32))),
    "rancher-token": (
        "rancher-token",
        # the part before the colon names the key (like an AWS key id); the rest is secret
        _split(
            lambda g: "token-" + r(g, LOWER + DIGITS, 5) + ":", lambda g: r(g, LOWER + DIGITS, 54)
        ),
    ),
    # forges, CI, registries
    "github-token": ("github-token", tok(lambda g: "ghp_" + r(g, ALNUM, 36))),
    "github-token/app": ("github-token", tok(lambda g: "ghs_" + r(g, ALNUM, 36))),
    "github-token/fine-grained": (
        "github-token",
        tok(lambda g: "github_pat_" + r(g, ALNUM, 22) + "_" + r(g, ALNUM, 59)),
    ),
    "gitlab-token": ("gitlab-token", tok(lambda g: "glpat-" + r(g, URLSAFE, 20))),
    "gitlab-token/routable": (
        "gitlab-token",
        tok(lambda g: "glpat-" + r(g, URLSAFE, 36) + ".01." + r(g, LOWER + DIGITS, 9)),
    ),
    "gitlab-token/ci-job": ("gitlab-token", tok(lambda g: "glcbt-64_" + r(g, URLSAFE, 20))),
    "gitlab-runner-registration-token": (
        "gitlab-runner-registration-token",
        tok(lambda g: "GR1348941" + r(g, URLSAFE, 20)),
    ),
    "bitbucket-app-password": (
        "bitbucket-app-password",
        tok(lambda g: "ATBB" + r(g, ALNUM, 32) + r(g, "0123456789ABCDEF", 8)),
    ),
    "atlassian-api-token": (
        "atlassian-api-token",
        tok(lambda g: "ATATT3xFfGF0" + r(g, URLSAFE, 171) + "=" + r(g, "0123456789ABCDEF", 8)),
    ),
    "buildkite-token": ("buildkite-token", tok(lambda g: "bkua_" + r(g, HEX, 40))),
    "circleci-token": (
        "circleci-token",
        tok(lambda g: "CCIPAT_" + r(g, ALNUM, 22) + "_" + r(g, HEX, 40)),
    ),
    "sonarqube-token": ("sonarqube-token", tok(lambda g: "squ_" + r(g, HEX, 40))),
    "sourcegraph-token": (
        "sourcegraph-token",
        tok(lambda g: "sgp_" + r(g, HEX, 16) + "_" + r(g, HEX, 40)),
    ),
    "harness-token": (
        "harness-token",
        tok(lambda g: "pat." + r(g, URLSAFE, 22) + "." + r(g, ALNUM, 24) + "." + r(g, ALNUM, 20)),
    ),
    "terraform-cloud-token": (
        "terraform-cloud-token",
        tok(lambda g: r(g, ALNUM, 14) + ".atlasv1." + r(g, URLSAFE, 67)),
    ),
    "vault-token": ("vault-token", tok(lambda g: "hvs." + r(g, URLSAFE, 92))),
    "vault-token/batch": ("vault-token", tok(lambda g: "hvb." + r(g, URLSAFE, 138))),
    "vault-token/recovery": ("vault-token", tok(lambda g: "hvr." + r(g, URLSAFE, 24))),
    "pulumi-token": ("pulumi-token", tok(lambda g: "pul-" + r(g, HEX, 40))),
    "octopus-deploy-api-key": (
        "octopus-deploy-api-key",
        tok(lambda g: "API-" + r(g, UPPER + DIGITS, 26)),
    ),
    "infracost-token": ("infracost-token", tok(lambda g: "ico-" + r(g, ALNUM, 32))),
    "doppler-token": ("doppler-token", tok(lambda g: "dp.st.prd." + r(g, ALNUM, 40))),
    "onepassword-secret-key": (
        "onepassword-secret-key",
        tok(lambda g: "A3-" + "-".join(r(g, UPPER + DIGITS, n) for n in (6, 6, 5, 5, 5, 5))),
    ),
    "onepassword-service-token": (
        "onepassword-service-token",
        tok(lambda g: "ops_eyJ" + r(g, B64, 300) + "="),
    ),
    "age-secret-key": ("age-secret-key", tok(lambda g: "AGE-SECRET-KEY-1" + r(g, BECH32, 58))),
    "npm-token": ("npm-token", tok(lambda g: "npm_" + r(g, ALNUM, 36))),
    "pypi-token": ("pypi-token", tok(lambda g: "pypi-AgEIcHlwaS5vcmc" + r(g, URLSAFE, 120))),
    "rubygems-token": ("rubygems-token", tok(lambda g: "rubygems_" + r(g, HEX, 48))),
    "nuget-api-key": ("nuget-api-key", tok(lambda g: "oy2" + r(g, LOWER + DIGITS, 43))),
    "crates-io-token": ("crates-io-token", tok(lambda g: "cio" + r(g, ALNUM, 32))),
    "clojars-token": ("clojars-token", tok(lambda g: "CLOJARS_" + r(g, LOWER + DIGITS, 60))),
    "docker-hub-token": ("docker-hub-token", tok(lambda g: "dckr_pat_" + r(g, URLSAFE, 27))),
    "artifactory-api-key": ("artifactory-api-key", tok(lambda g: "AKCp" + r(g, ALNUM, 69))),
    "artifactory-reference-token": (
        "artifactory-reference-token",
        tok(lambda g: "cmVmdGtu" + r(g, ALNUM, 56)),
    ),
    "postman-api-key": (
        "postman-api-key",
        tok(lambda g: "PMAK-" + r(g, HEX, 24) + "-" + r(g, HEX, 34)),
    ),
    "prefect-api-key": ("prefect-api-key", tok(lambda g: "pnu_" + r(g, ALNUM, 36))),
    "readme-api-key": ("readme-api-key", tok(lambda g: "rdme_" + r(g, LOWER + DIGITS, 70))),
    "scalingo-token": ("scalingo-token", tok(lambda g: "tk-us-" + r(g, URLSAFE, 48))),
    "settlemint-token": ("settlemint-token", tok(lambda g: "sm_pat_" + r(g, ALNUM, 16))),
    "frameio-token": ("frameio-token", tok(lambda g: "fio-u-" + r(g, URLSAFE, 64))),
    # chat, mail, messaging
    "slack-token": (
        "slack-token",
        tok(lambda g: f"xoxb-{r(g, DIGITS, 12)}-{r(g, DIGITS, 13)}-{r(g, ALNUM, 24)}"),
    ),
    "slack-token/user": (
        "slack-token",
        tok(
            lambda g: (
                f"xoxp-{r(g, DIGITS, 12)}-{r(g, DIGITS, 12)}-{r(g, DIGITS, 13)}-{r(g, HEX, 32)}"
            )
        ),
    ),
    "slack-token/rotating": ("slack-token", tok(lambda g: "xoxe.xoxp-1-" + r(g, ALNUM, 163))),
    "slack-app-token": (
        "slack-app-token",
        tok(lambda g: f"xapp-1-A{r(g, UPPER + DIGITS, 10)}-{r(g, DIGITS, 13)}-{r(g, HEX, 64)}"),
    ),
    "slack-webhook": (
        "slack-webhook",
        _ctx(
            "https://hooks.slack.com/services/",
            lambda g: (
                "T"
                + r(g, UPPER + DIGITS, 8)
                + "/B"
                + r(g, UPPER + DIGITS, 10)
                + "/"
                + r(g, ALNUM, 24)
            ),
        ),
    ),
    "discord-bot-token": ("discord-bot-token", tok(_discord)),
    "discord-webhook": (
        "discord-webhook",
        _ctx("https://discord.com/api/webhooks/1187654321098765432/", lambda g: r(g, URLSAFE, 68)),
    ),
    "telegram-bot-token": (
        "telegram-bot-token",
        tok(lambda g: str(g.randint(10**9, 7 * 10**9)) + ":AA" + r(g, URLSAFE, 33)),
    ),
    "telegram-bot-token/url": (
        "telegram-bot-token",
        _ctx(
            "https://api.telegram.org/bot",
            lambda g: str(g.randint(10**9, 7 * 10**9)) + ":AA" + r(g, URLSAFE, 33),
            "/sendMessage?chat_id=-1001234567890",
        ),
    ),
    "teams-webhook": (
        "teams-webhook",
        _ctx(
            "https://acme.webhook.office.com/webhookb2/",
            lambda g: uuid(g) + "@" + uuid(g) + "/IncomingWebhook/" + r(g, HEX, 32) + "/" + uuid(g),
        ),
    ),
    "zapier-webhook": (
        "zapier-webhook",
        _ctx(
            "https://hooks.zapier.com/hooks/catch/1234567/", lambda g: r(g, LOWER + DIGITS, 6), "/"
        ),
    ),
    "ifttt-webhook-key": (
        "ifttt-webhook-key",
        _ctx("https://maker.ifttt.com/trigger/build_failed/with/key/", lambda g: r(g, URLSAFE, 22)),
    ),
    "sendgrid-api-key": (
        "sendgrid-api-key",
        tok(lambda g: "SG." + r(g, URLSAFE, 22) + "." + r(g, URLSAFE, 43)),
    ),
    "brevo-api-key": (
        "brevo-api-key",
        tok(lambda g: "xkeysib-" + r(g, HEX, 64) + "-" + r(g, ALNUM, 16)),
    ),
    "mailgun-api-key": ("mailgun-api-key", tok(lambda g: "key-" + r(g, HEX, 32))),
    "mailchimp-api-key": (
        "mailchimp-api-key",
        tok(lambda g: r(g, HEX, 32) + "-us" + str(g.randint(1, 21))),
    ),
    "twilio-api-key": ("twilio-api-key", tok(lambda g: "SK" + r(g, HEX, 32))),
    "twilio-auth-token": ("twilio-auth-token", _ctx("TWILIO_AUTH_TOKEN=", lambda g: r(g, HEX, 32))),
    "telnyx-api-key": (
        "telnyx-api-key",
        tok(lambda g: "KEY" + r(g, "0123456789ABCDEF", 32) + "_" + r(g, ALNUM, 22)),
    ),
    "pubnub-secret-key": ("pubnub-secret-key", tok(lambda g: "sec-c-" + r(g, ALNUM, 48))),
    # payments, commerce
    "stripe-key": ("stripe-key", tok(lambda g: "sk_live_" + r(g, ALNUM, 99))),
    "stripe-key/restricted": ("stripe-key", tok(lambda g: "rk_test_" + r(g, ALNUM, 24))),
    "stripe-webhook-secret": ("stripe-webhook-secret", tok(lambda g: "whsec_" + r(g, ALNUM, 32))),
    "square-token": ("square-token", tok(lambda g: "EAAA" + r(g, URLSAFE, 60))),
    "square-token/oauth-secret": ("square-token", tok(lambda g: "sq0csp-" + r(g, URLSAFE, 43))),
    "braintree-token": (
        "braintree-token",
        # the fixed words of the format are no secret (and a key name may repeat them)
        _split(
            lambda g: "access_token$production$",
            lambda g: f"{r(g, LOWER + DIGITS, 16)}${r(g, HEX, 32)}",
        ),
    ),
    "shopify-token": ("shopify-token", tok(lambda g: "shpat_" + r(g, HEX, 32))),
    "shopify-token/shared-secret": ("shopify-token", tok(lambda g: "shpss_" + r(g, HEX, 32))),
    "shopify-token/custom": ("shopify-token", tok(lambda g: "shpca_" + r(g, HEX, 32))),
    "shopify-token/private-app": ("shopify-token", tok(lambda g: "shppa_" + r(g, HEX, 32))),
    "woocommerce-key": ("woocommerce-key", tok(lambda g: "cs_" + r(g, HEX, 40))),
    "flutterwave-key": (
        "flutterwave-key",
        tok(lambda g: "FLWSECK_TEST-" + r(g, "abcdefgh0123456789", 32) + "-X"),
    ),
    "duffel-token": ("duffel-token", tok(lambda g: "duffel_live_" + r(g, URLSAFE, 43))),
    "easypost-key": ("easypost-key", tok(lambda g: "EZAK" + r(g, ALNUM, 54))),
    "shippo-token": ("shippo-token", tok(lambda g: "shippo_live_" + r(g, HEX, 40))),
    "plaid-access-token": ("plaid-access-token", tok(lambda g: "access-production-" + uuid(g))),
    # AI and data
    "anthropic-key": ("anthropic-key", tok(lambda g: "sk-ant-api03-" + r(g, URLSAFE, 93) + "AA")),
    "openrouter-key": ("openrouter-key", tok(lambda g: "sk-or-v1-" + r(g, HEX, 64))),
    "openai-key": (
        "openai-key",
        tok(lambda g: "sk-proj-" + r(g, URLSAFE, 74) + "T3BlbkFJ" + r(g, URLSAFE, 74)),
    ),
    "openai-key/legacy": (
        "openai-key",
        tok(lambda g: "sk-" + r(g, ALNUM, 20) + "T3BlbkFJ" + r(g, ALNUM, 20)),
    ),
    "huggingface-token": (
        "huggingface-token",
        tok(lambda g: "hf_" + r(g, string.ascii_letters, 34)),
    ),
    "groq-api-key": ("groq-api-key", tok(lambda g: "gsk_" + r(g, ALNUM, 52))),
    "xai-api-key": ("xai-api-key", tok(lambda g: "xai-" + r(g, ALNUM, 80))),
    "replicate-token": ("replicate-token", tok(lambda g: "r8_" + r(g, ALNUM, 37))),
    "perplexity-api-key": ("perplexity-api-key", tok(lambda g: "pplx-" + r(g, ALNUM, 48))),
    "langsmith-api-key": (
        "langsmith-api-key",
        tok(lambda g: "lsv2_pt_" + r(g, HEX, 32) + "_" + r(g, HEX, 10)),
    ),
    "pinecone-api-key": (
        "pinecone-api-key",
        tok(lambda g: "pcsk_" + r(g, ALNUM, 6) + "_" + r(g, ALNUM, 64)),
    ),
    "elevenlabs-api-key": ("elevenlabs-api-key", tok(lambda g: "sk_" + r(g, HEX, 48))),
    # SaaS
    "notion-token": ("notion-token", tok(lambda g: "ntn_" + r(g, DIGITS, 11) + r(g, ALNUM, 35))),
    "linear-api-key": ("linear-api-key", tok(lambda g: "lin_api_" + r(g, ALNUM, 40))),
    # PostHog's personal API key (its project key, phc_, is public)
    "posthog-personal-api-key": ("posthog-personal-api-key",
                                 tok(lambda g: "phx_" + r(g, ALNUM + "_", 47))),
    "airtable-token": (
        "airtable-token",
        tok(lambda g: "pat" + r(g, ALNUM, 14) + "." + r(g, HEX, 64)),
    ),
    "figma-token": ("figma-token", tok(lambda g: "figd_" + r(g, URLSAFE, 40))),
    "clickup-token": (
        "clickup-token",
        tok(lambda g: "pk_" + r(g, DIGITS, 8) + "_" + r(g, UPPER + DIGITS, 32)),
    ),
    "typeform-token": ("typeform-token", tok(lambda g: "tfp_" + r(g, URLSAFE, 59))),
    "dropbox-token": ("dropbox-token", tok(lambda g: "sl.B" + r(g, URLSAFE, 150))),
    "contentful-token": ("contentful-token", tok(lambda g: "CFPAT-" + r(g, URLSAFE, 43))),
    "mapbox-secret-token": (
        "mapbox-secret-token",
        tok(lambda g: "sk.eyJ1IjoiYWNtZSIsImEiOiJ" + r(g, ALNUM, 40) + "." + r(g, URLSAFE, 22)),
    ),
    "maxmind-license-key": (
        "maxmind-license-key",
        tok(lambda g: r(g, ALNUM, 6) + "_" + r(g, ALNUM, 29) + "_mmk"),
    ),
    "adobe-client-secret": ("adobe-client-secret", tok(lambda g: "p8e-" + r(g, ALNUM, 32))),
    "facebook-access-token": ("facebook-access-token", tok(lambda g: "EAAG" + r(g, ALNUM, 180))),
    "instagram-access-token": (
        "instagram-access-token",
        tok(lambda g: "IGQVJ" + r(g, URLSAFE, 180)),
    ),
    "twitter-bearer-token": (
        "twitter-bearer-token",
        tok(
            lambda g: "A" * 22 + r(g, ALNUM, 30) + "%2B" + r(g, ALNUM, 30) + "%3D" + r(g, ALNUM, 40)
        ),
    ),
    "stytch-secret": ("stytch-secret", tok(lambda g: "secret-live-" + r(g, URLSAFE, 35) + "=")),
    "segment-token": ("segment-token", tok(lambda g: "sgp_" + r(g, ALNUM, 64))),
    "akamai-client-token": (
        "akamai-client-token",
        tok(lambda g: "akab-" + r(g, LOWER + DIGITS, 16) + "-" + r(g, LOWER + DIGITS, 16)),
    ),
    # observability
    "sentry-token": ("sentry-token", tok(lambda g: "sntryu_" + r(g, HEX, 64))),
    "sentry-token/org": (
        "sentry-token",
        tok(lambda g: "sntrys_eyJpYXQiO" + r(g, ALNUM, 120) + "_" + r(g, ALNUM, 43)),
    ),
    "newrelic-key": ("newrelic-key", tok(lambda g: "NRAK-" + r(g, UPPER + DIGITS, 27))),
    "newrelic-key/license": ("newrelic-key", tok(lambda g: r(g, HEX, 36) + "NRAL")),
    "dynatrace-token": (
        "dynatrace-token",
        tok(lambda g: "dt0c01." + r(g, UPPER + DIGITS, 24) + "." + r(g, UPPER + DIGITS, 64)),
    ),
    "grafana-token": (
        "grafana-token",
        tok(lambda g: "glsa_" + r(g, ALNUM, 32) + "_" + r(g, HEX, 8)),
    ),
    "grafana-token/cloud": ("grafana-token", tok(lambda g: "glc_" + r(g, ALNUM, 120) + "==")),
    "grafana-api-key": ("grafana-api-key", tok(lambda g: "eyJrIjoi" + r(g, ALNUM, 90) + "=")),
    "honeycomb-key": ("honeycomb-key", tok(lambda g: "hcaik_" + r(g, LOWER + DIGITS, 58))),
    # password hashes (crypt's `$id$`, PHC strings, Django's)
    "password-hash/argon2": (
        "password-hash",
        tok(lambda g: "$argon2id$v=19$m=65536,t=3,p=4$" + r(g, B64, 22) + "$" + r(g, B64, 43)),
    ),
    "password-hash/mysql-native": (
        "password-hash",
        tok(lambda g: "*" + r(g, "0123456789ABCDEF", 40)),
    ),
    "tls-session-secret": (
        "tls-session-secret",
        _split(lambda g: "CLIENT_RANDOM " + r(g, HEX, 64) + " ", lambda g: r(g, HEX, 96)),
    ),
    "tls-session-secret/tls13": (
        "tls-session-secret",
        _split(lambda g: "CLIENT_TRAFFIC_SECRET_0 " + r(g, HEX, 64) + " ", lambda g: r(g, HEX, 64)),
    ),
    "password-hash/bcrypt": (
        "password-hash",
        tok(lambda g: "$2b$12$" + r(g, CRYPT, 53)),
    ),
    "password-hash/sha512crypt": (
        "password-hash",
        tok(lambda g: "$6$" + r(g, CRYPT, 16) + "$" + r(g, CRYPT, 86)),
    ),
    "password-hash/md5-apr1": (
        "password-hash",
        tok(lambda g: "$apr1$" + r(g, CRYPT, 8) + "$" + r(g, CRYPT, 22)),
    ),
    "password-hash/yescrypt": (
        "password-hash",
        tok(lambda g: "$y$j9T$" + r(g, CRYPT, 22) + "$" + r(g, CRYPT, 43)),
    ),
    "password-hash/scrypt": (
        "password-hash",
        tok(lambda g: "$scrypt$ln=16,r=8,p=1$" + r(g, B64, 22) + "$" + r(g, B64, 43)),
    ),
    "password-hash/django": (
        "password-hash",
        tok(lambda g: "pbkdf2_sha256$600000$" + r(g, ALNUM, 22) + "$" + r(g, B64, 43) + "="),
    ),
    # generic shapes with a fixed marker
    "jwt": (
        "jwt",
        tok(
            lambda g: (
                "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
                + r(g, URLSAFE, 80)
                + "."
                + r(g, URLSAFE, 43)
            )
        ),
    ),
    "base64-private-key": ("base64-private-key", tok(_pem_b64)),
}


def sample(name: str, salt: str = "") -> tuple[str, str, str]:
    """(kind, secret, planted) for one sample, the same every run; another ``salt`` gives
    another secret of the same shape (one per surface, so a leak names its surface)."""
    kind, make = SAMPLES[name]
    secret, planted = make(random.Random(f"rage-corpus:{name}:{salt}"))
    return kind, secret, planted
