"""`rage serve` end to end: a real server process on 127.0.0.1, real curl, real requests."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import struct
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import zstandard

pytest.importorskip("waitress")

ADMIN = "admin-secret-token"


# -- building real bundles --------------------------------------------------------------------

def default_files() -> dict[str, bytes]:
    lines = "".join(f"line {i}: working\n" for i in range(1, 40))
    return {
        "summary.md": b"# mytool failed\n\nexit 3\n",
        "run/meta.json": json.dumps({"id": "x", "status": "failed"}).encode(),
        "run/output.log": (lines + "needle: disk full\n").encode(),
        "run/log.jsonl": (json.dumps({"t": "2026-01-01T00:00:00Z", "level": "ERROR",
                                      "logger": "mytool.db", "msg": "cannot write",
                                      "exc": None}) + "\n").encode(),
        "run/traceback.txt": b'Traceback (most recent call last):\n  File "x.py", line 3, in '
                             b"<module>\n    main()\nOSError: disk full\n",
        "collectors/platform.json": json.dumps({
            "name": "platform", "status": "ok", "duration_s": 0.01, "error": None,
            "data": {"os": {"name": "Linux", "release": "6.1"}, "cpus": 2}}).encode(),
    }


def make_manifest(files: dict[str, bytes], **over: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "schema": 1, "created_at": "2026-01-01T00:00:00Z", "rage_version": "0.1",
        "app": "mytool", "app_version": "1.2.3",
        "run": {"id": "20260101T000000Z-abcdef12", "argv": ["mytool", "sync", "--all"],
                "cwd": "/home/u", "status": "failed", "exit_code": 3, "signal": None,
                "duration_s": 1.5, "started_at": "2026-01-01T00:00:00Z"},
        "note": "it broke after the update",
        "sections": {"platform": {"status": "ok", "duration_s": 0.01, "error": None}},
        "redaction_counts": {"email": 2}, "truncation": [],
        "files": [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                  for n, d in files.items()],
    }
    manifest.update(over)
    return manifest


def tar_bytes(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buf.getvalue()


def reg(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    return info, data


def build_bundle(path: Path, files: dict[str, bytes] | None = None, *,
                 manifest: dict[str, Any] | None = None,
                 extra: list[tuple[tarfile.TarInfo, bytes]] | None = None) -> Path:
    """A real .tar.zst bundle: manifest first, then ``files``, then ``extra`` members."""
    files = default_files() if files is None else files
    manifest = make_manifest(files) if manifest is None else manifest
    members = [reg("manifest.json", json.dumps(manifest).encode())]
    members += [reg(n, d) for n, d in files.items()]
    members += extra or []
    path.write_bytes(zstandard.ZstdCompressor().compress(tar_bytes(members)))
    return path


def bomb_bundle(path: Path, claimed: int = 2 * 1024**3) -> Path:
    """A ~64 KiB zstd frame that inflates to a tar holding ``claimed`` bytes of zeros.

    Hand-built from RLE blocks (zstd format spec, RFC 8878) so the test never has to
    compress gigabytes to make it.
    """
    out_info = tarfile.TarInfo("run/output.log")
    out_info.size = claimed
    manifest = make_manifest({})
    manifest["files"] = [{"name": "run/output.log", "size": claimed, "sha256": "0" * 64}]
    info, data = reg("manifest.json", json.dumps(manifest).encode())
    head = info.tobuf(tarfile.PAX_FORMAT) + data + b"\0" * (-len(data) % 512)
    head += out_info.tobuf(tarfile.PAX_FORMAT)
    block = 128 * 1024
    frame = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")  # no content size, 128 KiB window
    for i in range(0, len(head), block):
        chunk = head[i:i + block]
        frame += struct.pack("<I", len(chunk) << 3)[:3] + chunk  # raw block
    zeros = claimed + 1024  # the member's data, then the end-of-archive blocks
    while zeros:
        n = min(block, zeros)
        zeros -= n
        frame += struct.pack("<I", (n << 3) | (1 << 1) | (zeros == 0))[:3] + b"\x00"
    path.write_bytes(bytes(frame))
    return path


# -- a real server ----------------------------------------------------------------------------

@dataclass
class Server:
    url: str
    storage: Path
    proc: subprocess.Popen[str]

    def stored(self) -> set[str]:
        # the triage index (index.sqlite3*) is not a stored upload
        return {str(p.relative_to(self.storage)) for p in self.storage.rglob("*")
                if p.is_file() and not p.name.startswith("index.sqlite3")}


def launch_serve(args: list[str], env: dict[str, str] | None = None,
                 ) -> tuple[str, subprocess.Popen[str]]:
    """`rage serve --port 0 ARGS` started; its URL (the first line it prints) and process."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rage", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    first = proc.stdout.readline()
    m = re.search(r"(http://\S+?)/?$", first.strip())
    if not m:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        raise AssertionError(f"rage serve printed {first!r}")
    return m.group(1), proc


def start_server(storage: Path, *args: str, env: dict[str, str] | None = None) -> Server:
    url, proc = launch_serve(["--storage", str(storage), *args], env)
    return Server(url, storage, proc)


def stop_server(server: Server) -> None:
    server.proc.terminate()
    server.proc.wait(timeout=10)
    assert server.proc.stdout is not None
    server.proc.stdout.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("srv") / "store", "--admin-token", ADMIN,
                     "--max-bundle-size", "4MiB")
    yield s
    stop_server(s)


def api_upload(server: Server, path: Path, **kw: Any) -> requests.Response:
    with open(path, "rb") as f:
        return requests.post(f"{server.url}/api/v1/bundles", data=f, timeout=30,
                             headers={"Content-Type": "application/zstd", **kw.pop("headers", {})},
                             **kw)


def curl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["curl", "-sS", *args], capture_output=True, text=True, timeout=30,
                          check=False)


# -- uploads ----------------------------------------------------------------------------------

def test_first_line_is_url_and_landing_page_explains_upload(server: Server) -> None:
    r = requests.get(server.url + "/", timeout=10)
    assert r.status_code == 200
    assert "curl" in r.text and f"-F file=@bundle.tar.zst {server.url}/" in r.text
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Referrer-Policy"] == "no-referrer"
    assert "default-src 'none'" in r.headers["Content-Security-Policy"]


def test_curl_form_upload_prints_link_to_page(server: Server, tmp_path: Path) -> None:
    b = build_bundle(tmp_path / "b.tar.zst")
    p = curl("-F", f"file=@{b}", server.url + "/")
    assert p.returncode == 0, p.stderr
    link = p.stdout
    assert re.fullmatch(re.escape(server.url) + r"/b/[A-Za-z0-9_-]{22,}\n", link)
    page = requests.get(link.strip(), timeout=10)
    assert page.status_code == 200
    assert "mytool sync --all" in page.text and "it broke after the update" in page.text
    raw = requests.get(link.strip() + ".tar.zst", timeout=10)
    assert raw.content == b.read_bytes()
    assert raw.headers["Content-Disposition"].startswith("attachment")


def test_curl_put_upload_prints_link(server: Server, tmp_path: Path) -> None:
    b = build_bundle(tmp_path / "b.tar.zst")
    p = curl("-T", str(b), server.url + "/")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(server.url + "/b/") and p.stdout.endswith("\n")
    raw = requests.get(p.stdout.strip() + ".tar.zst", timeout=10)
    assert raw.content == b.read_bytes()


def test_json_api_upload_and_metadata(server: Server, tmp_path: Path) -> None:
    b = build_bundle(tmp_path / "b.tar.zst")
    r = api_upload(server, b)
    assert r.status_code == 201, r.text
    body = r.json()
    assert set(body) == {"id", "url", "raw_url", "delete_url", "delete_token"}
    assert len(body["id"]) >= 22 and body["url"] == f"{server.url}/b/{body['id']}"
    meta = requests.get(f"{server.url}/api/v1/bundles/{body['id']}", timeout=10).json()
    assert meta["manifest"]["app"] == "mytool" and meta["raw_url"] == body["raw_url"]
    assert meta["sha256"] == hashlib.sha256(b.read_bytes()).hexdigest()
    stored = json.loads((server.storage / "meta" / f"{body['id']}.json").read_text())
    assert body["delete_token"] not in json.dumps(stored)  # only a hash is kept
    for p in (server.storage / "meta" / f"{body['id']}.json",
              server.storage / "bundles" / f"{body['id']}.tar.zst"):
        assert p.stat().st_mode & 0o777 == 0o600
    assert server.storage.stat().st_mode & 0o777 == 0o700


def test_multipart_to_json_api(server: Server, tmp_path: Path) -> None:
    b = build_bundle(tmp_path / "b.tar.zst")
    with open(b, "rb") as f:
        r = requests.post(f"{server.url}/api/v1/bundles", timeout=30,
                          files=[("other", ("x.txt", b"ignored")), ("file", ("b.tar.zst", f))])
    assert r.status_code == 201, r.text
    assert requests.get(r.json()["raw_url"], timeout=10).content == b.read_bytes()


def test_twenty_concurrent_uploads_none_lost(server: Server, tmp_path: Path) -> None:
    bundles = []
    for i in range(20):
        files = default_files()
        files["run/output.log"] = os.urandom(50_000) + f"upload {i}\n".encode()
        bundles.append(build_bundle(tmp_path / f"b{i}.tar.zst", files))
    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda b: api_upload(server, b), bundles))
    assert [r.status_code for r in results] == [201] * 20
    ids = {r.json()["id"] for r in results}
    assert len(ids) == 20
    for b, r in zip(bundles, results, strict=True):
        assert requests.get(r.json()["raw_url"], timeout=10).content == b.read_bytes()


# -- hostile uploads --------------------------------------------------------------------------

def hostile(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"{kind}.tar.zst"
    files = default_files()
    if kind == "traversal":
        return build_bundle(p, {**files, "../evil": b"x"})
    if kind == "absolute":
        return build_bundle(p, {**files, "/tmp/evil-rage-abs": b"x"})
    if kind == "symlink":
        link = tarfile.TarInfo("run/evil-link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        return build_bundle(p, files, extra=[(link, b"")])
    if kind == "device":
        dev = tarfile.TarInfo("run/evil-dev")
        dev.type = tarfile.CHRTYPE
        return build_bundle(p, files, extra=[(dev, b"")])
    if kind == "bad-manifest":
        data = zstandard.ZstdCompressor().compress(tar_bytes([reg("manifest.json", b"{nope")]))
        p.write_bytes(data)
        return p
    if kind == "manifest-not-first":
        data = tar_bytes([reg("run/output.log", b"hi"),
                          reg("manifest.json", json.dumps(make_manifest({})).encode())])
        p.write_bytes(zstandard.ZstdCompressor().compress(data))
        return p
    if kind == "checksum":
        manifest = make_manifest(files)
        manifest["files"][2]["sha256"] = "0" * 64
        return build_bundle(p, files, manifest=manifest)
    if kind == "unlisted":
        return build_bundle(p, files, extra=[reg("run/extra.txt", b"not in the manifest")])
    if kind == "random":
        p.write_bytes(os.urandom(100_000))
        return p
    if kind == "truncated":
        data = build_bundle(p).read_bytes()
        p.write_bytes(data[: len(data) // 2])
        return p
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["traversal", "absolute", "symlink", "device", "bad-manifest",
                                  "manifest-not-first", "checksum", "unlisted", "random",
                                  "truncated"])
def test_hostile_upload_refused_nothing_kept(server: Server, tmp_path: Path, kind: str) -> None:
    before = server.stored()
    r = api_upload(server, hostile(tmp_path, kind))
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error and "\n" not in error
    assert server.stored() == before
    assert not os.path.exists("/tmp/evil-rage-abs")
    assert not (server.storage.parent / "evil").exists()


def test_hostile_curl_form_upload_gets_json_error(server: Server, tmp_path: Path) -> None:
    before = server.stored()
    p = curl("-F", f"file=@{hostile(tmp_path, 'traversal')}", "-w", "\n%{http_code}",
             server.url + "/")
    body, code = p.stdout.rsplit("\n", 1)
    assert code == "400" and "unsafe member name" in json.loads(body)["error"]
    assert server.stored() == before


def test_decompression_bomb_refused_quickly(server: Server, tmp_path: Path) -> None:
    bomb = bomb_bundle(tmp_path / "bomb.tar.zst")
    assert bomb.stat().st_size < 200_000
    before = server.stored()
    r = api_upload(server, bomb)
    assert r.status_code == 413, r.text
    # refused on the member's header, before inflating a byte of its 2 GiB
    assert r.json()["error"] == (
        "bundle member 'run/output.log' (2147483648 bytes) exceeds the 536870912-byte "
        "decompressed-size limit: refused")
    assert server.stored() == before


def test_oversize_refused_by_length_and_while_streaming(server: Server, tmp_path: Path) -> None:
    big = tmp_path / "big.tar.zst"
    big.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(5 * 1024 * 1024))
    before = server.stored()
    r = api_upload(server, big)
    assert r.status_code == 413 and "limit" in r.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked, counted while streaming
        data = big.read_bytes()
        for i in range(0, len(data), 65536):
            yield data[i:i + 65536]

    r = requests.post(f"{server.url}/api/v1/bundles", data=chunks(), timeout=30)
    assert r.status_code == 413 and "limit" in r.json()["error"]
    p = curl("-F", f"file=@{big}", "-w", "\n%{http_code}", server.url + "/")
    assert p.stdout.endswith("\n413")
    assert server.stored() == before


def test_empty_and_fieldless_uploads(server: Server) -> None:
    r = requests.post(f"{server.url}/api/v1/bundles", data=b"", timeout=10)
    assert r.status_code == 400
    r = requests.post(server.url + "/", files={"notfile": ("a", b"x")}, timeout=10)
    assert r.status_code == 400 and "'file'" in r.json()["error"]


# -- reading ----------------------------------------------------------------------------------

def test_page_escapes_everything_from_the_bundle(server: Server, tmp_path: Path) -> None:
    files = default_files()
    files["run/output.log"] = b"<script>alert(2)</script>\n"
    files["run/log.jsonl"] = json.dumps({"level": "<b>ERROR", "logger": "x",
                                         "msg": "<img src=x onerror=alert(4)>"}).encode()
    manifest = make_manifest(files, note='"><img src=x onerror=alert(3)>')
    manifest["run"]["argv"] = ["sh", "-c", "<script>alert(1)</script>"]
    r = api_upload(server, build_bundle(tmp_path / "x.tar.zst", files, manifest=manifest))
    assert r.status_code == 201, r.text
    page = requests.get(r.json()["url"], timeout=10)
    text = page.text
    assert "<script>alert" not in text and "<img src=x" not in text and "<b>ERROR" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in text
    assert "&#34;&gt;&lt;img src=x onerror=alert(3)&gt;" in text
    nonce = re.search(r"'nonce-([^']+)'", page.headers["Content-Security-Policy"])
    assert nonce is not None
    scripts = re.findall(r"<script[^>]*>", text)
    assert scripts == [f'<script nonce="{nonce.group(1)}">']


def test_page_shows_summary_traceback_logs_and_collectors(server: Server, tmp_path: Path) -> None:
    r = api_upload(server, build_bundle(tmp_path / "b.tar.zst"))
    text = requests.get(r.json()["url"], timeout=10).text
    summary_at = text.index("mytool sync --all")
    assert summary_at < text.index("Traceback (most recent call last)")
    assert '<div class="exc">OSError: disk full</div>' in text
    assert '<span class="n">40</span><span>needle: disk full</span>' in text
    assert 'class="lvl-ERROR">ERROR' in text and "cannot write" in text
    assert "<th>os.release</th><td>6.1</td>" in text
    assert "<th>email</th><td>2</td>" in text
    assert f'href="{r.json()["raw_url"]}"' in text
    assert requests.get(f"{server.url}/b/{'A' * 22}", timeout=10).status_code == 404


def test_delete_with_right_and_wrong_token(server: Server, tmp_path: Path) -> None:
    body = api_upload(server, build_bundle(tmp_path / "b.tar.zst")).json()
    api = f"{server.url}/api/v1/bundles/{body['id']}"
    assert requests.delete(api, timeout=10).status_code == 401
    wrong = requests.delete(api, headers={"Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 403
    assert requests.get(body["url"], timeout=10).status_code == 200
    ok = requests.delete(api, headers={"Authorization": f"Bearer {body['delete_token']}"},
                         timeout=10)
    assert ok.status_code == 200
    assert requests.get(body["url"], timeout=10).status_code == 404
    assert requests.get(body["raw_url"], timeout=10).status_code == 404
    assert not any(body["id"] in name for name in server.stored())


def test_delete_url_browser_form(server: Server, tmp_path: Path) -> None:
    body = api_upload(server, build_bundle(tmp_path / "b.tar.zst")).json()
    form = requests.get(body["delete_url"], timeout=10)
    assert form.status_code == 200 and '<form method="post"' in form.text
    assert requests.get(body["url"], timeout=10).status_code == 200  # GET deletes nothing
    action = f"{server.url}/b/{body['id']}/delete"
    assert requests.post(action, data={"token": "wrong"}, timeout=10).status_code == 403
    done = requests.post(action, data={"token": body["delete_token"]}, timeout=10)
    assert done.status_code == 200
    assert requests.get(body["url"], timeout=10).status_code == 404


def test_admin_index_gated(server: Server, tmp_path: Path) -> None:
    body = api_upload(server, build_bundle(tmp_path / "b.tar.zst")).json()
    assert requests.get(f"{server.url}/admin", timeout=10).status_code == 401
    bad = requests.get(f"{server.url}/admin", headers={"Authorization": "Bearer x"}, timeout=10)
    assert bad.status_code == 403
    ok = requests.get(f"{server.url}/admin", headers={"Authorization": f"Bearer {ADMIN}"},
                      timeout=10)
    assert ok.status_code == 200 and body["id"] in ok.text
    # a token in the URL leaks into logs and history: not accepted
    assert requests.get(f"{server.url}/admin?token={ADMIN}", timeout=10).status_code == 401


def test_upload_token_enforced_admin_disabled(tmp_path: Path) -> None:
    s = start_server(tmp_path / "store", env={"RAGE_SERVER_UPLOAD_TOKEN": "up-tok"})
    try:
        b = build_bundle(tmp_path / "b.tar.zst")
        r = api_upload(s, b)
        assert r.status_code == 401 and "token" in r.json()["error"]
        assert api_upload(s, b, headers={"Authorization": "Bearer wrong"}).status_code == 401
        p = curl("-F", f"file=@{b}", "-w", "\n%{http_code}", s.url + "/")
        assert p.stdout.endswith("\n401")
        assert s.stored() == set()
        ok = api_upload(s, b, headers={"Authorization": "Bearer up-tok"})
        assert ok.status_code == 201
        assert requests.get(f"{s.url}/admin?token=x", timeout=10).status_code == 404
    finally:
        stop_server(s)


def test_bad_flags_are_one_line_errors(tmp_path: Path) -> None:
    from tests.conftest import run_rage

    p = run_rage("serve", "--public-url", "ftp://x", "--storage", str(tmp_path / "s"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    p = run_rage("serve", "--max-bundle-size", "lots", "--storage", str(tmp_path / "s"))
    assert p.returncode == 2 and "not a size" in p.stderr and "Traceback" not in p.stderr
    for flag, value in (("--connection-limit", "0"), ("--channel-timeout", "-1"),
                        ("--max-manifest-size", "big")):
        p = run_rage("serve", flag, value, "--storage", str(tmp_path / "s"))
        assert p.returncode == 2 and flag in p.stderr and "Traceback" not in p.stderr


# -- with rage's own bundle writer and uploader -----------------------------------------------

def test_rage_uploader_and_bundle_writer(server: Server, tmp_path: Path) -> None:
    bundle = pytest.importorskip("rage.bundle")
    upload = pytest.importorskip("rage.upload")
    from rage.config import Settings

    files = default_files()
    members: list[tuple[str, bytes | Path]] = [
        ("manifest.json", json.dumps(make_manifest(files)).encode()), *files.items()]
    path = tmp_path / "real.tar.zst"
    bundle.write_bundle(path, members, mtime=time.time())
    result = upload.upload_bundle(path, target=server.url + "/",
                                  settings=Settings(upload_protocol="receiver", allow_http=True))
    assert result.url.startswith(server.url + "/b/")
    assert result.delete_url and "token=" in result.delete_url
    assert requests.get(result.url + ".tar.zst", timeout=10).content == path.read_bytes()
    assert "mytool sync --all" in requests.get(result.url, timeout=10).text


def test_a_report_compressed_by_the_redaction_workers_is_accepted(
        server: Server, tmp_path: Path) -> None:
    """A run file past LEARNED_MAX reaches the bundle as the workers' frames: the receiver
    checks every member's sha256 across them and shows the output's end on its page."""
    from rage.defaults import LEARNED_MAX
    from tests.conftest import run_rage
    from tests.test_select import record

    lines = [b"2026-12-02 INFO step %07d of an ordinary run\n" % i
             for i in range(LEARNED_MAX // 40 + 20_000)]
    lines.append(b"fatal: the last line of a large run\n")
    record("bigtool", ["bigtool", "--all"], 1, output=b"".join(lines))
    out = tmp_path / "big.tar.zst"
    proc = run_rage("report", "--last", "--yes", "--no-collect", "--output", str(out),
                    env=dict(os.environ, RAGE_BUNDLE_MAX_BYTES="64MiB"))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size < len(lines) * 10  # compressed, many frames
    r = api_upload(server, out)
    assert r.status_code in (200, 201), r.text
    page = requests.get(r.json()["url"], timeout=10).text
    assert "fatal: the last line of a large run" in page
