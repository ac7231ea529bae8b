"""Credentials in code and in bare HTTP Basic form.

- A password passed by position: a traceback prints the failing line of source,
  ``requests.get(url, auth=HTTPBasicAuth('deploy', 'x'))``, ``server.login("me@x.com", "x")``
  (the classic SMTP authentication error), ``ftplib.FTP(host, "alice", "x")``,
  ``user.set_password("x")``. No key/value shape holds the literal; each kept it.
- ``Basic <base64 of user:password>`` without a header name (httpx's ``_auth_header``,
  nginx's ``proxy_set_header Authorization "Basic X";``): only ``Bearer`` had a bare form.
- PostgreSQL's SCRAM verifiers, as ``pg_authid`` prints them: a password's hash.
- loguru's default traceback (``diagnose=True``) and better_exceptions print each value
  under the name it is the value of (``│   └ 'x'``): a password in a variable kept it.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest

from rage.redact import Redactor
from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported
from tests.services import free_port

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"
B = base64.b64encode(f"deploy:{S}".encode()).decode()


@pytest.mark.parametrize(("text", "want"), [
    (f'    server.login("me@example.com", "{S}")', f'    server.login("me@example.com", "{R}")'),
    (f'    ftp = ftplib.FTP("ftp.example.com", "alice", "{S}")',
     f'    ftp = ftplib.FTP("ftp.example.com", "alice", "{R}")'),
    (f'    auth = aiohttp.BasicAuth("alice", "{S}")',
     f'    auth = aiohttp.BasicAuth("alice", "{R}")'),
    (f"    r = requests.get(url, auth=HTTPBasicAuth('alice', '{S}'))",
     f"    r = requests.get(url, auth=HTTPBasicAuth('alice', '{R}'))"),
    (f'    user.set_password("{S}")', f'    user.set_password("{R}")'),
    (f'    keyring.set_password("svc", "alice", "{S}")',
     f'    keyring.set_password("svc", "alice", "{R}")'),
    (f"{{'_auth_header': 'Basic {B}'}}", "{'_auth_header': 'Basic [REDACTED:auth-header]'}"),
    (f'proxy_set_header Authorization "Basic {B}";',
     'proxy_set_header Authorization "Basic [REDACTED:auth-header]";'),
    (" rolpassword | SCRAM-SHA-256$4096:c2FsdHNhbHRzYWx0$dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVz"
     "dA==:c2VydmVyc2VydmVyc2VydmVyc2VydmVyc2Vy", " rolpassword | [REDACTED:password-hash]"),
])
def test_a_credential_in_code_or_bare_goes(text: str, want: str) -> None:
    out, _counts = red_both(text)
    assert out == want


LOGURU = ('    connect("db.example.com", "alice", db_password)\n'
          f"    │                                  └ '{S}'\n"
          "    └ <function connect at 0x7fa6737b84a0>\n")


def test_a_value_under_its_secret_name_in_a_traceback_goes() -> None:
    out, counts = red_both(LOGURU)
    assert out == LOGURU.replace(S, R)
    assert counts == {"secret-field": 1}
    other = LOGURU.replace("db_password", "db_hostname")
    assert red(other) == (other, {})


WEBHOOK = "a1B2c3D4e5" * 6 + "f6G7h8"  # 66 characters, as Discord's tokens are


@pytest.mark.parametrize(("text", "want"), [
    ('DEBUG https://hooks.slack.com:443 "POST /services/T0ABCDEF12/B0ABCDEF34/'
     'abcdefghijklmnopqrstuvwx HTTP/1.1" 200 2',
     'DEBUG https://hooks.slack.com:443 "POST [REDACTED:slack-webhook] HTTP/1.1" 200 2'),
    (f'DEBUG https://discord.com:443 "POST /api/webhooks/123456789012345678/{WEBHOOK} HTTP/1.1"',
     'DEBUG https://discord.com:443 "POST /api/webhooks/123456789012345678/'
     '[REDACTED:discord-webhook] HTTP/1.1"'),
])
def test_a_webhook_path_apart_from_its_host(text: str, want: str) -> None:
    """urllib3's debug log prints the host, then the request's path: a webhook's secret
    is in the path alone."""
    out, _counts = red_both(text)
    assert out == want


@pytest.mark.parametrize("text", [
    "GET /api/webhooks/ HTTP/1.1",
    "POST /services/Team/Billing ok",
    "    server.login(user, password)",  # names, not literals
    '    relogin("a", "b")',
    '    smtp.login("me@example.com", password=pw)',
    "basic authentication is supported",
    "Basic usage: rage run -- CMD",
    "the Basic QUJDREVGR0g= block",  # base64, but of no user:password
])
def test_what_is_no_credential_stays(text: str) -> None:
    assert red(text) == (text, {})


def test_a_real_traceback_of_a_request_with_basic_auth(tmp_path: Path) -> None:
    """requests to a closed port: the traceback's source line holds the password."""
    tool = tmp_path / "fetch.py"
    tool.write_text("import requests\nfrom requests.auth import HTTPBasicAuth\n\n\n"
                    "def fetch(url):\n"
                    f"    return requests.get(url, auth=HTTPBasicAuth('deploy', '{S}'), timeout=5)"
                    "\n\n\nfetch('http://127.0.0.1:%d/' % int(__import__('sys').argv[1]))\n")
    proc = run_rage("run", "--app", "fetch", "--", sys.executable, str(tool), str(free_port()))
    assert proc.returncode == 1
    assert f"HTTPBasicAuth('deploy', '{S}')" in proc.stderr  # the traceback the user saw
    raw = reported("fetch", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"HTTPBasicAuth('deploy', '{R}')".encode() in raw


LOGURU_APP = """
import sys
from loguru import logger

logger.remove()
logger.add(sys.stderr, colorize=False, backtrace=True, diagnose=True)


def connect(host, user, password):
    raise ConnectionError("refused")


@logger.catch
def main():
    db_password = open(sys.argv[1]).read()
    connect("db.example.com", "alice", db_password)


main()
"""


def test_a_real_loguru_traceback(tmp_path: Path) -> None:
    pytest.importorskip("loguru")
    app = tmp_path / "app.py"
    app.write_text(LOGURU_APP)
    pw = tmp_path / "pw"
    pw.write_text(S)
    proc = run_rage("run", "--app", "lg", "--", sys.executable, str(app), str(pw))
    assert f"\u2514 '{S}'" in proc.stderr, proc.stderr  # what the user saw
    raw = reported("lg", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"\u2514 '{R}'".encode() in raw


LITERAL = "Xq7vR2mLp9Zt"


@pytest.mark.parametrize("line", [
    'if (db_pass !== "{}") {{',  # JavaScript's strict comparison
    'if ("{}" == my_super_password) {{',  # the literal first
    "    if '{}' != api_token:",
    'password = @"{}";',  # Objective-C
    'std::string secret("{}");',  # C++
    'QString password("{}");',
    'password_super_secure = "{}"',  # `secure` describes a cookie, not a password
    '    if db_pass != "{}":',
])
def test_a_literal_in_source_code_goes(line: str) -> None:
    """Source lines as tracebacks and logs print them: a literal assigned to, compared with
    or constructed as a secret name. Each was kept before."""
    text = line.format(LITERAL)
    out = Redactor(pseudonymize=False).text(text)
    assert LITERAL not in out and "[REDACTED:secret-field]" in out, out


@pytest.mark.parametrize("line", [
    "    if token != expected:", "    if password == confirm_password:",
    "    assert session != None", "  if (token !== undefined) {", '    if key != "":',
    "    if ('Bearer' == auth_scheme) {", '    if name == "token":', "    std::string secret(buf);",
    '    if "token" in data and data["token"] != None:', "    while (token != NULL) {",
])
def test_code_comparing_names_stays(line: str) -> None:
    assert Redactor(pseudonymize=False).text(line) == line
