"""Hostile uploads against a real `rage serve`: each one refused or bounded, nothing lost.

Every case here was first reproduced against the receiver as it was (a 500, a page of
hundreds of megabytes, a bundle stored with members hidden from the validator, a forged
log line); the tests pin the fix.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import zstandard

from tests.test_server import (
    ADMIN,
    Server,
    api_upload,
    build_bundle,
    default_files,
    make_manifest,
    reg,
    start_server,
    stop_server,
    tar_bytes,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("hostile") / "store", "--admin-token", ADMIN)
    yield s
    stop_server(s)


def _admin(server: Server) -> requests.Response:
    return requests.get(f"{server.url}/admin", headers={"Authorization": f"Bearer {ADMIN}"},
                        timeout=30)


def _zst(tar: bytes, path: Path) -> Path:
    path.write_bytes(zstandard.ZstdCompressor(level=19).compress(tar))
    return path


def _raw_manifest_bundle(path: Path, manifest_bytes: bytes) -> Path:
    return _zst(tar_bytes([reg("manifest.json", manifest_bytes)]), path)


def test_lone_surrogate_in_the_manifest_is_stored_and_every_page_renders(
        server: Server, tmp_path: Path) -> None:
    files = default_files()
    text = json.dumps(make_manifest(files, app="\ud800tool", note="bad \udcff byte"))
    assert "\\ud800" in text  # the JSON escape of a lone surrogate: valid JSON, invalid text
    r = api_upload(server, build_bundle(tmp_path / "s.tar.zst", files,
                                        manifest=json.loads(text)))
    assert r.status_code == 201, r.text
    page = requests.get(r.json()["url"], timeout=30)
    assert page.status_code == 200 and "\ufffdtool" in page.text
    assert _admin(server).status_code == 200
    assert requests.get(f"{server.url}/api/v1/bundles/{r.json()['id']}",
                        timeout=30).status_code == 200


def test_non_utf8_member_name_is_refused_with_a_4xx(server: Server, tmp_path: Path) -> None:
    files = default_files()
    name = "run/\udcff.log"  # the byte 0xff, as tarfile and json both spell it
    manifest = make_manifest({**files, name: b"x"})
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tar:
        for n, data in [("manifest.json", json.dumps(manifest).encode()), *files.items(),
                        (name, b"x")]:
            info = tarfile.TarInfo(n)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert b"run/\xff.log" in buf.getvalue()
    before = server.stored()
    r = api_upload(server, _zst(buf.getvalue(), tmp_path / "n.tar.zst"))
    assert r.status_code == 400 and "unsafe member name" in r.json()["error"], r.text
    assert server.stored() == before
    assert _admin(server).status_code == 200


def test_a_deeply_nested_manifest_is_a_4xx(server: Server, tmp_path: Path) -> None:
    deep = b'{"schema": 1, "files": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    before = server.stored()
    r = api_upload(server, _raw_manifest_bundle(tmp_path / "d.tar.zst", deep))
    assert r.status_code == 400 and "nested" in r.json()["error"], r.text
    assert server.stored() == before


def test_manifest_amplification_is_refused_before_it_is_parsed(server: Server,
                                                              tmp_path: Path) -> None:
    # 16 MiB of JSON that compresses to a couple of KiB
    huge = b'{"schema": 1, "files": [], "x": [' + b"[]," * (16 * 1024 * 1024 // 3) + b"[]]}"
    bundle = _raw_manifest_bundle(tmp_path / "m.tar.zst", huge)
    assert bundle.stat().st_size < 10_000
    before = server.stored()
    r = api_upload(server, bundle)
    # refused on the member's header (its size, not a parse), before reading its 16 MiB
    assert r.status_code == 413 and r.json()["error"] == (
        "bundle member manifest.json (16777252 bytes) is larger than the 262144-byte limit "
        "for it: refused"), r.text
    assert server.stored() == before


def test_a_manifest_of_many_small_values_is_refused(server: Server, tmp_path: Path) -> None:
    files = default_files()
    manifest = make_manifest(files, extra=[[] for _ in range(50_000)])
    assert len(json.dumps(manifest)) < 256 * 1024  # under the byte bound: the count stops it
    r = api_upload(server, build_bundle(tmp_path / "v.tar.zst", files, manifest=manifest))
    assert r.status_code == 400 and "values" in r.json()["error"], r.text


def test_what_is_stored_per_bundle_is_bounded(server: Server, tmp_path: Path) -> None:
    files = default_files()
    manifest = make_manifest(files, extra=[0] * 19_000)  # the most values allowed, nearly
    r = api_upload(server, build_bundle(tmp_path / "v.tar.zst", files, manifest=manifest))
    assert r.status_code == 201, r.text
    meta = server.storage / "meta" / f"{r.json()['id']}.json"
    # the manifest's bytes, depth and values are bounded, so its stored form is too
    assert meta.stat().st_size < 1024 * 1024


def test_page_amplification_is_bounded(server: Server, tmp_path: Path) -> None:
    files = default_files()
    files["run/output.log"] = b"\n" * (2 * 1024 * 1024)  # 2 MiB of empty lines
    files["run/stderr.log"] = b"\x1b[0m" * (512 * 1024)
    manifest = make_manifest(files, truncation=[{"name": "run/output.log", "x": "y"}] * 2000)
    bundle = build_bundle(tmp_path / "p.tar.zst", files, manifest=manifest)
    assert bundle.stat().st_size < 20_000
    r = api_upload(server, bundle)
    assert r.status_code == 201, r.text
    page = requests.get(r.json()["url"], timeout=60)
    assert page.status_code == 200
    assert len(page.content) < 1_500_000, len(page.content)
    assert "/files/run/output.log" in page.text  # the rest is a download away


def test_hidden_members_behind_a_bad_tar_header_are_refused(server: Server,
                                                           tmp_path: Path) -> None:
    files = default_files()
    head = tar_bytes([reg("manifest.json", json.dumps(make_manifest(files)).encode())]
                     + [reg(n, d) for n, d in files.items()]).rstrip(b"\0")
    head += b"\0" * (-len(head) % 512)
    bad = bytearray(512)
    bad[:4] = b"junk"
    bad[148:156] = b"0000000\0"
    hidden = tar_bytes([reg("run/stdout.log", b"hidden\n"), reg(".bashrc", b"evil\n")])
    before = server.stored()
    r = api_upload(server, _zst(head + bytes(bad) + hidden, tmp_path / "h.tar.zst"))
    assert r.status_code == 400 and "bad tar header" in r.json()["error"], r.text
    assert server.stored() == before


def test_member_names_cannot_forge_log_lines_and_stale_parts_are_swept(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "tmp").mkdir(parents=True, mode=0o700)
    stale = store / "tmp" / "upload-crashed.part"
    stale.write_bytes(b"x" * 1000)
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = store / "tmp" / "upload-live.part"  # another server's upload in progress
    fresh.write_bytes(b"y")
    log = tmp_path / "server.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rage", "serve", "--port", "0", "--storage", str(store)],
            stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1].rstrip("/")
        try:
            assert not stale.exists() and fresh.exists()
            forged = "run/x\n2026-01-01 00:00:00,000 rage.server: stored bundle FORGED"
            files = {**default_files(), forged: b"x", "run/\x1b[2Jclear": b"y"}
            body = io.BytesIO(zstandard.ZstdCompressor().compress(tar_bytes(
                [reg("manifest.json", json.dumps(make_manifest(files)).encode())]
                + [reg(n, d) for n, d in files.items()])))
            r = requests.post(f"{url}/api/v1/bundles", data=body, timeout=30)
            assert r.status_code == 400, r.text
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stdout.close()
    text = log.read_text("utf-8", "replace")
    assert "refused upload" in text
    assert not any(line.startswith("2026-01-01 00:00:00,000") for line in text.splitlines())
    assert "\x1b" not in text
    assert "swept 1 unfinished upload" in text


def test_hostile_uploads_alongside_good_ones_lose_nothing(server: Server, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    good = build_bundle(tmp_path / "good.tar.zst")
    deep = _raw_manifest_bundle(tmp_path / "deep.tar.zst", b'{"schema": 1, "files": [], "x": '
                                + b"[" * 100_000 + b"]" * 100_000 + b"}")
    huge = _raw_manifest_bundle(tmp_path / "huge.tar.zst", b'{"schema": 1, "x": ['
                                + b"[]," * 2_000_000 + b"[]]}")
    jobs = [good, deep, huge] * 8
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda p: api_upload(server, p), jobs))
    ok = [r.json()["id"] for r, p in zip(codes, jobs, strict=True) if p == good]
    assert [r.status_code for r in codes] == [201, 400, 413] * 8
    for bundle_id in ok:
        assert (server.storage / "meta" / f"{bundle_id}.json").exists()
        assert requests.get(f"{server.url}/b/{bundle_id}", timeout=30).status_code == 200
    assert not list((server.storage / "tmp").iterdir())


def test_guessing_the_admin_token_is_throttled(server: Server) -> None:
    login = f"{server.url}/admin/login"
    for _ in range(10):
        r = requests.post(login, data={"token": "guess"}, allow_redirects=False, timeout=10)
        assert r.status_code == 403
    # the eleventh try is refused without being checked, even with the right token
    r = requests.post(login, data={"token": ADMIN}, allow_redirects=False, timeout=10)
    assert r.status_code == 429 and "Set-Cookie" not in r.headers
    assert _admin(server).status_code == 200  # scripts with the Bearer token are unaffected
