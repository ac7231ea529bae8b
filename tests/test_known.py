"""Is it known? Before uploading to a rage receiver, `rage report` asks about a 5-digit
prefix of its crash's signature hash, computed locally with the receiver's own algorithm,
and decides itself which answer is its own. A real receiver with its triage index, behind
a forwarder that logs every request line that reaches it; real crashes of a real Python
tool; the user's answer typed on a real terminal."""

from __future__ import annotations

import http.client
import http.server
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import requests

from tests.redact_helpers import serving
from tests.test_cli_exit_codes import RAGE
from tests.test_select import Pty
from tests.test_server import Server, start_server, stop_server

ADMIN = "known-admin-token"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
TOOL = """import rage
rage.install("mytool", version={version!r})
def load(config):
    return config["retries"]
def pick(items):
    return items[3]
{call}
"""


class Forwarder(http.server.BaseHTTPRequestHandler):
    """Passes each request on to the receiver, logging its method and path."""

    target: ClassVar[str] = ""
    seen: ClassVar[list[str]] = []

    def _forward(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        host, port = self.target.split("//", 1)[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        conn.request(self.command, self.path, body=body or None, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    do_GET = do_POST = _forward

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[Server, str, list[str]]]:
    server = start_server(tmp_path / "store", "--admin-token", ADMIN)
    seen: list[str] = []
    handler = type("F", (Forwarder,), {"target": server.url, "seen": seen})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    try:
        with serving(httpd) as port:
            yield server, f"http://127.0.0.1:{port}", seen
    finally:
        stop_server(server)


def crash(tmp_path: Path, version: str, call: str = "load({})") -> None:
    tool = tmp_path / "mytool.py"
    tool.write_text(TOOL.format(version=version, call=call))
    proc = subprocess.run([sys.executable, str(tool)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 1 and "Error" in proc.stderr


def report(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAGE, "report", "--last", "--app", "mytool", "--no-collect",
                           "--to", f"receiver+{url}/", *args], capture_output=True,
                          text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)


def signatures(server: Server) -> list[dict[str, object]]:
    r = requests.get(f"{server.url}/api/v1/signatures", headers=AUTH, timeout=10)
    rows: list[dict[str, object]] = r.json()["signatures"]
    return rows


def test_a_crash_fixed_in_a_later_version_is_said_and_nothing_is_sent(
        receiver: tuple[Server, str, list[str]], tmp_path: Path) -> None:
    server, url, seen = receiver
    crash(tmp_path, "1.3.0")
    first = report(url, "--yes")
    assert first.returncode == 0 and "uploaded:" in first.stdout, first.stderr
    assert "known" not in first.stderr  # a new crash: asked, unknown, uploaded as before
    [sig] = signatures(server)
    assert seen == [f"GET /api/v1/known/{str(sig['hash'])[:5]}", "POST /api/v1/bundles"]
    r = requests.post(f"{server.url}/api/v1/signatures/{sig['hash']}", headers=AUTH,
                      json={"status": "fixed", "fixed_in": "1.4.0"}, timeout=10)
    assert r.status_code == 200

    seen.clear()
    crash(tmp_path, "1.3.0")  # the same crash, another run
    p = Pty([RAGE, "report", "--last", "--app", "mytool", "--no-collect", "--to",
             f"receiver+{url}/"], env={**os.environ, "TERM": "dumb"})
    p.expect("What went wrong?")
    p.send("it crashed again\n")
    p.expect("Create the bundle?")
    p.send("\n")
    p.expect("this crash is fixed in 1.4.0 (you run 1.3.0): upgrading should fix it")
    p.expect("Send it anyway? [y/N]")
    p.send("\n")
    p.expect("not uploaded; send it later with: rage send")
    assert p.proc.wait(timeout=60) == 0
    # only the prefix went out: no bundle, no full hash, no signature text
    assert seen == [f"GET /api/v1/known/{str(sig['hash'])[:5]}"]
    assert [s["count"] for s in signatures(server)] == [1]


def test_a_known_open_crash_still_uploads_and_a_new_one_is_unknown(
        receiver: tuple[Server, str, list[str]], tmp_path: Path) -> None:
    server, url, seen = receiver
    crash(tmp_path, "2.0")
    assert report(url, "--yes").returncode == 0
    crash(tmp_path, "2.0")
    again = report(url, "--yes")
    assert again.returncode == 0 and "uploaded:" in again.stdout
    assert "already known to the maintainers (reported 1 time" in again.stderr
    assert [s["count"] for s in signatures(server)] == [2]
    crash(tmp_path, "2.0", call="pick([])")  # another crash: another signature
    other = report(url, "--yes")
    assert "known" not in other.stderr and "uploaded:" in other.stdout
    assert sorted(int(str(s["count"])) for s in signatures(server)) == [1, 2]
    seen.clear()
    crash(tmp_path, "2.0")
    assert report(url, "--yes", "--no-check").returncode == 0
    assert [line.split()[0] + " " + line.split()[1].split("/")[3] for line in seen] == [
        "POST bundles"]  # --no-check: nothing asked


def test_the_query_is_bounded_and_needs_the_upload_token(tmp_path: Path) -> None:
    server = start_server(tmp_path / "store", "--admin-token", ADMIN,
                          env={"RAGE_SERVER_UPLOAD_TOKEN": "up-token-1234567890"})
    try:
        r = requests.get(f"{server.url}/api/v1/known/abcde", timeout=10)
        assert r.status_code == 401
        auth = {"Authorization": "Bearer up-token-1234567890"}
        assert requests.get(f"{server.url}/api/v1/known/abcdef0", headers=auth,
                            timeout=10).status_code == 404  # only the prefix's length
        codes = [requests.get(f"{server.url}/api/v1/known/abcde", headers=auth,
                              timeout=10).status_code for _ in range(32)]
        assert codes[:30] == [200] * 30 and codes[30:] == [429, 429]
        body = requests.get(f"{server.url}/api/v1/known/fffff", headers=auth, timeout=10)
        assert body.status_code == 429 and re.search(r"try again", body.text)
    finally:
        stop_server(server)
