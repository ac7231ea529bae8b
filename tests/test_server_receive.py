"""The upload path in-process: the WSGI app fed real request bodies, stored on real files.

The sha256 of an upload is computed while it is copied in (not by reading the stored file
back); these tests check it against the bytes that were sent and the bytes that were kept.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from rage.fsutil import dumps_json
from rage.server.app import ReceiverApp, ServerConfig
from rage.server.storage import LocalStorage, StoredBundle, new_id, token_hash
from tests.test_server import build_bundle, default_files


def _post(app: ReceiverApp, body: bytes, ctype: str, *,
          length: bool = True) -> tuple[str, dict[str, Any]]:
    environ: dict[str, Any] = {"REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/bundles",
                               "CONTENT_TYPE": ctype, "wsgi.input": io.BytesIO(body),
                               "HTTP_HOST": "example.test", "wsgi.url_scheme": "http"}
    if length:
        environ["CONTENT_LENGTH"] = str(len(body))
    status: list[str] = []
    out = b"".join(app(environ, lambda s, _h: status.append(s)))
    return status[0], json.loads(out)


def _multipart(boundary: str, name: str, data: bytes) -> bytes:
    return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
            f"filename=\"b.tar.zst\"\r\nContent-Type: application/zstd\r\n\r\n").encode() + \
        data + f"\r\n--{boundary}--\r\n".encode()


@pytest.fixture
def app(tmp_path: Path) -> ReceiverApp:
    return ReceiverApp(LocalStorage(tmp_path / "store"), ServerConfig(max_bundle_size=8 << 20))


def _big_files() -> dict[str, bytes]:
    # incompressible, so the compressed upload spans several 256 KiB copy chunks
    return {**default_files(), "run/output.log": os.urandom(700_000)}


@pytest.mark.parametrize("files", [None, "big"])
@pytest.mark.parametrize("multipart", [False, True])
def test_sha256_and_size_are_of_the_bytes_sent_and_kept(
        app: ReceiverApp, tmp_path: Path, files: str | None, multipart: bool) -> None:
    bundle = build_bundle(tmp_path / "b.tar.zst", _big_files() if files else None)
    data = bundle.read_bytes()
    if multipart:
        status, body = _post(app, _multipart("xXx-b0", "file", data),
                             "multipart/form-data; boundary=xXx-b0")
    else:
        status, body = _post(app, data, "application/zstd", length=not files)
    assert status.startswith("201"), body
    meta = app.storage.get_meta(body["id"])
    assert meta.size == len(data)
    assert meta.sha256 == hashlib.sha256(data).hexdigest()
    with app.storage.open(body["id"]) as f:
        assert f.read() == data
    assert list(app.storage.tmp_dir().iterdir()) == []


def test_refused_upload_leaves_nothing_behind(app: ReceiverApp, tmp_path: Path) -> None:
    data = bytearray(build_bundle(tmp_path / "b.tar.zst").read_bytes())
    data[len(data) // 2] ^= 0xFF  # corrupt the compressed stream mid-way
    status, body = _post(app, bytes(data), "application/zstd")
    # flipped data inflates to a wrong member (a checksum mismatch) or fails to inflate
    assert status.startswith("400"), body
    assert any(w in body["error"] for w in ("corrupt", "checksum mismatch"))
    root = tmp_path / "store"
    assert [list((root / d).iterdir()) for d in ("bundles", "meta", "tmp")] == [[], [], []]


def test_meta_file_is_what_the_json_writer_of_rage_writes(tmp_path: Path) -> None:
    # the receiver writes meta with json.dumps for speed; the bytes must stay those of
    # rage.fsutil.dumps_json, which other tools and older files follow
    store = LocalStorage(tmp_path / "s")
    tmp = store.tmp_dir() / "up"
    tmp.write_bytes(b"x")
    manifest = {"app": "t\u00e9st \U0001f600", "note": "line\nbreak \"q\" \\ \u2028",
                "ratio": 1.5, "big": 10**20, "none": None, "ok": True, "empty": {},
                "list": [[], [1, {"a": []}]]}
    meta = StoredBundle(id=new_id(), created_at="2026-01-01T00:00:00+00:00", size=1,
                        sha256="0" * 64, delete_token_hash=token_hash("t"), manifest=manifest)
    store.put(tmp, meta)
    path = tmp_path / "s" / "meta" / f"{meta.id}.json"
    assert path.read_text("utf-8") == dumps_json(meta.to_dict()) + "\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert store.get_meta(meta.id) == meta


def test_admin_listing_skips_oversized_legacy_metas(tmp_path: Path) -> None:
    # a meta written before manifests were bounded can be tens of MB: the listing skips it
    store = LocalStorage(tmp_path / "s")
    for name, manifest in (("small", {"app": "a"}), ("huge", {"x": [0] * 1_000_000})):
        tmp = store.tmp_dir() / name
        tmp.write_bytes(b"x")
        store.put(tmp, StoredBundle(id=new_id(), created_at="2026-01-01T00:00:00+00:00",
                                    size=1, sha256="0" * 64, delete_token_hash=token_hash("t"),
                                    manifest=manifest))
    listed = store.list_recent(10)
    assert [b.manifest for b in listed] == [{"app": "a"}]


def _get(app: ReceiverApp, path: str, method: str = "GET") -> tuple[str, bytes]:
    path, _, query = path.partition("?")
    environ: dict[str, Any] = {"REQUEST_METHOD": method, "PATH_INFO": path,
                               "QUERY_STRING": query, "wsgi.input": io.BytesIO(b""),
                               "HTTP_HOST": "example.test", "wsgi.url_scheme": "http"}
    status: list[str] = []
    out = b"".join(app(environ, lambda s, _h: status.append(s)))
    return status[0], out


def test_a_page_is_built_from_the_bundle_once_and_forgotten_on_delete(
        app: ReceiverApp, tmp_path: Path) -> None:
    status, body = _post(app, build_bundle(tmp_path / "b.tar.zst").read_bytes(),
                         "application/zstd")
    assert status.startswith("201")
    bundle_id = body["id"]
    first = _get(app, f"/b/{bundle_id}")
    assert first[0].startswith("200") and b"needle: disk full" in first[1]
    # the second view does not read the bundle again: it works with the file gone
    data = tmp_path / "store" / "bundles" / f"{bundle_id}.tar.zst"
    kept = data.read_bytes()
    data.unlink()
    again = _get(app, f"/b/{bundle_id}")
    assert again[0].startswith("200") and b"needle: disk full" in again[1]
    data.write_bytes(kept)
    token = body["delete_token"]
    assert _get(app, f"/api/v1/bundles/{bundle_id}?token={token}", "DELETE")[0].startswith("200")
    assert app.page_members.get(bundle_id) is None
    assert _get(app, f"/b/{bundle_id}")[0].startswith("404")


_OPENS_PER_PUT = r"""
import sys
from pathlib import Path
from rage.server.storage import LocalStorage, StoredBundle, new_id, token_hash

root = Path(sys.argv[1])
store = LocalStorage(root)
opened = []
sys.addaudithook(lambda ev, args: opened.append(str(args[0])) if ev == "open" else None)
for _ in range(3):
    tmp = store.tmp_dir() / new_id()
    tmp.write_bytes(b"x")
    store.put(tmp, StoredBundle(id=new_id(), created_at="2026-01-01T00:00:00+00:00", size=1,
                                sha256="0" * 64, delete_token_hash=token_hash("t")))
print("\n".join(opened))
"""


def test_put_syncs_directories_without_opening_them(tmp_path: Path) -> None:
    # the directories' descriptors are opened once with the storage: an open and a close
    # of each per upload were measured syscalls on every upload (their syncs stay)
    import subprocess
    import sys

    root = tmp_path / "s"
    out = subprocess.run([sys.executable, "-c", _OPENS_PER_PUT, str(root)], check=True,
                         capture_output=True, text=True).stdout.split("\n")
    assert str(root / "meta") not in out and str(root / "bundles") not in out
    assert sum(p.startswith(str(root / "meta") + "/") for p in out) == 3  # the test sees opens
    assert len(list((root / "meta").iterdir())) == 3


_OPENS_PER_UPLOAD = r"""
import io, sys
from pathlib import Path
from rage.server.app import ReceiverApp, ServerConfig
from rage.server.storage import LocalStorage

root, bundle = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes()
app = ReceiverApp(LocalStorage(root), ServerConfig())
opened = []
sys.addaudithook(lambda ev, args: opened.append(str(args[0])) if ev == "open" else None)
environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/bundles",
           "CONTENT_TYPE": "application/zstd", "CONTENT_LENGTH": str(len(bundle)),
           "wsgi.input": io.BytesIO(bundle), "HTTP_HOST": "example.test"}
status = []
app(environ, lambda s, _h: status.append(s))
print(status[0])
print("\n".join(opened))
"""


def test_an_upload_opens_its_part_file_once(tmp_path: Path) -> None:
    # written, validated, synced and renamed through the descriptor it was created with
    import subprocess
    import sys

    root = tmp_path / "s"
    bundle = build_bundle(tmp_path / "b.tar.zst")
    status, *opened = subprocess.run(
        [sys.executable, "-c", _OPENS_PER_UPLOAD, str(root), str(bundle)], check=True,
        capture_output=True, text=True).stdout.split("\n")
    assert status.startswith("201"), status
    parts = [p for p in opened if p.startswith(str(root / "tmp") + "/upload-")]
    assert len(parts) == 1, parts
    assert len(list((root / "bundles").iterdir())) == 1
