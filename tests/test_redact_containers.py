"""Values that are containers, and values that only look like secrets.

A list or tuple under a secret name kept every element: the value was taken to be its
opening bracket (``'auth': ('alice', 'x')`` in ``vars(requests.Session())``, Django's
``<QueryDict: {'password': ['x']}>``, a shell array ``CREDS=([db]="x")``). And ordinary text
was damaged: every ``"client_key": null,`` of pretty-printed JSON (the comma taken into the
value), a password another tool had already masked (``https://bob:****@host``), Django's
``SESSION_ENGINE``, MongoDB's ``authsource='admin'``, a file's name (``-key k.pem``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"


@pytest.mark.parametrize(("text", "want"), [
    (f"{{'auth': ('alice', '{S}'), 'verify': True}}",
     f"{{'auth': ('{R}', '{R}'), 'verify': True}}"),
    (f"<QueryDict: {{'username': ['bob'], 'password': ['{S}']}}>",
     f"<QueryDict: {{'username': ['bob'], 'password': ['{R}']}}>"),
    (f'    r = requests.get(url, auth=("alice", "{S}"))',
     f'    r = requests.get(url, auth=("{R}", "{R}"))'),
    (f'declare -A CREDS=([db]="{S}" [api]="{S}2" )', f'declare -A CREDS=([db]="{R}" [api]="{R}" )'),
    (f"recovery_codes: [{S}, {S}2]", f"recovery_codes: [{R}, {R}]"),
    (f'"credentials": [{{"user": "app", "password": "{S}"}}, "{S}2"]',
     f'"credentials": [{{"user": "app", "password": "{R}"}}, "{R}"]'),
])
def test_the_strings_of_a_container_under_a_secret_name_go(text: str, want: str) -> None:
    out, counts = red_both(text)
    assert out == want
    assert set(counts) == {"secret-field"}


@pytest.mark.parametrize("text", [
    "    session.auth = (user, password)",  # names in code, not values
    "    secrets: [db_password, api-key]",  # compose's names of its secrets
    "AUTH_PASSWORD_VALIDATORS = [{'NAME': 'django.contrib.auth.password_validation.X'}]",
    "preferred_auths = ['CRAM-MD5', 'PLAIN', 'LOGIN']",
    "tokens = (None, 42, True)",
    "password: []",
    '{\n  "client_key": null,\n  "force_basic_auth": true,\n  "cookies": {},\n  "api_key": 42,'
    '\n  "password": [],\n  "secret": false\n}',
    " 'SESSION_COOKIE_PARTITIONED': False,\n 'SESSION_ENGINE': "
    "'django.contrib.sessions.backends.db',\n 'SESSION_CACHE_ALIAS': 'default',",
    "Looking in indexes: https://bob:****@pypi.example.com/simple",
    "broker: amqp://alice:**@localhost:5672//",
    "URL('https://alice:[secure]@example.com')",
    "client = MongoClient(host=['db:27017'], authsource='admin', authmechanism='SCRAM-SHA-256')",
    "mongosh --authenticationDatabase admin",
    "2026-12-03 INFO run.session] ====================",
    "headers={'Authorization': ...} instead",
    "openvpn --config x.ovpn --auth-user-pass creds.txt",
    "certbot certonly --dns-cloudflare-credentials cloudflare.ini",
    "mm_answer_authserv: service=ssh-connection",
    "password_encryption=scram-sha-256",
    "key_mgmt=WPA-PSK",
    "ftp> AUTH TLS",
    "---> AUTH LOGIN",
])
def test_what_only_looks_like_a_secret_stays(text: str) -> None:
    assert red(text) == (text, {})


def test_a_real_session_and_pretty_json(tmp_path: Path) -> None:
    """requests' Session with basic auth, printed as its vars; a JSON config pretty-printed
    by json.tool, whose nulls and booleans under secret names are evidence."""
    code = ("import sys, requests, urllib.parse\n"
            "s = requests.Session()\n"
            "s.auth = ('deploy', sys.argv[1])\n"
            "print({k: v for k, v in vars(s).items() if k in ('auth', 'verify')})\n"
            "print(urllib.parse.parse_qs('user=deploy&password=' + sys.argv[2]))\n")
    pw = tmp_path / "pw"
    pw.write_text(S)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"client_key": None, "force_basic_auth": True, "cookies": {},
                               "api_key": 42, "name": "app"}))
    tool = f"{sys.executable} -c \"{code}\" \"$(cat {pw})\" \"$(cat {pw})2\"; " \
           f"{sys.executable} -m json.tool {cfg}"
    proc = run_rage("run", "--app", "sess", "--", "bash", "-c", tool)
    assert proc.returncode == 0, proc.stderr
    assert f"'auth': ('deploy', '{S}')" in proc.stdout
    assert f"'password': ['{S}2']" in proc.stdout
    raw = reported("sess", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"'auth': ('{R}', '{R}')".encode() in raw
    assert f"'password': ['{R}']".encode() in raw
    pretty = subprocess.run([sys.executable, "-m", "json.tool", str(cfg)], capture_output=True,
                            check=True).stdout
    assert pretty in raw  # every line of it, byte for byte


@pytest.mark.parametrize("line", [
    f"PHPSESSID={S}", f"SOME_CRED={S}", "otp=482913", f"OTP_SEED={S}", f"TOTP_SEED={S}",
    f"otp = {S}",
])
def test_names_the_leak_hunt_found(line: str) -> None:
    """PHP's session cookie, a credential's short name, one-time codes and their seeds:
    each kept its value on the code before."""
    out, counts = red_both(line)
    assert out.endswith(R) and counts == {"secret-field": 1}, out


@pytest.mark.parametrize("line", ["credit=5", "record_count=3", "accredited=yes"])
def test_words_that_hold_the_new_names_stay(line: str) -> None:
    assert red(line) == (line, {})
