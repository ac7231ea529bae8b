"""OAuth 2.0 authorization codes (rage.redact.oauth): a login's callback and token request.

A browser login prints the code twice: the local server's access log of the callback
(`GET /callback?code=X&state=Y`) and the token request that spends it
(`grant_type=authorization_code&code=X`). ``code`` alone is no secret name, so only those
shapes take it; exit codes, status codes and states stay.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rage.redact import Redactor
from tests.redact_helpers import member, record_script

CODE = "4/0AfJohXk2vQ8s9LmZpQw7rTyU3iO1pA5sD6fG8hJ"
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"


def red(text: str) -> str:
    r = Redactor(home="/home/alice", user="alice", hostname="laptop")
    return r.bytes(text.encode() + b"\n").decode().rstrip("\n")


@pytest.mark.parametrize("text", [
    f"GET /callback?code={CODE}&state=af0ifjsldkj&scope=email HTTP/1.1",
    f"http://localhost:8085/#state=xyz&code={CODE}",
    f"https://login.example.com/nativeclient?code={CODE}&session_state=5c2d0e",
    f"grant_type=authorization_code&code={CODE}&redirect_uri=http%3A%2F%2F127.0.0.1",
    f"code={CODE}&code_verifier={VERIFIER}&client_id=abc",
    f"data {{'grant_type': 'authorization_code', 'code': '{CODE}', 'client_id': 'abc'}}",
    f'{{"grant_type": "authorization_code", "code": "{CODE}"}}',
])
def test_an_authorization_code_goes(text: str) -> None:
    out = red(text)
    assert CODE not in out and "[REDACTED:oauth-code]" in out, out


@pytest.mark.parametrize("text", [
    f"code_verifier={VERIFIER}",
    f'{{"codeVerifier": "{VERIFIER}"}}',
    f"OAUTH_VERIFIER={VERIFIER}",
    f'{{"device_code":"{VERIFIER}","user_code":"WDJB-MJHT","interval":5}}',
])
def test_pkce_and_device_flow_secrets_go_by_name(text: str) -> None:
    out = red(text)
    assert VERIFIER not in out, out
    if "user_code" in text:
        assert '"user_code":"WDJB-MJHT"' in out  # what the user is shown to type stays


@pytest.mark.parametrize("text", [
    "exit code=1 status=failed",
    "worker state=idle exit code=0 signal=none",
    "GET /api/items?code=200&state=ok HTTP/1.1",  # a number is evidence
    "GET /search?code=python&lang=en HTTP/1.1",  # no state, no grant: any parameter
    f"GET /callback?error_code={CODE[:8]}&state=af0 HTTP/1.1",  # not `code` itself
    "?code=&state=abc",  # empty
    '{"code": "E1234", "message": "not found"}',  # no authorization_code on the line
    "grant_type=client_credentials&scope=read",
])
def test_other_codes_and_states_stay(text: str) -> None:
    assert red(text) == text


def test_both_scans_agree() -> None:
    """The pure-Python scan finds the rule's needles with finds, Hyperscan in its pass."""
    text = (f'127.0.0.1 - - "GET /callback?code={CODE}&state=x HTTP/1.1" 200 -\n'
            f"grant_type=authorization_code&code={CODE}\nexit code=1 state=done\n").encode()
    outs = []
    for native in ("1", "0"):
        env = dict(os.environ, RAGE_NATIVE_SCAN=native)
        outs.append(subprocess.run([sys.executable, "-m", "rage", "redact"], input=text,
                                   env=env, capture_output=True, check=True).stdout)
    assert outs[0] == outs[1]
    assert CODE.encode() not in outs[0] and b"exit code=1 state=done" in outs[0]


LOGIN = textwrap.dedent('''
    import http.server, subprocess, sys, threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # the browser's redirect: logged to stderr as servers do
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"You can close this window.")

        def do_POST(self):  # the token endpoint: a debug line of what it was sent
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            print("token request body:", body, flush=True)
            self.send_response(400)
            self.end_headers()
            self.wfile.write(b'{"error":"invalid_grant"}')

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_address[1]
    code, verifier = open(sys.argv[1]).read().split()  # as the browser would hand them
    subprocess.run(["curl", "-s", base + "/callback?code=" + code + "&state=af0ifjsldkj"],
                   check=True)
    print("debug: exchanging", code, "for a token", flush=True)  # bare: no shape says code
    form = ("grant_type=authorization_code&code=" + code + "&code_verifier=" + verifier
            + "&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback")
    answer = subprocess.run(["curl", "-s", "-d", form, base + "/token"], check=True,
                            capture_output=True, text=True).stdout
    print("login failed:", answer, flush=True)
    sys.exit(1)
''')


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_a_real_login_callback_and_token_request(tmp_path: Path) -> None:
    """A real local callback server (http.server) and real curl requests, recorded with
    `rage run`: the user saw the code; the bundle holds none of it, even where the program
    printed it bare, and keeps the rest."""
    proc, raw, out = record_script(tmp_path, LOGIN, f"{CODE} {VERIFIER}")
    assert proc.returncode == 1, proc.stderr
    assert f"GET /callback?code={CODE}&state=af0ifjsldkj" in proc.stderr  # as it was
    assert f"&code={CODE}&code_verifier={VERIFIER}" in proc.stdout
    assert CODE.encode() not in raw and VERIFIER.encode() not in raw
    stderr, stdout = member(out, "run/stderr.log"), member(out, "run/stdout.log")
    assert '"GET /callback?code=[REDACTED:oauth-code]&state=af0ifjsldkj HTTP/1.1" 200' in stderr
    assert ("token request body: grant_type=authorization_code&code=[REDACTED:oauth-code]"
            "&code_verifier=") in stdout
    assert 'login failed: {"error":"invalid_grant"}' in stdout
    # the code printed bare, where nothing says it is one: learned from the shapes that do
    assert "debug: exchanging [REDACTED:literal] for a token" in stdout
