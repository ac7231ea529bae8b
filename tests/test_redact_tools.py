"""Secrets as particular tools print them, found by trying each tool's real output shape:
GitHub Actions' ``::add-mask::``, ODBC connection strings (``Pwd=``, which the shell's
``PWD`` hid), ``vault kv get`` tables, ``openssl ... -text`` dumps of private keys, Redis
``AUTH`` (redis-cli and MONITOR), Oracle's ``user/password@db``. Each case leaked whole on
the code before; what each tool prints around the secret stays.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from collectors.environment import describe_environment
from rage.redact import Redactor
from tests.redact_helpers import red

S = "Zq8s3cretValue77xY"
HEX = ("    6f:3a:9c:11:de:ad:be:ef:01:23:45:67:89:ab:cd:ef:\n"
       "    10:20:30:40:50:60:70:80:90:a0:b0:c0:d0:e0:f0:11")
HEX_PIECES = ("de:ad:be:ef", "90:a0:b0:c0")


def goes(text: str, kept: str) -> None:
    """The secret goes, counted, and ``kept`` (what the tool prints around it) stays."""
    out, counts = red(text)
    assert S not in out, out
    assert kept in out, out
    assert sum(counts.values()) >= 1


def stays(text: str) -> None:
    """Nothing in ``text`` is a secret: it is kept byte for byte, nothing counted."""
    assert red(text) == (text, {})


@pytest.mark.parametrize(("text", "kept"), [
    (f"::add-mask::{S}", "::add-mask::"),
    (f"+ echo '::add-mask::{S}'", "+ echo '::add-mask::"),
    (f'echo "::add-mask::{S}" >> "$GITHUB_OUTPUT"', '" >> "$GITHUB_OUTPUT"'),
    (f"Driver={{ODBC Driver 18 for SQL Server}};Server=db;Uid=app;Pwd={S};Encrypt=yes",
     ";Encrypt=yes"),
    (f"PWD={S};", "PWD="),
    (f"127.0.0.1:6379> AUTH {S}", "127.0.0.1:6379> AUTH "),
    (f"127.0.0.1:6379> AUTH default {S}", "AUTH default "),
    (f'1733130000.123456 [0 127.0.0.1:53312] "AUTH" "{S}"', '"AUTH" "'),
    (f'1733130000.123456 [0 127.0.0.1:53312] "auth" "app" "{S}"', '"auth" "app" "'),
    (f"SQL> CONNECT app/{S}@orcl", "CONNECT app/"),
    (f"$ sqlplus app/{S}@//db.example.com:1521/orcl @run.sql", "@//db.example.com:1521/orcl"),
    # PHP's var_dump: the value on the line after the name (an object's private member too)
    (f'array(2) {{\n  ["user"]=>\n  string(3) "app"\n  ["password"]=>\n  string(18) "{S}"\n}}',
     '["user"]=>\n  string(3) "app"\n  ["password"]=>\n  string(18) "[REDACTED:secret-field]"'),
    (f'object(Config)#1 (1) {{\n  ["apiKey":"Config":private]=>\n  string(18) "{S}"\n}}',
     '["apiKey":"Config":private]=>\n  string(18) "[REDACTED:secret-field]"'),
    ('array(1) {\n  ["pin"]=>\n  int(4711)\n}', '["pin"]=>\n  int([REDACTED:secret-field])'),
    # Redis ACL, rabbitmqctl's second operand, every operand of `openssl passwd`
    (f"127.0.0.1:6379> ACL SETUSER alice on >{S} ~* +@all", "ACL SETUSER alice on >"),
    (f"+ rabbitmqctl add_user alice {S}", "+ rabbitmqctl add_user alice "),
    (f"+ openssl passwd -6 {S}", "+ openssl passwd -6 "),
    # expect(1): the answer sent to a password prompt, on the next line or the same
    (f'spawn ssh deploy@host\nexpect "Password:"\nsend "{S}\\r"\nexpect "$ "',
     'expect "Password:"\nsend "[REDACTED:secret-field]\\r"\nexpect "$ "'),
    (f'expect -re "(P|p)assword: " {{ send "{S}\\r" }}', '{ send "[REDACTED:secret-field]\\r" }'),
    # pulumi stack output --show-secrets: an indented OUTPUT / VALUE table
    (f"Current stack outputs (2):\n    OUTPUT      VALUE\n    dbPassword  {S}\n"
     "    url         https://app.example.com", "    url         https://app.example.com"),
    # Apache HttpClient's wire log: the header's written-out line end stays
    (f'DEBUG wire:73 - http-outgoing-0 >> "Authorization: Bearer {S}[\\r][\\n]"',
     '>> "Authorization: Bearer [REDACTED:auth-header][\\r][\\n]"'),
])
def test_a_tools_secret_goes_and_its_context_stays(text: str, kept: str) -> None:
    goes(text, kept)


def test_vault_kv_get_table() -> None:
    text = ("====== Secret Path ======\nsecret/data/app\n\n"
            "======= Metadata =======\nKey                Value\n---                -----\n"
            "created_time       2026-12-02T10:00:00.000000Z\nversion            3\n\n"
            "====== Data ======\nKey         Value\n---         -----\n"
            f"api_token   {S}A\npassword    {S}\nusername    app\n")
    out, _ = red(text)
    assert S not in out
    assert "username    app" in out and "version            3" in out
    assert "created_time       2026-12-02T10:00:00.000000Z" in out


@pytest.mark.parametrize("text", [
    "Private-Key: (256 bit)\npriv:\n" + HEX + "\npub:\n    04:aa:bb\nASN1 OID: prime256v1",
    "Private-Key: (2048 bit, 2 primes)\nmodulus:\n    00:c4:11\npublicExponent: 65537 (0x10001)"
    "\nprivateExponent:\n" + HEX + "\nprime1:\n" + HEX + "\nprime2:\n" + HEX +
    "\nexponent1:\n" + HEX + "\nexponent2:\n" + HEX + "\ncoefficient:\n" + HEX,
    "ED25519 Private-Key:\npriv:\n" + HEX + "\npub:\n    aa:bb:cc",
])
def test_openssl_text_dump_of_a_private_key(text: str) -> None:
    out, counts = red(text)
    assert not any(p in out for p in HEX_PIECES), out
    first = text.split("\n", maxsplit=1)[0]
    assert out.split("\n", maxsplit=1)[0] == first  # `Private-Key: (256 bit)` stays
    assert out.count("\n") == text.count("\n")
    assert "pub:" in out or "publicExponent: 65537 (0x10001)" in out
    assert counts.get("private-key", 0) >= 1


def test_a_real_openssl_dump_goes_through_rage_redact() -> None:
    """`openssl genpkey` then `openssl pkey -text -noout`, the real program's output."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key = subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                          "ec_paramgen_curve:P-256"], capture_output=True, check=True).stdout
    dump = subprocess.run(["openssl", "pkey", "-text", "-noout"], input=key,
                          capture_output=True, check=True).stdout
    lines = dump.decode().splitlines()
    priv = lines[lines.index("priv:") + 1].strip().rstrip(":")
    out = subprocess.run([sys.executable, "-m", "rage", "redact", "-"], input=dump,
                         capture_output=True, check=True).stdout.decode()
    assert priv not in out and "pub:" in out and "NIST CURVE: P-256" in out


@pytest.mark.parametrize("text", [
    "PWD=/home/alice/proj", "OLDPWD=/tmp", "cd $PWD", "PWD=/Users/alice/My Projects/app",
    "Key         Value", "AUTH_METHOD=oidc", "authentication succeeded for app",
    "SQL> SELECT owner/2 FROM t;", "Private-Key: (256 bit)",
    'array(2) {\n  ["user"]=>\n  string(3) "app"\n  ["token_type"]=>\n  string(6) "Bearer"\n}',
    'object(Config)#1 (1) {\n  ["password"]=>\n  NULL\n}',
    "127.0.0.1:6379> ACL SETUSER bob on nopass ~* +@all", "+ rabbitmqctl list_users",
    "+ rabbitmqctl add_vhost prod",
    'expect "$ "\nsend "uptime\\r"', 'expect "password:"\nsend "$env(PW)\\r"',
    "We expect the password to rotate.",
    "Key                  Value\n---                  -----\ntoken_accessor       abcdEFGH1234",
])
def test_what_those_tools_print_around_them_stays(text: str) -> None:
    stays(text)


def test_the_shells_working_directory_stays_in_the_environment() -> None:
    env = {"PWD": "/Users/alice/My Projects/app", "OLDPWD": "/tmp", "DB_PWD": S}
    described = describe_environment(env)["variables"]
    assert described["PWD"] == env["PWD"] and described["OLDPWD"] == "/tmp"
    assert S not in str(described)
    assert Redactor(pseudonymize=False).data(dict(os.environ, PWD="/tmp/My Dir"))["PWD"] == \
        "/tmp/My Dir"


@pytest.mark.parametrize("argv", [
    ["sqlplus", f"app/{S}@orcl", "@run.sql"],
    ["sqlplus", "-S", f"app/{S}@//db:1521/orcl"],
    ["expdp", f"system/{S}", "schemas=app"],
    ["redis-cli", "--pass", S],
])
def test_argv_forms(argv: list[str]) -> None:
    out = Redactor(pseudonymize=False).argv(argv)
    assert not any(S in a for a in out), out
    assert out[0] == argv[0]


def _tf_outputs() -> dict[str, dict[str, object]]:
    return {"db_password": {"sensitive": True, "type": "string", "value": S},
            "pin": {"sensitive": True, "type": "number", "value": 48291305},
            "tags": {"sensitive": True, "type": ["map", "string"], "value": {"team": "core"}},
            "region": {"sensitive": False, "type": "string", "value": "eu-west-1"}}


@pytest.mark.parametrize("indent", [None, 2])
def test_terraform_output_json_sensitive_values(indent: int | None) -> None:
    """`terraform output -json`: a sensitive output's value goes whatever its name; the
    others stay, and nothing of the JSON's shape is lost (`"db_password": {` kept whole)."""
    import json

    text = json.dumps(_tf_outputs(), indent=indent)
    out, counts = red(text)
    assert S not in out and "48291305" not in out
    kept = json.dumps(_tf_outputs()["region"], indent=indent).replace("\n", "\n  ")
    assert kept in out or kept.replace("\n  ", "\n") in out
    assert '"value": {"team": "core"}' in out or '"team": "core"' in out
    assert out.replace('"[REDACTED:secret-field]"', f'"{S}"').replace(
        "[REDACTED:secret-field]", "48291305") == text  # nothing else changed
    assert counts.get("secret-field") == 2


@pytest.mark.parametrize(("text", "kept"), [
    (f'$pw = ConvertTo-SecureString "{S}" -AsPlainText -Force', " -AsPlainText -Force"),
    # a secret name's assignment before the cmdlet took the cmdlet for the value, and kept x
    (f'$password = ConvertTo-SecureString "{S}" -AsPlainText -Force', " -AsPlainText -Force"),
    (f'$SecurePassword = ConvertTo-SecureString -String "{S}" -AsPlainText -Force',
     "$SecurePassword = ConvertTo-SecureString -String \""),
    # `pw` with blanks before its separator: a traceback's source line, an INI file
    (f'    pw = "{S}"', '    pw = "'),
    (f"PW = {S}", "PW = "),
    (f"secret_key: {S}", "secret_key: "),  # a key that starts like a Notion token
    (f"secret_key_base: {S}", "secret_key_base: "),
    (f'{{"secret_key": "{S}", "debug": false}}', '"debug": false}'),
])
def test_more_shapes(text: str, kept: str) -> None:
    goes(text, kept)


@pytest.mark.parametrize(("text", "kept"), [
    # SQL as databases log it: the password's column in a row, MySQL's own statements
    (f"INSERT INTO users (email, password, active) VALUES ('bob@example.com', '{S}', 1);",
     "VALUES ('bob@example.com', '"),
    (f'insert into "users" ("email", "api_token") values (\'a@b.c\', \'{S}\'), (\'c@d.e\', '
     f"'{S}x')", 'insert into "users" ("email", "api_token") values'),
    (f"SET PASSWORD FOR 'app'@'%' = '{S}';", "SET PASSWORD FOR 'app'@'%' = '"),
    (f"ALTER USER 'app'@'%' IDENTIFIED WITH caching_sha2_password BY '{S}';",
     "IDENTIFIED WITH caching_sha2_password BY '"),
    # Redis and HAProxy configuration, and Redis's CONFIG SET
    (f"requirepass {S}", "requirepass "),
    (f"masterauth {S}", "masterauth "),
    (f"127.0.0.1:6379> CONFIG SET requirepass {S}", "CONFIG SET requirepass "),
    (f"    user admin insecure-password {S}", "user admin insecure-password "),
    # LDIF: a value in base64 after `::`
    (f"userPassword:: e1NTSEF9{S}", "userPassword:: "),
])
def test_databases_and_servers(text: str, kept: str) -> None:
    goes(text, kept)


@pytest.mark.parametrize("text", [
    "INSERT INTO users (email, active) VALUES ('bob@example.com', 1);",
    "INSERT INTO events (kind, password_changed) VALUES ('login', true);",
    "mysql: [Warning] Using a password on the command line interface can be insecure.",
    "# requirepass foobared",
    "dn:: Y249YWRtaW4sZGM9ZXhhbXBsZSxkYz1jb20=",
])
def test_what_databases_print_without_a_secret_stays(text: str) -> None:
    stays(text)


@pytest.mark.parametrize(("text", "kept"), [
    (f"GET /login?next=%2Fapp%3Fpassword%3D{S} HTTP/1.1", " HTTP/1.1"),
    (f"redirect_uri=https%3A%2F%2Fa.example%2Fcb%3Faccess_token%3D{S}%26state%3D1",
     "%26state%3D1"),
    (f'"url": "https://x.example/cb?next=%2Fa%3Fapi_key%3d{S}"', '"'),
])
def test_a_url_encoded_separator(text: str, kept: str) -> None:
    """A query string inside another one (a redirect, an OAuth callback) writes `=` as
    `%3D` and `&` as `%26`: the value goes, up to the next encoded field."""
    out, _ = red(text)
    assert S not in out and out.endswith(kept), out


@pytest.mark.parametrize("text", [
    "GET /search?q=token%3Dexpired%26page%3D2 HTTP/1.1",
    "next=%2Fsettings%3Ftab%3Dpassword",
])
def test_url_encoded_fields_without_a_secret_stay(text: str) -> None:
    stays(text)


@pytest.mark.parametrize("text", [
    # source lines a Python traceback shows (found in the stdlib's smtplib, netrc, urllib)
    "    userid = passwd = acct = ''",
    "        auth = 'Basic ' + base64.b64encode(raw.encode()).decode('ascii')",
    '  File "/usr/lib/python3.11/netrc.py", line 80, in _parse\n'
    "    login = account = password = ''",
])
def test_code_in_a_traceback_stays(text: str) -> None:
    stays(text)


def test_a_value_next_to_code_still_goes() -> None:
    out, _ = red(f"password = {S}\nDB_PASSWORD={S}==\nauth = 'Basic {S}'")
    assert S not in out


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_json_escaped_once_or_more_keeps_its_shape(depth: int) -> None:
    """A log inside a log: JSON in a JSON string, itself in one... The secret goes at every
    depth, and every level still parses (the escaped quotes around the value stay)."""
    import json

    doc: object = {"password": S, "user": "bob"}
    for _ in range(depth):
        doc = {"msg": json.dumps(doc)}
    text = json.dumps(doc)
    out, counts = red(text)
    assert S not in out and counts == {"secret-field": 1}
    inner: object = json.loads(out)
    for _ in range(depth):
        assert isinstance(inner, dict)
        inner = json.loads(inner["msg"])
    assert inner == {"password": "[REDACTED:secret-field]", "user": "bob"}


def test_azure_storage_account_keys_list() -> None:
    """`az storage account keys list`: each key's `value`, next to its `keyName` (an older
    key has no marker of its own: 88 characters of base64, like a sha512 digest)."""
    import json

    keys = [{"creationTime": "2026-01-01T00:00:00Z", "keyName": f"key{i}", "permissions": "FULL",
             "value": (S * 5)[:86 - i] + "AB"[:i] + "=="} for i in (1, 2)]
    for text in (json.dumps(keys, indent=2), json.dumps(keys)):
        out, counts = red(text)
        assert S not in out and counts == {"secret-field": 2}
        assert '"keyName": "key1"' in out and '"permissions": "FULL"' in out


@pytest.mark.parametrize("argv", [
    ["gh", "secret", "set", "API_TOKEN", "--body", S],
    ["gh", "secret", "set", "API_TOKEN", "-b", S, "--repo", "acme/app"],
    ["gh", "secret", "set", "API_TOKEN", f"--body={S}"],
])
def test_gh_secret_set(argv: list[str]) -> None:
    out = Redactor(pseudonymize=False).argv(argv)
    assert not any(S in a for a in out) and out[:4] == argv[:4]
    printed, _ = red("+ " + " ".join(argv) + "\n")  # and printed in a log
    assert S not in printed


def test_gh_variable_set_stays() -> None:
    argv = ["gh", "variable", "set", "REGION", "--body", "eu-west-1"]
    assert Redactor(pseudonymize=False).argv(argv) == argv


def test_several_sensitive_outputs_on_one_line() -> None:
    """`terraform output -json | jq -c .`: a replaced value moves what follows it; every
    sensitive value on the line goes (the second leaked when the first was long)."""
    import json

    outputs = {f"o{i}": {"sensitive": True, "type": "string", "value": f"{S}{i}" * (4 - i)}
               for i in range(3)}
    out, counts = red(json.dumps(outputs))
    assert S not in out and counts == {"secret-field": 3}


@pytest.mark.parametrize(("text", "kept"), [
    # Bundler: BUNDLE_<HOST>=user:password (a gem server's credentials, host in the name)
    (f"BUNDLE_GEMS__CONTRIBSYS__COM=user:{S}", "BUNDLE_GEMS__CONTRIBSYS__COM=user:"),
    (f"export BUNDLE_ENTERPRISE__EXAMPLE__COM='ci:{S}'", "BUNDLE_ENTERPRISE__EXAMPLE__COM='ci:"),
    # dotnet nuget add source ... -p X
    (f"+ dotnet nuget add source https://x/index.json -n x -u bob -p {S} --store-password-in-"
     "clear-text", "-u bob -p "),
    # Composer's auth.json and COMPOSER_AUTH: a host's token under bearer, gitlab-token...
    (f'{{"bearer": {{"repo.example.com": "{S}"}}}}', '{"bearer": {"repo.example.com": "'),
    (f'{{\n    "gitlab-token": {{\n        "gitlab.example.com": "{S}"\n    }}\n}}',
     '"gitlab.example.com": "'),
])
def test_package_managers(text: str, kept: str) -> None:
    goes(text, kept)


@pytest.mark.parametrize("text", [
    "BUNDLE_PATH=vendor/bundle", "BUNDLE_WITHOUT=development:test",
    '{"bearer": {"type": "jwt"}}', '{"require": {"php": "^8.2", "monolog/monolog": "^3.0"}}',
])
def test_package_managers_settings_stay(text: str) -> None:
    stays(text)


def test_a_secret_before_an_equals_sign_is_no_chained_assignment() -> None:
    """Found by the stream property test: `password=A000000000000000 =` kept its value
    when a chained assignment's next name (`a = b = ''`) could be any identifier."""
    out, _ = red(f" password={S} =")
    assert S not in out
