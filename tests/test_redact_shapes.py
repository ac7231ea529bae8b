"""Shapes the key/value rules must parse, terminal output, and what must survive."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rage.redact import Redactor
from rage.redact.normalize import normalize

S = "Zq8s3cretValue77"
GH = "ghp_" + "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0Ya2Ue4"


def red(text: str) -> str:
    return Redactor(pseudonymize=False).text(text)


@pytest.mark.parametrize("text", [
    # terminal escapes: colour right before a token, `;` inside `\e[01;31m`, erase-line
    f"\x1b[32m{GH}\x1b[0m", f"\x1b[01;31m\x1b[K{GH}\x1b[m\x1b[K",
    f"password\x1b[01;31m=\x1b[K{S}\x1b[m", f"token=\x1b[1m{S}\x1b[22m rest",
    f"\x1b]0;title\x07API_KEY={S}", f"\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\ token={S}",
    # `\r` redraws and backspace overstrike
    f"progress 10%\rtoken={S}", f"t\bto\bok\bke\ben\bn={S}", f"_\bt_\bo_\bk_\be_\bn={S}",
    f"password: ****\r\x1b[Kpassword: {S}",
    # key names
    f"DB_PASS={S}", f"db_pass: {S}", f"dbPass = '{S}'", f"passphrase={S}", f"wifi_psk={S}",
    f"GITHUB_PAT={S}", f"AccountKey={S}", f"storageAccountKey: {S}", f"primaryMasterKey={S}",
    f"serverKey={S}", f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={S};Endpoint",
    # values holding & ; ,
    f"password={S}&{S}", f"DB_PASSWORD={S};{S}", f"secret={S},{S}",
    f"https://acct.blob.core.windows.net/c?sv=2022-11-02&ss=b&srt=o&sp=r&sig={S}%3D&se=x",
    # structural shapes
    f"<password>{S}</password>", f'<Password encrypted="false">{S}</Password>',
    f'<add key="ClearTextPassword" value="{S}" />', f'<entry name="api_token" value="{S}"/>',
    f"machine example.com login bob password {S}", f"machine h\n  login bob\n  password {S}\n",
    f"ALTER USER app IDENTIFIED BY '{S}';", f"CREATE ROLE app LOGIN PASSWORD '{S}';",
    f"setenv GITHUB_TOKEN {S}", f"set -x API_TOKEN {S}",
    '{"level":"info","msg":"{\\"password\\": \\"' + S + '\\"}"}',
    f"send: b'GET / HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer {S}\\r\\n\\r\\n'",
    f"send: b'POST / HTTP/1.1\\r\\nX-Api-Key: {S}\\r\\nAccept: */*\\r\\n'",
    f'if password == "{S}":', f"'password' => '{S}',", f'$password .= "{S}";',
    f"API_TOKEN ?= {S}", f"TOKEN := {S}", f'os.environ.setdefault("API_TOKEN", "{S}")',
    f'Setenv("GITHUB_TOKEN", "{S}")', f'{{"name": "DB_PASSWORD", "value": "{S}"}}',
    f"-----BEGIN OPENSSH PRIVATE KEY-----\n{S}AAAA\n-----END OPENSSH PRIVATE KEY-----",
])
def test_secret_removed(text: str) -> None:
    out = red(text)
    assert S not in out and GH not in out, out
    assert "[REDACTED:" in out


@pytest.mark.parametrize(("text", "token"), [
    ("2026-12-02T10:15:32Z working...\rsm_pat_zg914eKaIiVaEZr2", "sm_pat_zg914eKaIiVaEZr2"),
    (f"2026-12-02T10:15:32Z still working, please wait a moment...\r{GH}", GH),
])
def test_a_token_a_shorter_redraw_left_glued_to_the_old_line_goes(text: str, token: str) -> None:
    """The terminal shows the token glued to the old line's end (`...Zr2rking...`): a
    format that must not touch a word character never matched it (Hypothesis found it)."""
    out = red(text)
    assert token not in out and token[:12] not in out, out
    assert out.startswith("[REDACTED:"), out


BENIGN = [
    "tests/test_auth.py::test_token_refresh PASSED",
    "auth.c:41:24: error: 'token' undeclared (first use in this function)",
    "jwt.exceptions.ExpiredSignatureError: Signature has expired",
    'WWW-Authenticate: Bearer realm="example"', '"token_type": "Bearer"',
    "password_min_length=12", "--token-file=/path/to/token", "password: ${DB_PASSWORD}",
    "MAX_TOKENS=4096", "AUTH_METHOD=oidc", "SESSION_TIMEOUT=3600",
    "KEY_VAULT_NAME=acme-prod-kv", "PUBLIC_KEY_PATH=/etc/app/signing.pub",
    "The password is incorrect", "password reset requested for bob",
    "Password authentication failed for user \"app\"",
    "token: ${{ secrets.GITHUB_TOKEN }}", "api_key: <your-api-key>", "secret: true",
    "AUTH_ENABLED=false", "signal: SIGTERM", "pattern=^foo$",
    "error[E0425]: cannot find value `token` in this scope",
    "2024-05-01T10:00:00Z INFO request_id=9f8e7d6c session started for user=bob",
    "commit 0123456789abcdef0123456789abcdef01234567",
    "ldap_bind: Invalid credentials (49)", "Signature verified", "Key fingerprint is SHA256:x",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_survives(text: str) -> None:
    assert red(text) == text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["\x1b[32m", "\x1b[0m", "\x1b[01;31m\x1b[K", "\x1b[m\x1b[K",
                                 "\x1b]0;t\x07", "\x1b[2K", "\x1b[?25l"]),
                min_size=0, max_size=3),
       st.integers(min_value=0, max_value=len(GH)), st.sampled_from(["", "x ", "token: "]))
def test_escapes_anywhere_never_hide_a_token(escs: list[str], cut: int, before: str) -> None:
    """Escape sequences spliced anywhere into a token (as a colouring grep or a TUI would)
    never keep it from matching, and never come back into the output."""
    text = before + GH[:cut] + "".join(escs) + GH[cut:] + "\n"
    out = red(text)
    assert GH not in out and "\x1b" not in out
    assert GH not in normalize(out.encode()).decode()


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abc =:\r\b\x1b[m0123456789;", max_size=60))
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text.encode())
    assert normalize(once) == once


@pytest.mark.parametrize("text", [
    f"name,username,password,url\nprod-db,app_user,{S},https://db.example.com\n",
    f"name\tusername\tpassword\nprod-db\tapp_user\t{S}\n",
    f"db.example.com:5432:appdb:app_user:{S}\n", f"*:*:*:postgres:{S}\n",
    f"postgres://app_user:{S}#x@db.example.com:5432/appdb",
    f'{{"args": ["--verbose", "token-ztcqf:{"a" * 54}"]}}',
])
def test_tables_pgpass_and_context_led_formats(text: str) -> None:
    out = red(text)
    assert S not in out and "a" * 54 not in out, out


@pytest.mark.parametrize("text", [
    "    token = self._store.get(session_id)", 'secret_key = os.environ["SECRET_KEY"]',
    "        key: password", "      + password             = (sensitive value)",
    "aws_secretsmanager_secret.db: Creation complete after 1s [id=arn:aws:secretsmanager:"
    "eu-west-1:123456789012:secret:prod/db-AbCdEf]",
    "2026-12-02T10:15:32.118Z INFO  auth: token refreshed for session 7f3a9c2e",
    "cache key: v2-deps-3f9c2a7be41d0c58e6f2a9b7d1c4e8f05a6b3c21",
    "id,token_count,password_min_length\n1,2,3\n",
])
def test_names_and_code_are_not_values(text: str) -> None:
    assert red(text) == text


def test_json_escaped_slashes_in_a_url() -> None:
    """PHP's json_encode and some loggers write `https:\\/\\/...`: the URL is written plainly
    and a webhook's format matches it."""
    hook = "https:\\/\\/hooks.slack.com\\/services\\/T0AB12CD3\\/B0EF45GH6\\/" + S + "abcdefgh"
    out = red('{"webhook": "' + hook + '", "path": "a\\/b"}')
    assert S not in out and "[REDACTED:" in out
    assert '"path": "a\\/b"' in out  # only URLs are rewritten


@pytest.mark.parametrize("text, secret", [
    ("pin: 1234", "1234"),
    ("pat: ghx_abcdef1234567890", "ghx_abcdef1234567890"),  # `pat` is a key here, not a prefix
    ('{"pin": "4321"}', "4321"),
    ("{'sig': 'abcdef012345'}", "abcdef012345"),
    ("  'pat': 'abc123def456'", "abc123def456"),
])
def test_short_secret_words_as_yaml_and_quoted_keys(text: str, secret: str) -> None:
    """`pin`, `pat` and `sig` are whole names here, so their values go; they were left
    before, or taken only by accident where another start landed on the line."""
    out = Redactor(pseudonymize=False).text(text)
    assert secret not in out and "[REDACTED:secret-field]" in out


@pytest.mark.parametrize("text", [
    "spin: 3", "sig: SIGTERM", "received sig: SIGTERM", "pattern: *.py", "pin: true",
    "recipe pin: see docs", "signal: SIGTERM",
    # with blanks before the separator, as `pin = 1234` is taken
    "spin = 3", "compat = 1", "pattern = *.py", "pin the version = 3", "sig = SIGTERM",
    "pinned = true",
])
def test_short_words_in_longer_names_and_signals_are_kept(text: str) -> None:
    assert Redactor(pseudonymize=False).text(text) == text


@pytest.mark.parametrize(("kept", "secret"), [
    ("sig: SIGTERM received, retrying with ", "token=abc123xyz789"),
    ("received sig: SIGTERM; ", "password=hunter22x"),
    ("valeyJhbGciOiJIUzI1NiJ9.sig_abcdef=apiKey while ", "api_key.=abc123xyz789"),
])
def test_a_secret_later_on_the_line_does_not_take_what_comes_before_it(
        kept: str, secret: str) -> None:
    """A secret's trigger makes its line's start a candidate only where its own name can
    begin the line's `key: value`. Before, any trigger did, and the line form then matched
    whatever name led the line if it merely contained `sig`, `pin` or `pat` (words that are
    a key only as a whole name or in `sig=`-like shapes): the evidence before the secret
    (`sig: SIGTERM received`) went with it."""
    out = Redactor(pseudonymize=False).text(kept + secret)
    assert out == kept + secret[:secret.index("=") + 1] + "[REDACTED:secret-field]"


@pytest.mark.parametrize(("text", "secret"), [
    ('password="${DB_PASSWORD:-hunter2x}"', "hunter2x"),
    ("DB_PASSWORD=${DB_PASSWORD:-hunter2x}", "hunter2x"),
    ("password: ${DB_PASSWORD:=hunter2x}", "hunter2x"),
    ("token=${TOKEN-abc123xyz789}", "abc123xyz789"),
    ("api_key=${API_KEY:+abc123xyz789}", "abc123xyz789"),
])
def test_a_placeholder_with_a_default_of_its_own_is_redacted_whole(text: str, secret: str
                                                                    ) -> None:
    """`${NAME:-default}` is used as it is written when NAME is unset: the default is the
    secret. Quoted, it was kept as a placeholder; unquoted, it lost all but its last `}`."""
    out = Redactor(pseudonymize=False).text(text)
    assert secret not in out and "[REDACTED:secret-field]" in out
    assert "}" not in out.replace("[REDACTED:secret-field]", "")


@pytest.mark.parametrize("text", [
    "DB_PASSWORD=${DB_PASSWORD}", "--password=${PW}", "token={{ .Values.token }}",
    "TOKEN=$(cat /run/secrets/token)", "password=${{ secrets.PW }}",
    "password=${DB_PASSWORD:-$FALLBACK_PASSWORD}", "export TOKEN=${TOKEN:?set TOKEN first}",
    'secret = "${SECRET:-}"',
])
def test_placeholders_in_unquoted_values_are_kept_whole(text: str) -> None:
    """A value that is a shell, CI or template placeholder names where the secret comes
    from: evidence, kept byte for byte (an unquoted one used to end at its first `}`)."""
    assert Redactor(pseudonymize=False).text(text) == text


@pytest.mark.parametrize(("text", "secret"), [
    ("pin = 1234", "1234"), ("PIN = 8812", "8812"), ("  pin : 4321", "4321"),
    ("pat = ghx_abcdef1234567890", "ghx_abcdef1234567890"),
    ("Pat\t= abcdef123456xyz", "abcdef123456xyz"), ("[device]\npin  =  0000", "0000"),
])
def test_pin_and_pat_with_blanks_before_the_separator(
        text: str, secret: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pin = 1234` (INI, TOML) as `pin=1234` already was, in both scans alike."""
    for native in ("1", "0"):
        monkeypatch.setenv("RAGE_NATIVE_SCAN", native)  # read when a redactor builds
        out = Redactor(pseudonymize=False).text(text)
        assert secret not in out and "[REDACTED:secret-field]" in out, (native, out)


@pytest.mark.parametrize(("text", "kept"), [
    ('{"token":abc123xyz789,"next":1}', ',"next":1}'),
    ("{api_key: abc123xyz789, 'next': 1}", ", 'next': 1}"),
    ('{"password_changed":false,"mfa":true}', '{"password_changed":false,"mfa":true}'),
])
def test_an_unquoted_value_ends_before_the_next_quoted_field(text: str, kept: str) -> None:
    """`,"mfa":` starts another field: the comma is not part of the value before it (which
    then read `false,`, no boolean, and went with the comma)."""
    out = Redactor(pseudonymize=False).text(text)
    assert out.endswith(kept) and "abc123xyz789" not in out


@pytest.mark.parametrize(("text", "redacted"), [
    ("session=new", False), ("auth=ok", False), ('{"token": "refreshed"}', False),
    ("session=resumed", False), ("token=abc123xyz789", True), ("password=letmein", True),
    ("secret=hunter", True), ("api_token=refreshed", True), ("session=Abcdefghij", True),
])
def test_a_state_word_under_a_generic_secret_word(text: str, redacted: bool) -> None:
    """A generic word as the whole name (`session`, `auth`, `token`, `key`) with a short
    lower-case word as its value says what happened: no token is a dictionary word. A
    password can be one, and a longer name (`api_token`) names the thing itself."""
    out = Redactor(pseudonymize=False).text(text)
    assert ("[REDACTED:secret-field]" in out) == redacted, out


@pytest.mark.parametrize(("text", "redacted"), [
    ("botocore.credentials: Found credentials in environment variables.", False),
    ("google.auth._default: No project ID could be determined from the credentials.", False),
    ("spring.datasource.password: hunter2x", True),
    ("spring.datasource.password: correct horse battery staple", True),
    ("Password: This is my secret phrase.", True),
    ("app.token: Abc def ghi jkl", True),
])
def test_a_loggers_sentence_is_no_value(text: str, redacted: bool) -> None:
    """Python's logging prints `name: message`; a dotted module name that holds a secret
    word (`botocore.credentials`) before a sentence (a capital, four words or more, a full
    stop) is a log line, not a value. A property key before a passphrase is not."""
    out = Redactor(pseudonymize=False).text(text)
    assert ("[REDACTED:secret-field]" in out) == redacted, out


@pytest.mark.parametrize("text", [
    "api_key=$(echo ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa)",
    'token={{ "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }}',
    "token=${X:?ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}",
])
def test_a_provider_format_inside_a_placeholder_still_goes(text: str) -> None:
    """A kept placeholder is kept as text, not skipped: a token's format inside it is
    still found."""
    out = Redactor(pseudonymize=False).text(text)
    assert "ghp_" not in out and "[REDACTED:github-token]" in out


@pytest.mark.parametrize(("text", "kept"), [
    (f"Authorization: Bearer {S} request_id=42", " request_id=42"),
    (f"INFO sending Authorization: Bearer {S} (expires in 3600 s)", " (expires in 3600 s)"),
    (f"> Authorization: token {S}  retry=2", "  retry=2"),
    (f"proxy: Proxy-Authorization: Basic {S} via squid", " via squid"),
    (f"curl -H 'Authorization: Bearer {S}' https://x/y n=42", "' https://x/y n=42"),
    # not at the start of the line: these leaked whole (the scheme read as a word of prose)
    (f"DEBUG header Authorization: Basic {S}", ""),
    (f"x Authorization: token {S} retry=2", " retry=2"),
    (f"requests: Authorization: Negotiate {S}", ""),
])
def test_a_token_schemes_credential_is_one_word(text: str, kept: str) -> None:
    """Bearer, Basic, token...: the credential is one token68 word (RFC 9110 11.4), so what
    follows it on a log line is the log's, not the header's; Digest's parameters still go
    with it (see test_secret_removed)."""
    out = red(text)
    assert S not in out
    assert out.endswith(kept) and "[REDACTED:auth-header]" in out, out


def test_digest_and_aws_credentials_keep_their_parameters_redacted() -> None:
    out = red(f'Authorization: Digest username="bob", realm="api", response="{S}"')
    assert S not in out and "bob" not in out
    out = red(f"Authorization: AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/2026/s3, Signature={S}")
    assert S not in out


@pytest.mark.parametrize(("text", "kept"), [
    ("db_password=n3cl0;RO4h=;tz0RE%", ""),
    ("DB_PASSWORD=n3cl0;RO4h=;tz0RE% ./migrate.sh", " ./migrate.sh"),
    ("password=n3cl0;RO4h=&tz0RE%;a=1", ";a=1"),
])
def test_a_value_holding_a_separator_then_an_empty_field_goes_whole(text: str,
                                                                   kept: str) -> None:
    """`RO4h=` then `;` is no field of its own (a field has a value): the `;` and what
    follows are the password's. Before, the value stopped at the first `;`."""
    out = Redactor(pseudonymize=False).text(text)
    assert out == text.split("=", 1)[0] + "=[REDACTED:secret-field]" + kept
