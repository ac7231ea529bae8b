"""Local HTTP servers and fake bundles for the upload tests, and link-parsing tests.

Servers bind 127.0.0.1 port 0 and run in a thread; each request is recorded (method, path,
headers, body) and answered from a script of replies (the last one repeats).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import ssl
import tarfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rage.config import Settings
from rage.errors import UploadError
from rage.upload import make_uploader, upload_bundle


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # read the request, then never answer
    trickle: float = 0.0  # seconds between bytes of the answer (a server that stalls)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    size: int
    sha256: str
    body: bytes | None  # kept when small
    time: float


class FakeServer:
    """A scripted HTTP(S) server on 127.0.0.1; ``with FakeServer([...]) as s: s.url``."""

    def __init__(self, replies: Sequence[Reply], *, tls: ssl.SSLContext | None = None,
                 keep_body_max: int = 4 * 1024 * 1024) -> None:
        self.replies = list(replies)
        self.seen: list[Seen] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.keep_body_max = keep_body_max
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                h = hashlib.sha256()
                kept = bytearray()
                left = n
                while left:
                    chunk = self.rfile.read(min(left, 1024 * 1024))
                    if not chunk:
                        break
                    left -= len(chunk)
                    h.update(chunk)
                    if n <= server.keep_body_max:
                        kept += chunk
                with server.lock:
                    server.seen.append(Seen(
                        self.command, self.path, dict(self.headers.items()), n - left,
                        h.hexdigest(), bytes(kept) if n <= server.keep_body_max else None,
                        time.monotonic()))
                    i = min(len(server.seen), len(server.replies)) - 1
                    reply = server.replies[i]
                if reply.hang:
                    server.release.wait(60)
                    self.close_connection = True
                    return
                body = reply.body.replace(b"{base}", server.url.encode())
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v.replace("{base}", server.url))
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if reply.trickle:
                        self.wfile.flush()
                        for i in range(len(body)):
                            if server.release.wait(reply.trickle):
                                break
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                    else:
                        self.wfile.write(body)
                except OSError:
                    self.close_connection = True

            do_POST = do_PUT = do_GET = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


def make_bundle(path: Path, *, app: str = "mytool", status: str = "failed", exit_code: int = 1,
                extra: Sequence[tuple[str, bytes]] = (), filler: int = 0,
                summary: bytes | None = None) -> Path:
    """A real .tar.zst bundle: manifest.json, summary.md, run/output.log, extras, filler."""
    import hashlib
    import os

    import zstandard

    members: list[tuple[str, bytes]] = [
        ("summary.md", summary if summary is not None
         else f"# {app} {status}\n\nexit code {exit_code}\n".encode()),
        ("run/output.log", b"starting\nerror: disk on fire\n"),
        *extra,
    ]
    if filler:
        members.append(("run/blob.bin", os.urandom(filler)))
    # a manifest that lists every member with its checksum: a bundle `rage send` accepts
    files = [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
             for n, d in members]
    manifest = {"schema": 1, "app": app, "run": {"app": app, "status": status,
                "exit_code": exit_code, "signal": None, "argv": [app, "sync", "--all"]},
                "files": files}
    members.insert(0, ("manifest.json", json.dumps(manifest).encode()))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, \
            zstandard.ZstdCompressor(level=1).stream_writer(raw, closefd=False) as zw, \
            tarfile.open(fileobj=zw, mode="w|") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def fast(**kw: Any) -> Settings:
    kw.setdefault("upload_timeout", 5.0)
    return Settings(**kw)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return make_bundle(tmp_path / "rage-home" / "mytool" / "reports" / "r1.tar.zst")


@contextlib.contextmanager
def serving(*replies: Reply, **kw: Any) -> Iterator[FakeServer]:
    with FakeServer(replies, **kw) as s:
        yield s


# --- link parsing, one response style each -------------------------------------------------

@pytest.mark.parametrize("field_name", ["url", "link", "html_url", "href"])
def test_link_from_json_field(bundle: Path, field_name: str) -> None:
    body = json.dumps({"id": "x", field_name: "{base}/b/abc"}).encode()
    with serving(Reply(200, body, {"Content-Type": "application/json"})) as s:
        r = upload_bundle(bundle, target=s.url + "/", settings=fast())
    assert r.url == f"{s.url}/b/abc"
    assert r.protocol == "multipart"
    assert r.bundle == str(bundle)


def test_link_from_location_header_relative(bundle: Path) -> None:
    with serving(Reply(201, b"", {"Location": "/b/loc1"})) as s:
        r = upload_bundle(bundle, target=s.url + "/up", settings=fast())
    assert r.url == f"{s.url}/b/loc1"


def test_link_from_text_body(bundle: Path) -> None:
    # 0x0.st answers with the URL and a newline
    with serving(Reply(200, b"{base}/Xy1.tar.zst\n", {"X-Token": "secret"})) as s:
        r = upload_bundle(bundle, target=s.url, settings=fast())
    assert r.url == f"{s.url}/Xy1.tar.zst"


def test_no_link_is_an_upload_error(bundle: Path) -> None:
    with serving(Reply(200, b"thanks!")) as s, pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=s.url, settings=fast())
    assert "no link" in ei.value.message
    assert ei.value.bundle == str(bundle)


def test_json_field_wins_over_location(bundle: Path) -> None:
    body = b'{"url": "{base}/json"}'
    with serving(Reply(201, body, {"Location": "{base}/loc"})) as s:
        r = make_uploader(s.url, fast()).upload(bundle)
    assert r.url.endswith("/json")
