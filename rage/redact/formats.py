"""The catalogue of provider secret formats: data, one place.

Each entry is a credential format that a provider documents (or that a public secret
scanner's rule set describes; ``source`` names where), matched on its own, without a key
name or header around it. The engine compiles these; no matching logic lives here.

Rules for an entry (the engine relies on them):

- ``regex`` is Python ``re`` syntax (str) and never crosses a newline. It has no boundary
  assertions: the engine requires that a match is not glued to ``[A-Za-z0-9]`` on either
  side. When context is part of the pattern (a URL path, a connection-string key), a named
  group ``(?P<secret>...)`` marks what is replaced.
- ``prefixes`` are case-sensitive literals of at least 3 characters; every match contains
  one of them (usually starts with it). They are the engine's prefilter.
- Formats are precise (fixed prefixes, lengths, charsets, fixed signatures). Generic
  high-entropy matching is deliberately absent: git SHAs, UUIDs and digests are evidence,
  not secrets. Order matters where shapes overlap (``sk-ant-`` before ``sk-``).
"""

from __future__ import annotations

import base64


class SecretFormat:
    """A documented credential format; a match becomes ``[REDACTED:<kind>]``.

    A plain class, never changed once made: a frozen dataclass cost every report ~3M
    instructions to define, and its 147 entries' frozen __init__ more (see
    rage.redact.scan.ScanPlan)."""

    __slots__ = ("kind", "prefixes", "provider", "regex", "source")

    def __init__(self, kind: str, regex: str, prefixes: tuple[str, ...], source: str,
                 provider: str = "") -> None:
        self.kind = kind
        self.regex = regex
        self.prefixes = prefixes
        self.source = source
        self.provider = provider

    def __repr__(self) -> str:
        return f"SecretFormat({self.kind!r})"


_F = SecretFormat
_GL = "https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml#"
_TH = "https://github.com/trufflesecurity/trufflehog/tree/main/pkg/detectors/"
_GHSS = ("https://docs.github.com/en/code-security/secret-scanning/introduction/"
         "supported-secret-scanning-patterns")
_GH = ("https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/"
       "about-authentication-to-github#githubs-token-formats")
_AWS = "https://docs.aws.amazon.com/IAM/latest/UserGuide/"


def _discord_prefixes() -> tuple[str, ...]:
    """A Discord bot token starts with the base64 of the bot's numeric id: the first three
    characters are fixed by the id's first two digits (90 possibilities)."""
    return tuple(base64.b64encode(f"{a}{b}0".encode()).decode()[:3]
                 for a in "123456789" for b in "0123456789")


_MYSQL_HASH = tuple(f"*{a}{b}" for a in "0123456789ABCDEF" for b in "0123456789ABCDEF")


def _b64_pem_prefixes() -> tuple[str, ...]:
    """Base64 of the BEGIN line of each private-key PEM type, cut at a 3-byte boundary so
    the encoding does not depend on what follows."""
    heads = [f"-----BEGIN {t}PRIVATE KEY-----" for t in
             ("", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ")]
    return tuple(base64.b64encode(h.encode()[: len(h) // 3 * 3]).decode() for h in heads)


_DISCORD_PREFIXES = _discord_prefixes()
_B64_PEM = _b64_pem_prefixes()

FORMATS: tuple[SecretFormat, ...] = (
    # -- cloud --------------------------------------------------------------------------
    _F("aws-access-key", r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}", ("AKIA", "ASIA", "ABIA", "ACCA"),
       _AWS + "reference_identifiers.html#identifiers-unique-ids", "AWS"),
    _F("aws-secret-key", r"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|[Ss]ecretAccessKey)"
       r"[\"']?[ \t]*[:=][ \t]*[\"']?(?P<secret>[A-Za-z0-9/+]{40})",
       ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "ecretAccessKey"),
       _AWS + "id_credentials_access-keys.html", "AWS"),
    # STS session tokens are base64 of a protobuf that starts "!\n\torigin_ec" (or older shapes)
    _F("aws-session-token", r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz"
       r"|FQoGZXIvYXdz)[A-Za-z0-9/+]{80,2000}={0,2}",
       ("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdz", "FQoGZXIvYXdz"),
       _AWS + "id_credentials_temp_use-resources.html", "AWS"),
    _F("aws-mws-key", r"amzn\.mws\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
       ("amzn.mws.",), _TH + "amazonmws", "Amazon MWS"),
    _F("google-api-key", r"AIza[0-9A-Za-z_\-]{35}", ("AIza",),
       "https://cloud.google.com/docs/authentication/api-keys", "Google"),
    _F("google-oauth-token", r"ya29\.[A-Za-z0-9_\-]{20,2048}", ("ya29.",),
       "https://developers.google.com/identity/protocols/oauth2", "Google"),
    _F("google-oauth-client-secret", r"GOCSPX-[A-Za-z0-9_\-]{28}", ("GOCSPX-",),
       _GL + "gcp-api-key", "Google"),
    _F("google-oauth-refresh-token", r"1//0[A-Za-z0-9_\-]{40,500}", ("1//0",),
       "https://developers.google.com/identity/protocols/oauth2#expiration", "Google"),
    _F("firebase-fcm-server-key", r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{120,200}",
       (":APA91b",), "https://firebase.google.com/docs/cloud-messaging/auth-server", "Firebase"),
    _F("azure-storage-key", r"AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)", ("AccountKey=",),
       "https://learn.microsoft.com/en-us/azure/storage/common/storage-configure-connection-string",
       "Azure"),
    _F("azure-shared-access-key", r"SharedAccessKey=(?P<secret>[A-Za-z0-9+/]{42,44}=)",
       ("SharedAccessKey=",),
       "https://learn.microsoft.com/en-us/azure/service-bus-messaging/service-bus-sas", "Azure"),
    # SAS signature: base64 HMAC-SHA256, usually URL-encoded, in any query string
    _F("azure-sas-signature", r"sig=(?P<secret>[A-Za-z0-9%+/]{40,120}(?:=|%3[Dd]){0,2})",
       ("sig=",), "https://learn.microsoft.com/en-us/rest/api/storageservices/create-service-sas",
       "Azure"),
    # Microsoft "identifiable" keys carry a fixed signature at a fixed offset
    _F("azure-storage-key", r"[A-Za-z0-9+/]{76}\+ASt[A-Za-z0-9+/]{6}==", ("+ASt",), _GHSS, "Azure"),
    _F("azure-cosmosdb-key", r"[A-Za-z0-9+/]{76}ACDb[A-Za-z0-9+/]{6}==", ("ACDb",), _GHSS, "Azure"),
    _F("azure-search-key", r"[A-Za-z0-9]{42}AzSe[A-Za-z0-9]{6}", ("AzSe",), _GHSS, "Azure"),
    _F("azure-function-key", r"[A-Za-z0-9_\-]{44}AzFu[A-Za-z0-9_\-]{6}==", ("AzFu",), _GHSS,
       "Azure"),
    _F("azure-redis-key", r"[A-Za-z0-9+/]{33}AzCa[A-P][A-Za-z0-9+/]{5}=", ("AzCa",), _GHSS,
       "Azure"),
    _F("azure-ad-client-secret", r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}",
       tuple(f"{d}Q~" for d in "0123456789"), _GL + "azure-ad-client-secret", "Azure"),
    _F("azure-devops-pat", r"[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}", ("AZDO",),
       "https://learn.microsoft.com/en-us/azure/devops/organizations/accounts/use-personal-access-tokens-to-authenticate",
       "Azure DevOps"),
    _F("alibaba-access-key", r"LTAI[A-Za-z0-9]{12,20}", ("LTAI",), _GL + "alibaba-access-key-id",
       "Alibaba Cloud"),
    _F("tencent-secret-id", r"AKID[A-Za-z0-9]{32}", ("AKID",), _TH + "tencentcloud", "Tencent"),
    _F("yandex-api-key", r"AQVN[A-Za-z0-9_\-]{35,38}", ("AQVN",), _GL + "yandex-api-key", "Yandex"),
    _F("scaleway-access-key", r"SCW[A-Z0-9]{17}", ("SCW",),
       "https://www.scaleway.com/en/docs/iam/concepts/#api-key", "Scaleway"),
    _F("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}", ("doo_v1_", "dop_v1_", "dor_v1_"),
       "https://docs.digitalocean.com/reference/api/create-personal-access-token/", "DigitalOcean"),
    _F("heroku-api-key", r"HRKU-AA[A-Za-z0-9_\-]{58}", ("HRKU-",),
       "https://devcenter.heroku.com/articles/authentication", "Heroku"),
    _F("databricks-token", r"dapi[a-f0-9]{32}(?:-[0-9])?", ("dapi",),
       "https://docs.databricks.com/en/dev-tools/auth/pat.html", "Databricks"),
    _F("cloudflare-origin-ca-key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", ("v1.0-",),
       _GL + "cloudflare-origin-ca-key", "Cloudflare"),
    _F("flyio-token", r"(?:fo1_[A-Za-z0-9_\-]{43}|fm1[ar]_[A-Za-z0-9+/]{100,2000}={0,3}"
       r"|fm2_[A-Za-z0-9+/]{100,2000}={0,3})", ("fo1_", "fm1a_", "fm1r_", "fm2_"),
       "https://fly.io/docs/security/tokens/", "Fly.io"),
    _F("render-api-key", r"rnd_[A-Za-z0-9]{24,64}", ("rnd_",),
       "https://render.com/docs/api#1-create-an-api-key", "Render"),
    _F("netlify-token", r"nf[po]_[A-Za-z0-9]{36,40}", ("nfp_", "nfo_"),
       "https://docs.netlify.com/api/get-started/#authentication", "Netlify"),
    _F("supabase-token", r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{31,40})",
       ("sbp_", "sb_secret_"), "https://supabase.com/docs/guides/api/api-keys", "Supabase"),
    _F("neon-api-key", r"napi_[a-z0-9]{64}", ("napi_",),
       "https://neon.com/docs/manage/api-keys", "Neon"),
    _F("planetscale-token", r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=\-]{32,64}",
       ("pscale_tkn_", "pscale_oauth_", "pscale_pw_"), _GL + "planetscale-api-token",
       "PlanetScale"),
    _F("tailscale-key", r"tskey-(?:auth|api|client|webhook"
       r"|scim)-[A-Za-z0-9]{6,20}-[A-Za-z0-9]{20,64}",
       ("tskey-",), "https://tailscale.com/kb/1085/auth-keys", "Tailscale"),
    _F("openshift-token", r"sha256~[A-Za-z0-9_\-]{43}", ("sha256~",),
       _GL + "openshift-user-token", "OpenShift"),
    _F("docker-swarm-join-token", r"SWMTKN-1-[a-z0-9]{50}-[a-z0-9]{25}", ("SWMTKN-1-",),
       "https://docs.docker.com/reference/cli/docker/swarm/join-token/", "Docker"),
    _F("k3s-token", r"K10[0-9a-f]{64}::(?:server|node):[A-Za-z0-9]{16,64}", ("K10",),
       "https://docs.k3s.io/cli/token", "K3s"),
    _F("rancher-token", r"token-[a-z0-9]{5}:[a-z0-9]{54}", ("token-",),
       "https://ranchermanager.docs.rancher.com/api/api-tokens", "Rancher"),
    # -- source forges, CI, registries ------------------------------------------------------
    _F("github-token", r"gh[pousr]_[A-Za-z0-9]{36,251}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
       "https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/",
       "GitHub"),
    _F("github-token", r"github_pat_[A-Za-z0-9_]{22,255}", ("github_pat_",), _GH, "GitHub"),
    _F("gitlab-token", r"gl(?:pat|dt|rt|ptt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_\-.]{20,300}",
       ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-",
        "glffct-"), "https://docs.gitlab.com/security/tokens/#token-prefixes", "GitLab"),
    _F("gitlab-token", r"glcbt-[A-Za-z0-9]{1,5}_[A-Za-z0-9_\-]{20}", ("glcbt-",),
       "https://docs.gitlab.com/security/tokens/#token-prefixes", "GitLab"),
    _F("gitlab-runner-registration-token", r"GR1348941[A-Za-z0-9_\-]{20}", ("GR1348941",),
       "https://docs.gitlab.com/security/tokens/#token-prefixes", "GitLab"),
    _F("bitbucket-app-password", r"ATBB[A-Za-z0-9_=.\-]{32}[A-F0-9]{8}", ("ATBB",),
       "https://support.atlassian.com/bitbucket-cloud/docs/app-passwords/", "Bitbucket"),
    _F("atlassian-api-token", r"ATATT3[A-Za-z0-9_\-=]{150,250}", ("ATATT3",),
       "https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/",
       "Atlassian"),
    _F("buildkite-token", r"bkua_[a-f0-9]{40}", ("bkua_",),
       "https://buildkite.com/docs/apis/managing-api-tokens", "Buildkite"),
    _F("circleci-token", r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}", ("CCIPAT_",),
       "https://circleci.com/docs/managing-api-tokens/", "CircleCI"),
    _F("sonarqube-token", r"sq[pua]_[a-f0-9]{40}", ("sqp_", "squ_", "sqa_"),
       "https://docs.sonarsource.com/sonarqube-server/latest/user-guide/managing-tokens/",
       "SonarQube"),
    _F("sourcegraph-token", r"sgp_(?:(?:[a-f0-9]{16}|local)_)?[a-f0-9]{40}", ("sgp_",),
       _GL + "sourcegraph-access-token", "Sourcegraph"),
    _F("harness-token", r"(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
       ("pat.", "sat."), _GL + "harness-api-key", "Harness"),
    _F("terraform-cloud-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,70}", (".atlasv1.",),
       "https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens",
       "HashiCorp"),
    _F("vault-token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,400}", ("hvs.", "hvb.", "hvr."),
       "https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes", "HashiCorp"),
    _F("pulumi-token", r"pul-[a-f0-9]{40}", ("pul-",),
       "https://www.pulumi.com/docs/pulumi-cloud/access-management/access-tokens/", "Pulumi"),
    _F("octopus-deploy-api-key", r"API-[A-Z0-9]{26}", ("API-",),
       "https://octopus.com/docs/octopus-rest-api/how-to-create-an-api-key", "Octopus Deploy"),
    _F("infracost-token", r"ico-[A-Za-z0-9]{32}", ("ico-",), _GL + "infracost-api-token",
       "Infracost"),
    _F("doppler-token",
       r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{1,30}\.)?[A-Za-z0-9]{40,44}",
       ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
       "https://docs.doppler.com/docs/token-formats", "Doppler"),
    _F("onepassword-secret-key",
       r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}"
       r"|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
       ("A3-",), "https://support.1password.com/secret-key/", "1Password"),
    _F("onepassword-service-token", r"ops_eyJ[A-Za-z0-9+/]{250,2000}={0,3}", ("ops_eyJ",),
       "https://developer.1password.com/docs/service-accounts/", "1Password"),
    _F("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
       ("AGE-SECRET-KEY-1",), "https://age-encryption.org/v1", "age"),
    _F("npm-token", r"npm_[A-Za-z0-9]{36}", ("npm_",),
       "https://github.blog/security/announcing-npms-new-access-token-format/", "npm"),
    _F("pypi-token", r"pypi-AgE[A-Za-z0-9_\-]{50,1000}", ("pypi-AgE",),
       "https://pypi.org/help/#apitoken", "PyPI"),
    _F("rubygems-token", r"rubygems_[a-f0-9]{48}", ("rubygems_",),
       "https://guides.rubygems.org/api-key-scopes/", "RubyGems"),
    _F("nuget-api-key", r"oy2[a-z0-9]{43}", ("oy2",), _GHSS, "NuGet"),
    _F("crates-io-token", r"cio[A-Za-z0-9]{32}", ("cio",), _GHSS, "crates.io"),
    _F("clojars-token", r"CLOJARS_[A-Za-z0-9]{60}", ("CLOJARS_",), _GL + "clojars-api-token",
       "Clojars"),
    _F("docker-hub-token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,40}", ("dckr_pat_", "dckr_oat_"),
       "https://docs.docker.com/security/for-developers/access-tokens/", "Docker"),
    _F("artifactory-api-key", r"AKCp[A-Za-z0-9]{69}", ("AKCp",),
       _GL + "artifactory-api-key", "JFrog"),
    _F("artifactory-reference-token", r"cmVmdGtu[A-Za-z0-9]{56}", ("cmVmdGtu",),
       _GL + "artifactory-reference-token", "JFrog"),
    _F("postman-api-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", ("PMAK-",),
       "https://learning.postman.com/docs/developer/postman-api/authentication/", "Postman"),
    _F("prefect-api-key", r"pnu_[A-Za-z0-9]{36}", ("pnu_",), _GL + "prefect-api-token", "Prefect"),
    _F("readme-api-key", r"rdme_[a-z0-9]{70}", ("rdme_",), _GL + "readme-api-token", "ReadMe"),
    _F("scalingo-token", r"tk-us-[A-Za-z0-9_\-]{48}", ("tk-us-",), _GL + "scalingo-api-token",
       "Scalingo"),
    _F("settlemint-token", r"sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}", ("sm_aat_", "sm_pat_", "sm_sat_"),
       _GL + "settlemint-personal-access-token", "SettleMint"),
    _F("frameio-token", r"fio-u-[A-Za-z0-9_\-=]{64}", ("fio-u-",), _GL + "frameio-api-token",
       "Frame.io"),
    # -- chat, mail, messaging ------------------------------------------------------------
    _F("slack-token", r"xox[abposre]-[A-Za-z0-9\-]{10,250}", tuple(f"xox{c}-" for c in "abposre"),
       "https://api.slack.com/authentication/token-types", "Slack"),
    _F("slack-token", r"xoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{100,250}", ("xoxe.xoxb-", "xoxe.xoxp-"),
       "https://api.slack.com/authentication/rotation", "Slack"),
    _F("slack-app-token", r"xapp-[0-9]-[A-Za-z0-9]{6,16}-[0-9]{6,16}-[A-Za-z0-9]{32,80}",
       ("xapp-",),
       "https://api.slack.com/authentication/token-types#app-level", "Slack"),
    _F("slack-webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+]{20,200}",
       ("hooks.slack.com/",), "https://api.slack.com/messaging/webhooks", "Slack"),
    _F("discord-bot-token", r"[MNO][A-Za-z0-9]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}",
       _DISCORD_PREFIXES, "https://discord.com/developers/docs/reference#authentication",
       "Discord"),
    _F("discord-webhook",
       r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<secret>[A-Za-z0-9_\-]{60,68})",
       ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
       "https://discord.com/developers/docs/resources/webhook", "Discord"),
    # ...and their paths alone, as urllib3's debug log prints a request apart from its host
    # (`https://hooks.slack.com:443 "POST /services/T.../B.../x HTTP/1.1" 200`)
    _F("slack-webhook", r"/services/T[A-Z0-9]{8,12}/B[A-Z0-9]{8,12}/[A-Za-z0-9]{24}",
       ("/services/T",), "https://api.slack.com/messaging/webhooks", "Slack"),
    _F("discord-webhook", r"/api/webhooks/[0-9]{17,20}/(?P<secret>[A-Za-z0-9_\-]{60,68})",
       ("/api/webhooks/",), "https://discord.com/developers/docs/resources/webhook", "Discord"),
    # 33 characters after `AA` as issued; 32 in Telegram's own documented example
    # (`110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw`), which users copy into tests and docs
    _F("telegram-bot-token", r"[0-9]{8,10}:AA[A-Za-z0-9_\-]{32,33}", (":AA",),
       "https://core.telegram.org/bots/api#authorizing-your-bot", "Telegram"),
    # in an API URL the token follows "/bot" with no separator
    _F("telegram-bot-token", r"bot(?P<secret>[0-9]{8,10}:AA[A-Za-z0-9_\-]{32,33})", (":AA",),
       "https://core.telegram.org/bots/api#making-requests", "Telegram"),
    _F("teams-webhook",
       r"webhook\.office\.com/webhookb2/(?P<secret>[0-9a-f\-]{36}@[0-9a-f\-]{36}/IncomingWebhook/"
       r"[0-9a-f]{32}/[0-9a-f\-]{36}(?:/[A-Za-z0-9_\-]{20,80})?)",
       ("webhook.office.com/webhookb2/",),
       "https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/"
       "how-to/add-incoming-webhook",
       "Microsoft Teams"),
    _F("zapier-webhook",
       r"hooks\.zapier\.com/hooks/catch/[0-9]{4,12}/(?P<secret>[A-Za-z0-9]{5,12})",
       ("hooks.zapier.com/hooks/catch/",), _TH + "zapierwebhook", "Zapier"),
    _F("ifttt-webhook-key", r"maker\.ifttt\.com/(?:trigger/[A-Za-z0-9_\-]{1,64}/with/)?key/"
       r"(?P<secret>[A-Za-z0-9_\-]{22,43})", ("maker.ifttt.com/",), _TH + "ifttt", "IFTTT"),
    _F("sendgrid-api-key", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", ("SG.",),
       "https://www.twilio.com/docs/sendgrid/ui/account-and-settings/api-keys", "SendGrid"),
    _F("brevo-api-key", r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}",
       ("xkeysib-", "xsmtpsib-"), _GL + "sendinblue-api-token", "Brevo"),
    _F("mailgun-api-key", r"key-[a-f0-9]{32}", ("key-",),
       "https://documentation.mailgun.com/docs/mailgun/api-reference/authentication", "Mailgun"),
    _F("mailchimp-api-key", r"[a-f0-9]{32}-us[0-9]{1,2}", ("-us",),
       "https://mailchimp.com/developer/marketing/guides/quick-start/", "Mailchimp"),
    _F("twilio-api-key", r"SK[0-9a-f]{32}", tuple(f"SK{c}" for c in "0123456789abcdef"),
       "https://www.twilio.com/docs/iam/api-keys", "Twilio"),
    _F("twilio-auth-token", r"(?:TWILIO|[Tt]wilio)[A-Za-z_]{0,12}(?:AUTH_TOKEN|[Aa]uth_?[Tt]oken)"
       r"[\"']?[ \t]*[:=][ \t]*[\"']?(?P<secret>[0-9a-f]{32})", ("TWILIO", "Twilio", "twilio"),
       "https://www.twilio.com/docs/iam/credentials/api", "Twilio"),
    _F("telnyx-api-key", r"KEY[0-9A-F]{32}_[A-Za-z0-9]{22}", ("KEY",),
       "https://developers.telnyx.com/docs/overview/authentication", "Telnyx"),
    _F("pubnub-secret-key", r"sec-c-[A-Za-z0-9]{48}", ("sec-c-",),
       "https://www.pubnub.com/docs/general/setup/account-setup", "PubNub"),
    # -- payments, commerce -----------------------------------------------------------------
    _F("stripe-key", r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{16,250}",
       ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"),
       "https://docs.stripe.com/keys", "Stripe"),
    _F("stripe-webhook-secret", r"whsec_[A-Za-z0-9+/=]{32,100}", ("whsec_",),
       "https://docs.stripe.com/webhooks#verify-events", "Stripe"),
    _F("square-token", r"(?:sq0atp-[A-Za-z0-9_\-]{22}|sq0csp-[A-Za-z0-9_\-]{43}"
       r"|EAAA[A-Za-z0-9_\-]{60})",
       ("sq0atp-", "sq0csp-", "EAAA"),
       "https://developer.squareup.com/docs/build-basics/access-tokens",
       "Square"),
    _F("braintree-token", r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}",
       ("access_token$production$", "access_token$sandbox$"), _GHSS, "Braintree"),
    _F("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shpat_", "shpca_", "shppa_",
       "shpss_"),
       "https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens", "Shopify"),
    _F("woocommerce-key", r"c[ks]_[a-f0-9]{40}", ("ck_", "cs_"),
       "https://woocommerce.github.io/woocommerce-rest-api-docs/#authentication", "WooCommerce"),
    _F("flutterwave-key", r"FLWSECK(?:_TEST)?-[a-h0-9]{12,32}(?:-X)?", ("FLWSECK",),
       _GL + "flutterwave-secret-key", "Flutterwave"),
    _F("duffel-token", r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}", ("duffel_test_",
       "duffel_live_"),
       _GL + "duffel-api-token", "Duffel"),
    _F("easypost-key", r"EZ[AT]K[A-Za-z0-9]{54}", ("EZAK", "EZTK"), _GL + "easypost-api-token",
       "EasyPost"),
    _F("shippo-token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}", ("shippo_live_", "shippo_test_"),
       _GL + "shippo-api-token", "Shippo"),
    _F("plaid-access-token",
       r"access-(?:sandbox|development"
       r"|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
       ("access-sandbox-", "access-development-", "access-production-"),
       "https://plaid.com/docs/api/tokens/", "Plaid"),
    # -- AI and data -------------------------------------------------------------------------
    # before openai: all start with "sk-"
    _F("anthropic-key", r"sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{20,300}",
       ("sk-ant-",),
       "https://docs.anthropic.com/en/api/getting-started", "Anthropic"),
    _F("openrouter-key", r"sk-or-v1-[a-f0-9]{64}", ("sk-or-v1-",),
       "https://openrouter.ai/docs/api-reference/authentication", "OpenRouter"),
    # project/service keys carry a dash-separated type; legacy keys are one alphanumeric run
    # (a dash-separated slug like "sk-learn-tutorial-..." must not match)
    _F("openai-key", r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,300}|[A-Za-z0-9]{32,300})",
       ("sk-",), "https://platform.openai.com/docs/api-reference/authentication", "OpenAI"),
    _F("huggingface-token", r"(?:hf_|api_org_)[A-Za-z]{34}", ("hf_", "api_org_"),
       "https://huggingface.co/docs/hub/security-tokens", "Hugging Face"),
    _F("groq-api-key", r"gsk_[A-Za-z0-9]{52}", ("gsk_",),
       "https://console.groq.com/docs/quickstart",
       "Groq"),
    _F("xai-api-key", r"xai-[A-Za-z0-9]{80}", ("xai-",), "https://docs.x.ai/docs/overview", "xAI"),
    _F("replicate-token", r"r8_[A-Za-z0-9]{37}", ("r8_",),
       "https://replicate.com/docs/reference/http#authentication", "Replicate"),
    _F("perplexity-api-key", r"pplx-[A-Za-z0-9]{48}", ("pplx-",), _GL + "perplexity-api-key",
       "Perplexity"),
    _F("langsmith-api-key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", ("lsv2_pt_", "lsv2_sk_"),
       "https://docs.smith.langchain.com/administration/how_to_guides/organization_management/create_account_api_key",
       "LangChain"),
    _F("pinecone-api-key", r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{50,80}", ("pcsk_",),
       "https://docs.pinecone.io/guides/projects/manage-api-keys", "Pinecone"),
    _F("elevenlabs-api-key", r"sk_[a-f0-9]{48}", ("sk_",),
       "https://elevenlabs.io/docs/api-reference/authentication", "ElevenLabs"),
    # -- SaaS ---------------------------------------------------------------------------------
    _F("notion-token", r"(?:ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})", ("ntn_",
       "secret_"),
       "https://developers.notion.com/docs/authorization", "Notion"),
    _F("posthog-personal-api-key", r"phx_[A-Za-z0-9_]{43,47}", ("phx_",),
       "https://posthog.com/docs/api#private-endpoint-authentication (personal API keys, phx_; "
       "the project key, phc_, is public)", "PostHog"),
    _F("linear-api-key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}", ("lin_api_", "lin_oauth_"),
       "https://linear.app/developers/graphql#personal-api-keys", "Linear"),
    _F("airtable-token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", ("pat",),
       "https://airtable.com/developers/web/guides/personal-access-tokens", "Airtable"),
    _F("figma-token", r"fig[dou]_[A-Za-z0-9_\-]{38,45}", ("figd_", "figo_", "figu_"),
       "https://www.figma.com/developers/api#access-tokens", "Figma"),
    _F("clickup-token", r"pk_[0-9]{6,10}_[A-Z0-9]{32}", ("pk_",),
       "https://clickup.com/api/developer-portal/authentication/", "ClickUp"),
    _F("typeform-token", r"tfp_[A-Za-z0-9_\-.=]{59}", ("tfp_",), _GL + "typeform-api-token",
       "Typeform"),
    _F("dropbox-token", r"sl\.[A-Za-z0-9_\-=.]{130,1500}", ("sl.",),
       "https://developers.dropbox.com/oauth-guide", "Dropbox"),
    _F("contentful-token", r"CFPAT-[A-Za-z0-9_\-]{43}", ("CFPAT-",),
       "https://www.contentful.com/developers/docs/references/authentication/", "Contentful"),
    _F("mapbox-secret-token", r"sk\.eyJ[A-Za-z0-9_\-]{50,300}\.[A-Za-z0-9_\-]{20,100}", ("sk.eyJ",),
       "https://docs.mapbox.com/help/glossary/access-token/", "Mapbox"),
    _F("maxmind-license-key", r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk", ("_mmk",),
       "https://dev.maxmind.com/license-key-migration", "MaxMind"),
    _F("adobe-client-secret", r"p8e-[A-Za-z0-9]{32}", ("p8e-",), _GL + "adobe-client-secret",
       "Adobe"),
    _F("facebook-access-token", r"EAA[A-Za-z0-9]{100,1000}", ("EAA",),
       "https://developers.facebook.com/docs/facebook-login/guides/access-tokens", "Meta"),
    _F("instagram-access-token", r"IGQV[A-Za-z0-9_\-]{100,1000}", ("IGQV",),
       "https://developers.facebook.com/docs/instagram-basic-display-api/overview", "Meta"),
    _F("twitter-bearer-token", r"A{22}[A-Za-z0-9%]{80,120}", ("AAAAAAAAAAAAAAAAAAAAAA",),
       _GL + "twitter-bearer-token", "X"),
    _F("stytch-secret", r"secret-(?:test|live)-[A-Za-z0-9_\-=]{36}", ("secret-test-",
       "secret-live-"),
       "https://stytch.com/docs/api/authentication", "Stytch"),
    _F("segment-token", r"sgp_[A-Za-z0-9]{64}", ("sgp_",), _GHSS, "Segment"),
    _F("akamai-client-token", r"akab-[a-z0-9]{16}-[a-z0-9]{16}", ("akab-",),
       "https://techdocs.akamai.com/developer/docs/set-up-authentication-credentials", "Akamai"),
    # -- observability -----------------------------------------------------------------------
    _F("sentry-token", r"(?:sntryu_[a-f0-9]{64}"
       r"|sntrys_eyJpYXQiO[A-Za-z0-9+/=]{40,1000}_[A-Za-z0-9+/]{43})",
       ("sntryu_", "sntrys_"), "https://docs.sentry.io/account/auth-tokens/", "Sentry"),
    _F("newrelic-key", r"(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_\-]{32}|NRJS-[a-f0-9]{19}"
       r"|[a-f0-9]{36}NRAL)",
       ("NRAK-", "NRII-", "NRJS-", "NRAL"),
       "https://docs.newrelic.com/docs/apis/intro-apis/new-relic-api-keys/",
       "New Relic"),
    _F("dynatrace-token", r"dt0[cs][0-9]{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}", ("dt0c", "dt0s"),
       "https://docs.dynatrace.com/docs/manage/identity-access-management/access-tokens-and-oauth-clients/access-tokens",
       "Dynatrace"),
    _F("grafana-token", r"(?:glc_[A-Za-z0-9+/]{32,400}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})",
       ("glc_", "glsa_"),
       "https://grafana.com/docs/grafana/latest/administration/service-accounts/",
       "Grafana"),
    # before jwt: the legacy Grafana API key is base64 JSON too, without dots
    _F("grafana-api-key", r"eyJrIjoi[A-Za-z0-9]{70,400}={0,3}", ("eyJrIjoi",),
       _GL + "grafana-api-key", "Grafana"),
    _F("honeycomb-key", r"hc[ax](?:ik|ic|lk|mk)_[a-z0-9]{58}", ("hcaik_", "hcaic_", "hcxik_",
       "hcxlk_", "hcxmk_"),
       "https://docs.honeycomb.io/get-started/configure/environments/manage-api-keys/",
       "Honeycomb"),
    # -- password hashes ----------------------------------------------------------------------
    # hashes of passwords (shadow, htpasswd, app databases, framework settings) can be
    # cracked offline: the modular crypt format's `$id$` strings and the PHC string format,
    # each by its documented alphabet and lengths (an argon2 or scrypt hash holds commas)
    _F("password-hash",
       r"(?:\$argon2(?:id|i|d)\$v=\d{1,3}\$m=\d{1,10},t=\d{1,10},p=\d{1,3}"
       r"\$[A-Za-z0-9+/]{8,128}\$[A-Za-z0-9+/]{16,256}"
       r"|\$scrypt\$ln=\d{1,2},r=\d{1,3},p=\d{1,3}\$[A-Za-z0-9+/]{8,128}\$[A-Za-z0-9+/]{16,256}"
       r"|\$pbkdf2(?:-sha(?:1|256|512))?\$(?:i=)?\d{1,9}\$[A-Za-z0-9+/.]{8,128}"
       r"\$[A-Za-z0-9+/.]{16,256}"
       r"|\$2[abxy]\$\d{2}\$[./A-Za-z0-9]{53}"
       r"|\$[56]\$(?:rounds=\d{1,9}\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{43,86}"
       r"|\$(?:1|apr1)\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}"
       r"|\$y\$[./A-Za-z0-9]{1,32}\$[./A-Za-z0-9]{1,86}\$[./A-Za-z0-9]{43}"
       r"|pbkdf2_sha(?:1|256)\$\d{1,9}\$[A-Za-z0-9]{1,64}\$[A-Za-z0-9+/]{20,88}={0,2})",
       ("$argon2", "$scrypt$", "$pbkdf2", "$2a$", "$2b$", "$2x$", "$2y$", "$5$", "$6$", "$1$",
        "$apr1$", "$y$", "pbkdf2_sha"),
       "https://github.com/P-H-C/phc-string-format/blob/master/phc-sf-spec.md",
       "password hashes (crypt, PHC)"),
    # PostgreSQL's SCRAM verifier, as pg_authid and pg_shadow print it: iterations and salt,
    # then the stored and server keys (RFC 5803's form)
    _F("password-hash", r"SCRAM-SHA-256\$\d{1,9}:[A-Za-z0-9+/]{8,128}={0,2}"
       r"\$[A-Za-z0-9+/]{16,128}={0,2}:[A-Za-z0-9+/]{16,128}={0,2}", ("SCRAM-SHA-256$",),
       "https://www.postgresql.org/docs/current/catalog-pg-authid.html",
       "PostgreSQL (SCRAM verifier)"),
    # MySQL's mysql_native_password hash (`mysql.user.authentication_string`, old `SHOW
    # GRANTS`, `PASSWORD()`): `*` and 40 upper-case hex digits, SHA1(SHA1(password)); git and
    # digests print lower case
    _F("password-hash", r"\*[0-9A-F]{40}", _MYSQL_HASH,
       "https://dev.mysql.com/doc/refman/8.0/en/native-pluggable-authentication.html",
       "MySQL (native password hash)"),
    # -- TLS session secrets ------------------------------------------------------------------
    # the key log that SSLKEYLOGFILE makes curl, Firefox, Chrome and Python's ssl write: a
    # label, the client random (public) and the secret that decrypts a captured session
    _F("tls-session-secret", r"(?:CLIENT_RANDOM|CLIENT_EARLY_TRAFFIC_SECRET|"
       r"(?:CLIENT|SERVER)_HANDSHAKE_TRAFFIC_SECRET|(?:CLIENT|SERVER)_TRAFFIC_SECRET_\d{1,3}|"
       r"EARLY_EXPORTER_SECRET|EXPORTER_SECRET|ECH_SECRET) [0-9a-fA-F]{64} "
       r"(?P<secret>[0-9a-fA-F]{32,256})",
       ("CLIENT_RANDOM", "CLIENT_EARLY_TRAFFIC_SECRET", "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_", "SERVER_TRAFFIC_SECRET_",
        "EARLY_EXPORTER_SECRET", "EXPORTER_SECRET", "ECH_SECRET"),
       "https://datatracker.ietf.org/doc/draft-ietf-tls-keylogfile/",
       "TLS key log (SSLKEYLOGFILE)"),
    # -- generic shapes with a fixed marker -------------------------------------------------
    _F("jwt", r"eyJ[A-Za-z0-9_\-]{8,4096}\.[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{0,4096}",
       ("eyJ",),
       "https://datatracker.ietf.org/doc/html/rfc7519", "JWT"),
    # a PEM private key, base64-encoded once more (kubeconfig client-key-data, k8s Secrets)
    _F("base64-private-key", r"(?:" + "|".join(_B64_PEM) + r")[A-Za-z0-9+/]{20,20000}={0,2}",
       _B64_PEM,
       "https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/",
       "PEM"),
)

KINDS: frozenset[str] = frozenset(f.kind for f in FORMATS)
