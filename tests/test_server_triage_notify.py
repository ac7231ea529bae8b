"""Notifications on a new signature or a regression, received by a real HTTP server on
127.0.0.1 (a generic JSON webhook and a Slack-compatible one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from rage.server.notify import Notifier, Target, slack_payload
from tests.services import free_port
from tests.test_server import Server, start_server, stop_server
from tests.test_server_triage import ADMIN, AUTH, signatures, upload_family

pytest.importorskip("sqlalchemy")


class Hook:
    """Records every POST; ``gate`` (when cleared) holds each request until it is set."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.arrived = threading.Condition()
        self.gate = threading.Event()
        self.gate.set()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with hook.arrived:
                    hook.received.append((self.path, json.loads(body)))
                    hook.arrived.notify_all()
                hook.gate.wait(30)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n: int, timeout: float = 30) -> list[tuple[str, dict[str, Any]]]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.received) >= n, timeout)
            return list(self.received)

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    yield h
    h.close()


@pytest.fixture
def server(tmp_path: Path, hook: Hook) -> Iterator[Server]:
    port = free_port()  # notifications need --public-url: the port is chosen first
    s = start_server(tmp_path / "store", "--admin-token", ADMIN, "--notify-webhook",
                     hook.url + "/generic", "--notify-slack", hook.url + "/slack",
                     "--port", str(port), "--public-url", f"http://127.0.0.1:{port}")
    yield s
    stop_server(s)


def test_new_signature_and_regression_are_posted(server: Server, hook: Hook,
                                                 tmp_path: Path) -> None:
    first = upload_family(server, tmp_path, 0, 0, version="1.2")
    got = hook.wait_for(2)
    assert sorted(p for p, _ in got) == ["/generic", "/slack"]
    generic = next(b for p, b in got if p == "/generic")
    assert generic["event"] == "new_signature"
    assert generic["signature"]["exception"] == "KeyError"
    assert generic["signature"]["count"] == 1 and generic["signature"]["last_version"] == "1.2"
    assert generic["url"] == f"{server.url}/triage/{generic['signature']['hash']}"
    assert generic["bundle_url"] == first["url"]
    slack = next(b for p, b in got if p == "/slack")
    assert slack["text"].startswith("New crash in mytool: ")
    shown = generic["signature"]["text"].replace("<", "&lt;")  # Slack's escaping
    assert slack["blocks"][0]["text"]["text"] == (
        f"New crash in mytool 1.2: <{generic['url']}|{shown}>")

    upload_family(server, tmp_path, 0, 1, version="1.2")  # same signature: no event
    sig = signatures(server)["signatures"][0]
    requests.post(sig["api_url"], json={"status": "fixed", "fixed_in": "1.3"}, headers=AUTH,
                  timeout=10).raise_for_status()
    upload_family(server, tmp_path, 0, 2, version="1.3.1")
    got = hook.wait_for(4)
    assert len(got) == 4
    regression = next(b for p, b in got[2:] if p == "/generic")
    assert regression["event"] == "regression"
    assert regression["signature"]["status"] == "regressed"
    assert regression["signature"]["fixed_in"] == "1.3"
    assert next(b for p, b in got[2:] if p == "/slack")["text"].startswith("Regression in")


def test_a_stuck_webhook_never_blocks_uploads(server: Server, hook: Hook,
                                              tmp_path: Path) -> None:
    hook.gate.clear()  # the webhook accepts the request and then hangs
    upload_family(server, tmp_path, 1, 0)
    hook.wait_for(1)
    # more uploads (new signatures) complete while the first notification is still held
    for family in (2, 3, 4):
        upload_family(server, tmp_path, family, 0)
    assert signatures(server)["total"] == 4
    assert not hook.gate.is_set() and len(hook.received) == 1
    hook.gate.set()
    assert len(hook.wait_for(8)) == 8


def test_retries_a_failing_webhook_and_escapes_slack_text() -> None:
    attempts: list[int] = []

    class Flaky(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            attempts.append(1)
            self.send_response(503 if len(attempts) < 2 else 204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        n = Notifier([Target(f"http://127.0.0.1:{srv.server_port}/h", "json")], retries=3)
        n.notify("new", {"hash": "ab", "text": "t"}, "http://x/triage/ab", "http://x/b/1")
        assert n.flush(30)
        assert len(attempts) == 2
        n.close()
    finally:
        srv.shutdown()
        srv.server_close()
    body = slack_payload("new", {"app": "a", "text": "<!channel> & <http://evil|x>"},
                         "http://x/t", "http://x/b")
    line = body["blocks"][0]["text"]["text"]
    assert "<!channel>" not in line and "&lt;!channel&gt; &amp; &lt;http://evil|x&gt;" in line
