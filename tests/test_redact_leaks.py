"""Secrets no name is bound to (issue 34, part 2): a random token near a secret word in prose
and in source code, after a password-like option whatever the program, in a name/value row,
printed bare under the command that names it, and formats cut or missed. Each class through
both scans (which must agree), then the real `rage redact` on a file and through a pipe; and
the benign lines around each class kept byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rage.redact import Redactor
from rage.redact.nearby import random_token
from tests.conftest import rage_cmd
from tests.redact_helpers import red_both

# (text, what must be gone); each value made up for the test
PROSE = [
    ("INFO client: using api key 7Hq2vLm9Xc4RtP8wZk3N for requests", "7Hq2vLm9Xc4RtP8wZk3N"),
    ("# Tq4mW8zLp2Xv9Rk7Nc3B is the password", "Tq4mW8zLp2Xv9Rk7Nc3B"),
    ("ERROR login failed for password Vb7nQ2kLm9Xz4Rt8", "Vb7nQ2kLm9Xz4Rt8"),
    ("DEBUG using dd api key 4be1c0a9d2f3e5b6a7c8d9e0f1a2b3c4", "4be1c0a9d2f3e5b6a7c8d9e0f1a2b3c4"),
    ("WARN the secret Pq9Lk2Mz7Xv4Nb8R was rejected by the server", "Pq9Lk2Mz7Xv4Nb8R"),
    ("Your API key is Mx8Rt2Lq9Wz4Kp7V; keep it safe", "Mx8Rt2Lq9Wz4Kp7V"),
    ("auth token Ln4Xq8Zr2Mv7Wp3T expired at 12:00", "Ln4Xq8Zr2Mv7Wp3T"),
    ("FATAL: wrong PASSWORD Wd8Kz3Lq7Xm2Rp9V for user app", "Wd8Kz3Lq7Xm2Rp9V"),
]
CODE = [
    ('    if (db_pass !== "Wm3Qx8Lz2Rk9Vp4N") {', "Wm3Qx8Lz2Rk9Vp4N"),
    ('    if ("Jr7Kp2Xm9Lq4Zw8B" == my_super_password)', "Jr7Kp2Xm9Lq4Zw8B"),
    ('    password = @"Hs8Zq3Lm7Xp2Wk9R";', "Hs8Zq3Lm7Xp2Wk9R"),
    ('    std::string secret("Fd2Xk9Qm4Lz7Rp8W");', "Fd2Xk9Qm4Lz7Rp8W"),
    ('password_super_secure = "Gt5Lq8Zx2Mk9Wr3P"', "Gt5Lq8Zx2Mk9Wr3P"),
    ('    assert api_token == "Qp3Zk8Xm2Lr7Wv4N", "bad token"', "Qp3Zk8Xm2Lr7Wv4N"),
    ("  File \"app.py\", line 9, in <module>\n    check(userPassword, 'Bz6Wq2Lm8Xk4Rp7N')",
     "Bz6Wq2Lm8Xk4Rp7N"),
]
OPTIONS = [
    ("+ python deploy.py -p Cz8Lq2Xm7Rk4Wp9N ssh host", "Cz8Lq2Xm7Rk4Wp9N"),
    ("$ tool sync -p Nk4Zq8Lx2Mr7Wv3P --verbose", "Nk4Zq8Lx2Mr7Wv3P"),
    ("... connect HomeNet password Rq7Lz2Xk9Mp4Wn8B", "Rq7Lz2Xk9Mp4Wn8B"),
    ("mysql https://db.example.com -u root -p 'Wl3Xq8Zm2Kr7Vp9N'", "Wl3Xq8Zm2Kr7Vp9N"),
    ('running: ./sync.sh -p "Xt5Lq9Zm2Kw7Rp3N" --dry-run', "Xt5Lq9Zm2Kw7Rp3N"),
]
ROWS = [
    ("twilio_auth_token,Kx8Lq2Zm7Rp4Wv9N3Bt6Yc1Hd5Fg0Js2,", "Kx8Lq2Zm7Rp4Wv9N3Bt6Yc1Hd5Fg0Js2"),
    ("CLOUDFLARE_API_TOKEN\tPq7Zx2Lm9Kr4Wv8Nb3Tc6Yh1Jd5Fg0Sa", "Pq7Zx2Lm9Kr4Wv8Nb3Tc6Yh1Jd5Fg0Sa"),
    ('"stripe_secret","Rk4Xq9Zm2Lp7Wv3N","prod"', "Rk4Xq9Zm2Lp7Wv3N"),
    ("CreationTime                      KeyName    Permissions    Value\n"
     "--------------------------------  ---------  -------------  --------------------------"
     "------------------------------------------------------------\n"
     "2026-03-01T10:00:00.000000+00:00  key1       FULL           "
     "q9Zr8kQ3mX9pL2vW7nB4tY6uI1oP5aS3dF8gH2jK0lZxCvBnM4qWeRtYuIoPaSdFgHjKlZxCvBnM1234567890Ab==\n"
     "2026-03-01T10:00:00.000000+00:00  key2       FULL           "
     "w3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op7As9Df1Gh3Jk5Lz7Xc9Vb1Nm3Qw5Er7Ty9U0==",
     "w3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7"),
    ("KeyName    Permissions    Value\n---------  -------------  -------------------------\n"
     "key1       FULL           q9Zr8kQ3mX9pL2vW7nB4tY6uI1oP5aS3dF8gH2jK0lZxCvBnM4qWe==",
     "q9Zr8kQ3mX9pL2vW7nB4tY6uI1oP5aS3dF8"),
    ("Name           PrimaryMasterKey\n-------------  ----------------------------------------\n"
     "cosmos-prod    Hd8Lq2Zm7Xk4Rp9Wv3Nb6Tc1Yh5Jd0Fg2Sa8Qw==", "Hd8Lq2Zm7Xk4Rp9Wv3Nb6Tc1Yh5Jd0Fg"),
]
BARE = [
    ("+ printenv AWS_SECRET_ACCESS_KEY\nAbCdEfGh1234567890/IjKlMnOpQrStUvWxYz+0",
     "AbCdEfGh1234567890/IjKlMnOpQrStUvWxYz+0"),
    ("+ cat config/master.key\n5e8d1c9a7b3f2e6d4c0a9b8e7f6d5c4b",
     "5e8d1c9a7b3f2e6d4c0a9b8e7f6d5c4b"),
    ("$ printenv DB_PASSWORD\ncorrect-horse-battery", "correct-horse-battery"),
    ("++ cat /run/secrets/api_token\nZq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5", "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5"),
]
FORMATS = [
    ("token 110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"),
    ("GET https://api.telegram.org/bot110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
     "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"),
    ("SECRET_KEY = django-insecure-k9#(x)2l=m@p8q$z!w3v^e&r*t7y(u)i-o+p", "2l=m@p8q$z!w3v"),
    ("export DJANGO_SECRET_KEY=a)b(8#x2l=m@p8q$z!w3v^e&r*t7y(u)i-o+pqq1", "8#x2l=m@p8q$z"),
    ('{"ppk": "PuTTY-User-Key-File-3: ssh-ed25519\\nEncryption: none\\nComment: k\\n'
     'Public-Lines: 1\\nAAAAC3NzaC1lZDI1NTE5AAAAIGZ\\nPrivate-Lines: 2\\n'
     'AAAAIGs0Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0\\nAAAAIQm2Xb7Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js1\\n'
     'Private-MAC: 0123456789abcdef0123456789abcdef0123456789abcdef\\n"}',
     "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0"),
]
CLASSES = {"prose": PROSE, "code": CODE, "options": OPTIONS, "rows": ROWS, "bare": BARE,
           "formats": FORMATS}

# what must stay, byte for byte: the same words with no random token near them
BENIGN = "\n".join([
    "INFO password reset email sent to user 4821",
    "the token was refreshed after 3600 seconds",
    "ERROR: invalid password for user deploy (attempt 3 of 5)",
    "Secret scanning found 0 issues in build 20261206.4 of AppServer2026",
    "token refresh for client web-app-2 succeeded after 1200ms",
    "DEBUG SessionTokenStore2 flushed 12 entries",
    # real source lines (pygments, cryptography) the first version of the rule took
    "    |PushObject|PassCollisions|AxisAngle2Rot|Rot2Angle|",
    "    elif isinstance(key, (MLDSA44Ed25519PrivateKey, MLDSA44Ed25519PublicKey)):",
    "tokenizer loaded from bert-base-uncased-v2 in 1.2s",
    "secret/my-release-7f9b8c6d5e created",
    "kubectl get secret db-creds-5c8d7f9b6 -o yaml",
    "3f9a2b7c1d8e4f6a0b5c9d2e7f1a4b8c9d0e1f2a Fix token refresh on expiry",
    "api key rotation at 2026-03-01T10:00:00Z (request 4f1c2e3a-9b8d-4c7e-a6f5-0d1e2c3b4a59)",
    "the password must contain ABCdef and 123456 but not Password123",
    "max_tokens=4096 temperature=0.7 model=gpt-4o-2024-08-06",
    "  if (password.length < 12) { throw new Error('password too short') }",
    "password for bob updated in /etc/shadow",
    "mkdir -p dir",
    "server -p 8080",
    "aws -p profile-name s3 ls",
    "pytest -p no:cacheprovider -q",
    "ssh -p 2222 deploy@host",
    "docker run -p 8080:80 nginx:1.27",
    "cp -p src/a.txt dst/",
    "git log -p HEAD~3",
    "+ printenv HOME",
    "/home/runner",
    "+ printenv LANG",
    "C.UTF-8",
    "+ cat VERSION",
    "1.2.3",
    "+ cat config/master.key",
    "+ echo done",
    "name,username,email",
    "alice,alice01,alice@example.com",
    "Name      Status    Session",
    "--------  --------  ---------",
    "web-1     running   4f3a9b2c8d",
    "call(token=abc) ok",
    "",
])


def _gone(out: str, cases: list[tuple[str, str]]) -> None:
    for text, secret in cases:
        assert secret not in out, (text, out)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_each_class_is_redacted_alike_by_both_scans(name: str) -> None:
    cases = CLASSES[name]
    text = "\n\n".join(t for t, _s in cases) + "\n"
    out, counts = red_both(text)
    _gone(out, cases)
    assert counts, out


def test_the_benign_lines_stay_byte_for_byte() -> None:
    out, counts = red_both(BENIGN)
    assert out == BENIGN
    assert counts == {}


def test_rage_redact_on_a_file_and_through_a_pipe_gives_the_same_bytes(tmp_path: Path) -> None:
    cases = [c for v in CLASSES.values() for c in v]
    text = ("\n\n".join(t for t, _s in cases) + "\n\n" + BENIGN).encode()
    src = tmp_path / "leaks.log"
    src.write_bytes(text)
    by_file = subprocess.run(rage_cmd("redact", "-q", str(src)), capture_output=True,
                             check=True, timeout=60).stdout
    by_pipe = subprocess.run(rage_cmd("redact", "-q", "-"), input=text, capture_output=True,
                             check=True, timeout=60).stdout
    assert by_file == by_pipe
    _gone(by_file.decode(), cases)
    assert by_file.endswith(BENIGN.encode())


@pytest.mark.parametrize(("argv", "at"), [
    (["python", "deploy.py", "-p", "Zr8kQ3mX9pL2", "ssh", "host"], 3),
    (["tool", "sync", "-p", "Nk4Zq8Lx2Mr7Wv3P", "--verbose"], 3),
    (["nmtool", "connect", "HomeNet", "password", "Rq7Lz2Xk9Mp4Wn8B"], 4),
    (["mysql", "https://db.example.com", "-u", "root", "-p", "Wl3Xq8Zm2Kr7Vp9N"], 5),
    (["./backup.sh", "-p", "4be1c0a9d2f3e5b6a7c8d9e0f1a2b3c4d5e6"], 2),
])
def test_a_recorded_argv_loses_the_value_after_a_password_option(argv: list[str], at: int
                                                                 ) -> None:
    r = Redactor(pseudonymize=False)
    out = r.argv(argv)
    assert out[at] == "[REDACTED:secret-field]"
    assert out[:at] + out[at + 1:] == argv[:at] + argv[at + 1:]


@pytest.mark.parametrize("argv", [
    ["mkdir", "-p", "dir"], ["server", "-p", "8080"], ["aws", "-p", "profile-name"],
    ["docker", "run", "-p", "8080:80", "nginx"], ["ssh", "-p", "2222", "host"],
    ["pytest", "-p", "no:cacheprovider"], ["cp", "-p", "src/a.txt", "dst/"],
    ["tool", "password", "reset"], ["tool", "-p", "/etc/app/secret.conf"],
])
def test_an_argv_without_a_random_value_stays(argv: list[str]) -> None:
    assert Redactor(pseudonymize=False).argv(argv) == argv


@pytest.mark.parametrize(("token", "random"), [
    ("Zr8kQ3mX9pL2", True), ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Ky3nDSa", True),
    ("a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", True), ("profile-name", False), ("8080", False),
    ("ZooKeeperServer325", False), ("pod-name-7f9b8c6d5e", False), ("0x14ede63a5a70002", False),
    ("3f9a2b7c", False), ("0000012345Ag", False), ("v1.2.3-beta4", False),
    ("4f1c2e3a-9b8d-4c7e-a6f5-0d1e2c3b4a59", False), ("bert-base-uncased-v2", False),
])
def test_what_counts_as_a_random_token(token: str, random: bool) -> None:
    assert random_token(token.encode()) is random
