"""Mail protocols as Python's own clients print them with debugging on, and other protocol
transcripts: SMTP's `AUTH PLAIN <base64>` and `AUTH LOGIN` (the password's base64 on the
line after the server's `334 UGFzc3dvcmQ6`), POP3's `PASS x`, IMAP's `TAG LOGIN user "x"`,
redis-cli's `CONFIG GET requirepass`. Each leaked on the code before: the real clients run
here against small servers on 127.0.0.1, recorded with `rage run` and reported.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import os
import shutil
import socketserver
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import both_scans, red, reported, serving

S = "Zq8s3cretValue77xY"


class _Line(socketserver.StreamRequestHandler):
    def say(self, *lines: str) -> None:
        for line in lines:
            self.wfile.write(line.encode() + b"\r\n")


class _Smtp(_Line):
    def handle(self) -> None:
        self.say("220 localhost ESMTP")
        while line := self.rfile.readline():
            cmd = line.decode().strip().upper()
            if cmd.startswith("EHLO"):
                self.say("250-localhost", "250 AUTH PLAIN LOGIN")
            elif cmd.startswith("AUTH LOGIN"):
                self.say("334 UGFzc3dvcmQ6")
                self.rfile.readline()
                self.say("235 ok")
            elif cmd.startswith("AUTH"):
                self.say("235 ok")
            elif cmd.startswith("QUIT"):
                self.say("221 bye")
                return
            else:
                self.say("250 ok")


class _Pop(_Line):
    def handle(self) -> None:
        self.say("+OK ready")
        while line := self.rfile.readline():
            self.say("+OK")
            if line.upper().startswith(b"QUIT"):
                return


class _Imap(_Line):
    def handle(self) -> None:
        self.say("* OK ready")
        while line := self.rfile.readline():
            tag, cmd = line.decode().split(" ", 1)
            if cmd.upper().startswith("CAPABILITY"):
                self.say("* CAPABILITY IMAP4rev1 AUTH=PLAIN")
            self.say(f"{tag} OK done")
            if cmd.upper().startswith("LOGOUT"):
                return


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, int]]:
    with contextlib.ExitStack() as stack:
        ports = {}
        for name, handler in (("smtp", _Smtp), ("pop", _Pop), ("imap", _Imap)):
            srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
            srv.daemon_threads = True
            ports[name] = stack.enter_context(serving(srv))
        yield ports


CLIENTS = {
    "smtp-plain": "import smtplib; s = smtplib.SMTP('127.0.0.1', {smtp}); s.set_debuglevel(1)\n"
                  "s.login('deploy', open({pw!r}).read()); s.quit()",
    "smtp-login": "import smtplib; s = smtplib.SMTP('127.0.0.1', {smtp}); s.set_debuglevel(1)\n"
                  "s.ehlo(); s.esmtp_features['auth'] = 'LOGIN'\n"
                  "s.login('deploy', open({pw!r}).read()); s.quit()",
    "pop3": "import poplib; p = poplib.POP3('127.0.0.1', {pop}); p.set_debuglevel(1)\n"
            "p.user('deploy'); p.pass_(open({pw!r}).read()); p.quit()",
    "imap": "import imaplib; m = imaplib.IMAP4('127.0.0.1', {imap}); m.debug = 4\n"
            "m.login('deploy', open({pw!r}).read()); m.logout()",
}
B64 = base64.b64encode(S.encode()).decode()
PLAIN = base64.b64encode(b"\0deploy\0" + S.encode()).decode()


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_mail_clients_debug_output_keeps_no_password(
        client: str, servers: dict[str, int], tmp_path: Path) -> None:
    secret = tmp_path / "pw"  # the client reads it, as from its config: not in argv
    secret.write_text(S)
    code = CLIENTS[client].format(pw=str(secret), **servers)
    proc = run_rage("run", "--app", client, "--", sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr
    seen = proc.stdout + proc.stderr
    assert S in seen or B64 in seen or PLAIN in seen  # the real client printed it
    raw = reported(client, tmp_path / "b.tar.zst")
    for form in (S, B64, PLAIN):
        assert form.encode() not in raw, (client, form)
    assert b"[REDACTED:secret-field]" in raw


@pytest.mark.parametrize(("text", "kept"), [
    (f"send: 'AUTH PLAIN {PLAIN}\\r\\n'", "send: 'AUTH PLAIN [REDACTED:secret-field]\\r\\n'"),
    (f"C: AUTHENTICATE PLAIN {PLAIN}", "C: AUTHENTICATE PLAIN [REDACTED:secret-field]"),
    (f"AUTH XOAUTH2 {PLAIN}", "AUTH XOAUTH2 [REDACTED:secret-field]"),
    (f"*cmd* 'PASS {S}'", "*cmd* 'PASS [REDACTED:secret-field]'"),
    (f"> PASS {S}", "> PASS [REDACTED:secret-field]"),
    (f"  45:09.05 > b'HDPH1 LOGIN deploy \"{S}\"'", "LOGIN deploy \"[REDACTED:secret-field]\"'"),
    (f"reply: b'334 UGFzc3dvcmQ6\\r\\n'\nsend: '{B64}\\r\\n'",
     "send: '[REDACTED:secret-field]\\r\\n'"),
    (f'127.0.0.1:6379> CONFIG GET requirepass\n1) "requirepass"\n2) "{S}"',
     '1) "requirepass"\n2) "[REDACTED:secret-field]"'),
    (f'15) "masterauth"\n16) "{S}"\n17) "maxmemory"\n18) "0"',
     '16) "[REDACTED:secret-field]"\n17) "maxmemory"\n18) "0"'),
])
def test_a_protocol_transcripts_secret_goes(text: str, kept: str) -> None:
    out, counts = red(text)
    assert S not in out and B64 not in out and PLAIN not in out, out
    assert kept in out, out
    assert counts == {"secret-field": 1}


@pytest.mark.parametrize("text", [
    "send: 'AUTH LOGIN ZGVwbG95\\r\\n'",  # the user name's base64
    "--- PASS: TestLogin (0.00s)",
    "    --- PASS: TestAuth/valid_token (0.00s)",
    "PASS: tests/auth.test",
    "XPASS: tests/flaky.test",
    " PASS  src/auth.test.js",
    "> pass show email/work",
    '1) "maxmemory"\n2) "0"',
    '1) "requirepass"\n2) ""',
])
def test_what_a_protocol_or_a_test_runner_prints_around_them_stays(text: str) -> None:
    assert red(text) == (text, {})


def test_both_scans_agree_on_protocol_lines() -> None:
    text = "\n".join([f"send: 'AUTH PLAIN {PLAIN}\\r\\n'", f"*cmd* 'PASS {S}'",
                      f"> b'A1 LOGIN u \"{S}\"'", "--- PASS: TestLogin (0.00s)",
                      f'1) "requirepass"\n2) "{S}"']) + "\n"
    native, pure = both_scans(text)
    assert native == pure
    assert S not in native


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def _served(tmp_path: Path) -> Iterator[str]:
    """An empty directory served over HTTP on 127.0.0.1: its URL."""
    (tmp_path / "www").mkdir()
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path / "www")))
    with serving(srv) as port:
        yield f"http://127.0.0.1:{port}/"


def test_a_real_wget_debug_log(tmp_path: Path) -> None:
    """`wget -d` prints every option it was given (`Setting --password (password) to X`)
    and the request's `Authorization: Basic` header."""
    if shutil.which("wget") is None:
        pytest.skip("wget is not installed (.ci/run installs it)")
    with _served(tmp_path) as url:
        proc = run_rage("run", "--app", "wget", "--", "wget", "-d", "--user=deploy",
                        f"--password={S}", "-O", os.devnull, url)
    assert proc.returncode == 0, proc.stderr
    assert f"Setting --password (password) to {S}" in proc.stderr  # what the user saw
    raw = reported("wget", tmp_path / "b.tar.zst")
    basic = base64.b64encode(f"deploy:{S}".encode())
    assert S.encode() not in raw and basic not in raw
    assert b"Setting --password (password) to [REDACTED:secret-field]" in raw


TOKEN = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"  # an API key as Freshdesk's and Toggl's docs use it


def test_a_real_curl_given_a_token_as_its_user(tmp_path: Path) -> None:
    """`curl -u TOKEN:` (no password: the key is the user, as many providers document it)
    with `-v` prints `Server auth using Basic with user 'TOKEN'`; the argv kept the user
    whole on the code before, and so did that line."""
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed (.ci/run installs it)")
    with _served(tmp_path) as url:
        proc = run_rage("run", "--app", "curl", "--", "curl", "-sS", "-v", "-u", f"{TOKEN}:",
                        "-o", os.devnull, url)
    assert proc.returncode == 0, proc.stderr
    assert f"Server auth using Basic with user '{TOKEN}'" in proc.stderr  # what the user saw
    raw = reported("curl", tmp_path / "b.tar.zst")
    assert TOKEN.encode() not in raw
    assert base64.b64encode(f"{TOKEN}:".encode()) not in raw
    assert b"Server auth using Basic with user '[REDACTED:secret-field]'" in raw


@pytest.mark.parametrize("argv", [
    ["curl", "-u", f"{TOKEN}:", "https://api.example.com/v2/tickets"],
    ["curl", "-u", f"{TOKEN}:X", "https://api.example.com/v2/tickets"],  # Freshdesk's
    ["curl", "-u", f"{S}:api_token", "https://api.example.com/me"],  # Toggl's
    ["curl", f"-u{TOKEN}:x-oauth-basic", "https://api.example.com/user"],  # GitHub's, old
    ["http", "-a", f"{TOKEN}:", "https://api.example.com/me"],
])
def test_a_token_given_as_the_user_goes_from_argv(argv: list[str]) -> None:
    from rage.redact import Redactor

    out = Redactor().argv(argv)
    assert not any(TOKEN in a or S in a for a in out), out
    assert out[0] == argv[0] and out[-1] == argv[-1]


@pytest.mark.parametrize("argv", [
    ["curl", "-u", "deploy:", "https://example.com/"],
    ["curl", "--negotiate", "-u", ":", "https://example.com/"],
    ["curl", "--ntlm", "-u", "svc.backup2:", "https://example.com/"],
    ["docker", "run", "-u", "1000:", "debian"],
])
def test_a_user_name_without_a_password_stays_in_argv(argv: list[str]) -> None:
    from rage.redact import Redactor

    assert Redactor(pseudonymize=False).argv(argv) == argv


@pytest.mark.parametrize("user", ["alice", "deploy-bot", "svc.backup2", "ci_user_2024"])
def test_curls_line_for_a_user_name_stays(user: str) -> None:
    text = f"* Server auth using Basic with user '{user}'"
    assert red(text) == (text, {})


def test_curls_line_for_a_token_goes_in_both_scans() -> None:
    text = f"* Server auth using Basic with user '{TOKEN}'\n> GET / HTTP/1.1\n"
    native, pure = both_scans(text)
    assert native == pure
    assert TOKEN not in native and "with user '[REDACTED:secret-field]'" in native


def test_a_real_tls_key_log(tmp_path: Path) -> None:
    """`SSLKEYLOGFILE=/dev/stderr curl https://...`, how a TLS problem is debugged with
    Wireshark: curl writes each session's secrets (`CLIENT_RANDOM`, TLS 1.3's
    `*_TRAFFIC_SECRET_0`) beside its own messages. Hex, so the rule that keeps digests as
    evidence kept them on the code before: whoever captured the traffic could decrypt it."""
    import ssl
    import subprocess

    if shutil.which("curl") is None or shutil.which("openssl") is None:
        pytest.skip("curl or openssl is not installed (.ci/run installs curl)")
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"],
                   check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path)))
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with serving(srv) as port:
        env = dict(os.environ, SSLKEYLOGFILE="/dev/stderr")
        proc = run_rage("run", "--app", "tls", "--", "curl", "-sS", "-k", "-o", os.devnull,
                        f"https://127.0.0.1:{port}/", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stderr.splitlines()
             if line.startswith(("CLIENT_", "SERVER_", "EXPORTER_"))]
    if not lines:
        pytest.skip("this curl writes no key log (built without SSLKEYLOGFILE support)")
    raw = reported("tls", tmp_path / "b.tar.zst")
    for label, client_random, secret in lines:
        assert secret.encode() not in raw
        assert f"{label} {client_random} [REDACTED:tls-session-secret]".encode() in raw


@pytest.mark.skipif(shutil.which("redis-server") is None or shutil.which("redis-cli") is None,
                    reason="redis is not installed (.ci/run installs redis-server)")
def test_a_real_redis_cli_piped_out_of_a_terminal(tmp_path: Path) -> None:
    """redis-cli with no terminal prints `CONFIG GET`'s reply raw: the name alone on its
    line, the value alone on the next. A real server on 127.0.0.1 with its masterauth and
    TLS key passphrase set (no client needs a password for those), recorded with `rage run`:
    both values go, every other setting of `CONFIG GET *` stays as redis printed it."""
    import socket
    import subprocess

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    server = subprocess.Popen(
        ["redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path), "--masterauth", S,
         "--tls-key-file-pass", S[::-1]], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if subprocess.run(["redis-cli", "-p", port, "ping"], capture_output=True,
                              text=True, check=False).stdout.strip() == "PONG":
                break
            threading.Event().wait(0.05)
        env = dict(os.environ, RAGE_HOME=str(tmp_path / "rh"),
                   RAGE_CONFIG=os.devnull)
        script = f"redis-cli -p {port} CONFIG GET '*'; redis-cli -p {port} CONFIG GET masterauth"
        proc = run_rage("run", "--", "sh", "-c", script, env=env)
        assert proc.returncode == 0, proc.stderr
        assert f"masterauth\n{S}\n" in proc.stdout  # as redis-cli printed it, piped
        raw = reported("sh", tmp_path / "b.tar.zst", env)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert S.encode() not in raw and S[::-1].encode() not in raw
    assert b"masterauth\n[REDACTED:secret-field]\n" in raw
    assert b"tls-key-file-pass\n[REDACTED:secret-field]\n" in raw
    assert b"requirepass\n\n" in raw  # never set: nothing to hide
    assert b"maxclients\n10000\n" in raw


@pytest.mark.parametrize("text", [
    f"masterauth\n{S}\n", f"requirepass\r\n{S}\r\n",
    f"rdbchecksum\nyes\ntls-key-file-pass\n{S}\n",
])
def test_redis_replies_piped_lose_the_value_in_both_scans(text: str) -> None:
    native, pure = both_scans(text)
    assert native == pure and S not in native and "[REDACTED:secret-field]" in native
