"""Unauthenticated uploads and downloads meant to take the receiver down, against a real
`rage serve` (issue 35's availability items): each one is refused or served within bounds,
and while it is in flight the receiver still answers ``/healthz`` within a second and its
memory stays within 100 MiB of what it was idle.

Each case was first reproduced against the receiver as it was: a quadratic regex held the
interpreter for seconds, an extended tar header was read whole into memory, a million
directory entries were walked at every download, a slow reader held a worker thread.
"""

from __future__ import annotations

import functools
import io
import json
import socket
import struct
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
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

MiB = 1024 * 1024
HEALTH_WITHIN = 1.0  # seconds: issue 35's "Done when"
RSS_SLACK = 100 * MiB  # the same: memory within 100 MiB of idle


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("hostile-more") / "store")
    yield s
    stop_server(s)


@dataclass
class Watch:
    """What the receiver did while an attack was in flight."""

    result: Any
    health_checks: int
    rss_growth: int  # the peak RSS seen, less the RSS before the attack


def under_attack(server: Server, attack: Callable[[], Any], *, min_checks: int = 3) -> Watch:
    """Run ``attack`` in a thread; meanwhile ask /healthz (each answer due within
    HEALTH_WITHIN: a timeout fails the test) and sample the server's RSS."""
    proc = psutil.Process(server.proc.pid)
    idle = proc.memory_info().rss
    peak = idle
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = attack()
        except BaseException as e:  # handed to the test below
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    checks = 0
    while t.is_alive() or checks < min_checks:
        r = requests.get(f"{server.url}/healthz", timeout=HEALTH_WITHIN)
        assert r.status_code == 200 and r.json() == {"status": "ok"}
        checks += 1
        peak = max(peak, proc.memory_info().rss)
        time.sleep(0.05)
    t.join()
    peak = max(peak, proc.memory_info().rss)
    if "error" in out:
        raise out["error"]
    return Watch(out.get("result"), checks, peak - idle)


def _bundle_with(tmp_path: Path, name: str, **files: bytes) -> Path:
    return build_bundle(tmp_path / name, {**default_files(), **files})


# -- 1. quadratic regexes on uploaded text --------------------------------------------------

BLANKS = 60_000  # issue 35: 11.8 s to sign a 411-byte bundle


@pytest.mark.parametrize("member,text", [
    ("run/traceback.txt", 'Traceback (most recent call last):\n  File "x", line 1, in a'
     + " " * BLANKS + "b\nValueError: x\n"),
    ("run/stderr.log", 'Traceback (most recent call last):\n  File "x", line 1, in a'
     + " " * BLANKS + "b\nValueError: x\n"),
    ("run/fatal.log", 'Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most '
     'recent call first):\n  File "x", line 1 in a' + " " * BLANKS + "b\n"),
])
def test_a_line_of_blanks_does_not_hold_the_receiver(server: Server, tmp_path: Path,
                                                     member: str, text: str) -> None:
    # without a traceback.txt the signature looks for one in the output, or a dump
    files = {n: d for n, d in default_files().items() if n != "run/traceback.txt"}
    files[member] = text.encode()
    run = {"argv": ["mytool"], "status": "crashed", "exit_code": None, "signal": 11}
    manifest = make_manifest(files, **({"run": run} if member == "run/fatal.log" else {}))
    bundle = build_bundle(tmp_path / "q.tar.zst", files, manifest=manifest)
    assert bundle.stat().st_size < 2000
    watch = under_attack(server, lambda: api_upload(server, bundle))
    assert watch.result.status_code == 201, watch.result.text
    assert watch.rss_growth < RSS_SLACK


# -- 2. extended tar headers: pax and GNU long names ----------------------------------------

def rle_zst(*parts: bytes | int) -> bytes:
    """A zstd frame of raw blocks (bytes) and runs of zero bytes (int) in RLE blocks (RFC
    8878): gigabytes of zeros in a few bytes, without compressing them in the test."""
    block = 128 * 1024
    pieces: list[tuple[int, bytes]] = []  # (block type, raw bytes or the run's length)
    for part in parts:
        if isinstance(part, bytes):
            pieces += [(0, part[i:i + block]) for i in range(0, len(part), block)]
        else:
            pieces += [(1, struct.pack("<I", min(block, part - i)))
                       for i in range(0, part, block)]
    frame = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")  # no content size, 128 KiB window
    for n, (kind, data) in enumerate(pieces):
        size = len(data) if kind == 0 else struct.unpack("<I", data)[0]
        last = n == len(pieces) - 1
        frame += struct.pack("<I", (size << 3) | (kind << 1) | last)[:3]
        frame += data if kind == 0 else b"\x00"
    return bytes(frame)


def extended_header(kind: bytes, size: int) -> bytes:
    """A tar header announcing ``size`` bytes of pax ('x') or GNU long-name ('L') data."""
    info = tarfile.TarInfo("././@PaxHeader" if kind == tarfile.XHDTYPE else "././@LongLink")
    info.type = kind
    info.size = size
    return info.tobuf(tarfile.USTAR_FORMAT if kind == tarfile.XHDTYPE else tarfile.GNU_FORMAT)


def _refused(server: Server, body: bytes, *words: str) -> Watch:
    """Upload ``body`` while watching the receiver; it must be a 4xx JSON error naming
    ``words``, and nothing may be stored."""
    before = server.stored()

    def upload() -> requests.Response:
        return requests.post(f"{server.url}/api/v1/bundles", data=body, timeout=120,
                             headers={"Content-Type": "application/zstd"})

    watch = under_attack(server, upload)
    r = watch.result
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    assert all(w in r.json()["error"] for w in words), r.text
    assert server.stored() == before
    assert watch.rss_growth < RSS_SLACK, watch.rss_growth
    return watch


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME])
def test_an_extended_header_declaring_200_mib_is_refused_unread(server: Server,
                                                                 kind: bytes) -> None:
    declared = 200 * MiB  # read whole into memory by tarfile, then copied: about 3x
    body = rle_zst(extended_header(kind, declared), declared + (-declared % 512) + 1024)
    assert len(body) < 16 * 1024
    _refused(server, body, "extended tar header", "refused")


@pytest.mark.parametrize("payload", [
    b"1" * (64 * 1024 - 1),  # the hdrcharset search: quadratic in a run of digits
    b"2 " * (32 * 1024 - 2) + b"=\n",  # the record loop: each record scans to the "="
], ids=["digits", "records"])
def test_the_cve_2024_6232_pax_header_is_refused_at_once(server: Server,
                                                         payload: bytes) -> None:
    # under MAX_EXTENDED: the receiver's own pax parser, not the size bound, refuses it
    assert len(payload) < 64 * 1024
    tar = extended_header(tarfile.XHDTYPE, len(payload)) + payload
    body = zstandard.ZstdCompressor(level=19).compress(tar + b"\0" * (-len(tar) % 512 + 1024))
    assert len(body) < 120  # issue 35: a 98-byte upload held the server 67 s
    _refused(server, body, "malformed pax header")


def test_a_pax_header_of_many_records_is_refused(server: Server) -> None:
    # well-formed, under the size bound: 13,000 records, each parsed in Python, per header
    payload = b"5 a=\n" * 13_000
    tar = extended_header(tarfile.XHDTYPE, len(payload)) + payload
    body = zstandard.ZstdCompressor(level=19).compress(tar + b"\0" * (-len(tar) % 512 + 1024))
    _refused(server, body, "more than 64 records")


def test_a_chain_of_pax_headers_is_refused(server: Server) -> None:
    record = b"18 comment=abcdef\n"
    one = extended_header(tarfile.XHDTYPE, len(record)) + record + b"\0" * (512 - len(record))
    body = zstandard.ZstdCompressor().compress(one * 5000 + b"\0" * 1024)
    _refused(server, body, "extended tar headers in a row")


# -- 3. entries the manifest does not list ---------------------------------------------------

def test_directory_entries_are_refused(server: Server) -> None:
    body, _ = _directory_bomb(20_000)  # issue 35: a million, accepted after 21.5 s
    _refused(server, body, "'d/0' is a directory", "refused")


def test_file_entries_the_manifest_does_not_list_are_refused(server: Server) -> None:
    # the same bomb made of empty files: refused at the first, not after a walk of them all
    files = default_files()
    empties = [reg(f"f/{i}", b"") for i in range(20_000)]
    tar = tar_bytes([reg("manifest.json", json.dumps(make_manifest(files)).encode()),
                     *(reg(n, d) for n, d in files.items()), *empties])
    watch = _refused(server, zstandard.ZstdCompressor(level=19).compress(tar),
                     "f/0: not listed in the manifest")
    assert watch.health_checks >= 3


@pytest.mark.parametrize("fmt", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT])
def test_extended_headers_of_real_bundles_read_as_tarfile_reads_them(fmt: int) -> None:
    # the bounded parser replaces tarfile's for every header: what it reads must not change
    from rage.bundle.stream import iter_members

    names = ["manifest.json", "run/" + "x" * 300 + ".log", "collectors/\u00e9t\u00e9.json",
             "run/attachments/" + "\u00fc" * 200, "run/one"]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for i, name in enumerate(names):
            info = tarfile.TarInfo(name)
            info.size = 1000 * i + 1
            info.mtime = 1_700_000_000.5
            tar.addfile(info, io.BytesIO(bytes([65 + i]) * info.size))
    body = io.BytesIO(zstandard.ZstdCompressor().compress(buf.getvalue()))
    expected = []
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar:
        for info in tar:
            data = tar.extractfile(info)
            assert data is not None
            expected.append((info.name, data.read()))
    got = [(m.name, m.read(10**6)) for m in iter_members(body, 10**8)]
    assert got == expected


# -- 4. slow readers ----------------------------------------------------------------------

def _slow_reader(server: Server, path: str) -> socket.socket:
    """A client that asks for ``path``, takes the response's first bytes, then stops
    reading (a tiny receive window: the server's sends stall at once)."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect((host, int(port)))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    assert s.recv(1024).startswith(b"HTTP/1.1 200")
    return s


def test_slow_readers_of_a_large_member_hold_no_worker(server: Server, tmp_path: Path) -> None:
    from rage.server.downloads import MAX_STREAMS

    # larger than what waitress buffers for a response (16 MiB) before its worker waits
    big = b"".join(b"line %d: nothing to see\n" % i for i in range(1_600_000))
    assert len(big) > 32 * MiB
    r = api_upload(server, _bundle_with(tmp_path, "big.tar.zst", **{"run/output.log": big}))
    assert r.status_code == 201, r.text
    path = f"/b/{r.json()['id']}/files/run/output.log"
    proc = psutil.Process(server.proc.pid)
    fds = proc.num_fds()
    # as many as the server has workers (8), and as many as may stream at once
    readers = [_slow_reader(server, path) for _ in range(MAX_STREAMS)]
    try:
        watch = under_attack(server, lambda: time.sleep(2))
        assert watch.rss_growth < RSS_SLACK, watch.rss_growth
        # one download more waits for a slot: refused at once, not more memory
        more = requests.get(server.url + path, timeout=30)
        assert more.status_code == 503 and more.headers["Retry-After"] == "5"
        assert "downloads are in progress" in more.json()["error"]
    finally:
        for s in readers:
            s.close()
    # each slow reader's member, its stored file and its slot are released with its
    # connection; then a reader at full speed gets every byte
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        whole = requests.get(server.url + path, timeout=60)
        if whole.status_code == 200 and proc.num_fds() <= fds + 2:
            break
        time.sleep(0.2)
    assert whole.status_code == 200 and whole.content == big
    assert proc.num_fds() <= fds + 2


def test_member_downloads_small_empty_and_head(server: Server, tmp_path: Path) -> None:
    r = api_upload(server, _bundle_with(tmp_path, "s.tar.zst", **{"run/empty.log": b""}))
    assert r.status_code == 201, r.text
    base = f"{server.url}/b/{r.json()['id']}/files/"
    small = requests.get(base + "run/output.log", timeout=30)
    assert small.status_code == 200 and small.content == default_files()["run/output.log"]
    assert small.headers["Content-Disposition"].startswith('attachment; filename="output.log"')
    empty = requests.get(base + "run/empty.log", timeout=30)
    assert empty.status_code == 200 and empty.content == b""
    head = requests.head(base + "run/output.log", timeout=30)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Content-Length"] == str(len(default_files()["run/output.log"]))
    missing = requests.get(base + "run/nope.log", timeout=30)
    assert missing.status_code == 404 and "no file" in missing.json()["error"]


def test_a_zstd_window_over_8_mib_is_refused(server: Server) -> None:
    # each download streams through a decompressor that holds the frame's whole window
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=27)
    squeeze = zstandard.ZstdCompressor(compression_params=params).compressobj()
    files = default_files()
    tar = tar_bytes([reg("manifest.json", json.dumps(make_manifest(files)).encode()),
                     *(reg(n, d) for n, d in files.items())])
    body = squeeze.compress(tar) + squeeze.flush()
    assert zstandard.get_frame_parameters(body).window_size == 128 * MiB
    _refused(server, body, "zstd window is larger than")


def _directory_bomb(count: int) -> tuple[bytes, dict[str, Any]]:
    dirs = []
    for i in range(count):
        info = tarfile.TarInfo(f"d/{i}")
        info.type = tarfile.DIRTYPE
        dirs.append((info, b""))
    files = default_files()
    manifest = make_manifest(files)
    tar = tar_bytes([reg("manifest.json", json.dumps(manifest).encode()),
                     *dirs, *(reg(n, d) for n, d in files.items())])
    return zstandard.ZstdCompressor(level=19).compress(tar), manifest


def test_a_stored_directory_bomb_costs_a_view_at_most_20000_entries(server: Server,
                                                                      tmp_path: Path) -> None:
    # one stored before directories were refused: every view of it stops at the bound
    from rage.server.storage import LocalStorage, StoredBundle, new_id

    body, manifest = _directory_bomb(30_000)
    planted = tmp_path / "planted.tar.zst"
    planted.write_bytes(body)
    bundle_id = new_id()
    LocalStorage(server.storage).put(planted, StoredBundle(
        id=bundle_id, created_at="2026-01-01T00:00:00+00:00", size=len(body),
        sha256="0" * 64, delete_token_hash="0" * 64, manifest=manifest))
    for path in (f"/b/{bundle_id}/files/run/output.log", f"/b/{bundle_id}"):
        url = server.url + path
        watch = under_attack(server, functools.partial(requests.get, url, timeout=60))
        r = watch.result
        assert r.status_code == 500 and "more than 20000 entries" in r.json()["error"], r.text
        assert watch.rss_growth < RSS_SLACK


# -- 10. Infinity and NaN ------------------------------------------------------------------

def _strict(text: str) -> Any:
    """JSON as a strict parser reads it: Infinity, -Infinity and NaN are not JSON."""
    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name} in a response")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("where", ["duration", "signal", "collector"])
def test_non_finite_numbers_never_reach_a_page_or_a_json_answer(server: Server,
                                                               tmp_path: Path,
                                                               where: str) -> None:
    files = default_files()
    if where == "collector":
        files["collectors/platform.json"] = (b'{"name": "platform", "status": "ok", '
                                             b'"duration_s": Infinity, "error": null, '
                                             b'"data": {"cpus": NaN}}')
    manifest = make_manifest(files)
    if where == "duration":
        manifest["run"]["duration_s"] = float("inf")
    elif where == "signal":
        manifest["run"].update(signal=float("nan"), status="crashed", exit_code=None)
    else:
        manifest["sections"]["platform"]["duration_s"] = float("-inf")
    r = api_upload(server, build_bundle(tmp_path / "n.tar.zst", files, manifest=manifest))
    if r.status_code != 201:  # refused is fine, with a JSON error
        assert r.status_code == 400 and _strict(r.text)["error"], r.text
        return
    created = _strict(r.text)
    page = requests.get(created["url"], timeout=30)
    assert page.status_code == 200, page.text[:500]
    api = requests.get(f"{server.url}/api/v1/bundles/{created['id']}", timeout=30)
    assert api.status_code == 200
    _strict(api.text)


# -- 11. invisible and bidi format characters in names -------------------------------------

def test_the_invisible_character_list_covers_unicode_format_characters() -> None:
    import sys
    import unicodedata

    from rage.server.limits import visible

    chars = [chr(c) for c in range(sys.maxunicode + 1)
             if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")]
    assert len(chars) > 150
    assert visible("".join(chars)) == "_" * len(chars)
    assert visible("plain \u00e9t\u00e9 \u4e2d\u6587 \U0001f600") == \
        "plain \u00e9t\u00e9 \u4e2d\u6587 \U0001f600"


@pytest.mark.parametrize("name,code", [("run/attachments/invoice\u202efdp.exe", "U+202E"),
                                       ("run/attachments/a\u200bb.log", "U+200B"),
                                       ("run/\u2066x\u2069.log", "U+2066")])
def test_a_member_name_with_a_format_character_is_refused(server: Server, tmp_path: Path,
                                                          name: str, code: str) -> None:
    bundle = _bundle_with(tmp_path, "bidi.tar.zst", **{name: b"%PDF-1.4\n"})
    before = server.stored()
    r = api_upload(server, bundle)
    assert r.status_code == 400, r.text
    assert f"{code}, an invisible or bidi format character" in r.json()["error"], r.text
    assert server.stored() == before


def test_a_stored_name_with_a_bidi_override_is_neutralised_in_downloads(
        server: Server, tmp_path: Path) -> None:
    from rage.server.storage import LocalStorage, StoredBundle, new_id

    name = "run/attachments/invoice\u202efdp.exe"
    files = {**default_files(), name: b"%PDF-1.4\n"}
    planted = build_bundle(tmp_path / "planted.tar.zst", files)
    bundle_id = new_id()
    LocalStorage(server.storage).put(planted, StoredBundle(
        id=bundle_id, created_at="2026-01-01T00:00:00+00:00", size=planted.stat().st_size,
        sha256="0" * 64, delete_token_hash="0" * 64, manifest=make_manifest(files)))
    r = requests.get(f"{server.url}/b/{bundle_id}/files/run/attachments/invoice%E2%80%AEfdp.exe",
                     timeout=30)
    assert r.status_code == 200 and r.content == b"%PDF-1.4\n"
    disposition = r.headers["Content-Disposition"]
    assert "%E2%80%AE" not in disposition.upper() and "\u202e" not in disposition
    assert "invoice_fdp.exe" in disposition
    page = requests.get(f"{server.url}/b/{bundle_id}", timeout=30)
    assert page.status_code == 200 and "invoice_fdp.exe" in page.text
    assert "\u202e" not in page.text


# -- 12. a full disk -------------------------------------------------------------------------

@pytest.fixture()
def small_disk_server(tmp_path: Path) -> Iterator[Server]:
    """A receiver whose storage is a 4 MiB tmpfs, mounted in a mount namespace of its own
    (nothing stays mounted when it exits)."""
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    script = ('mount -t tmpfs -o size=4m,mode=700 tmpfs "$0" || exit 3; '
              'exec "$1" -m rage serve --port 0 --storage "$0"')
    proc = subprocess.Popen(["unshare", "-Urm", "sh", "-c", script, str(store),
                             sys.executable], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if "http://" not in first:
        proc.wait(10)
        proc.stdout.close()
        pytest.skip("cannot mount a tmpfs in a mount namespace here")
    s = Server(first.split()[-1].rstrip("/"), store, proc)
    yield s
    stop_server(s)


def test_a_full_disk_is_a_507_and_not_ready(small_disk_server: Server, tmp_path: Path) -> None:
    import os

    server = small_disk_server
    assert requests.get(f"{server.url}/readyz", timeout=10).status_code == 200
    stored: list[dict[str, Any]] = []
    codes = []
    for i in range(40):  # 300 KiB that do not compress: about 13 fit
        bundle = _bundle_with(tmp_path, f"r{i}.tar.zst",
                              **{"run/attachments/blob.bin": os.urandom(300 * 1024)})
        r = api_upload(server, bundle)
        codes.append(r.status_code)
        body = _strict(r.text)  # every answer is JSON, whatever failed
        if r.status_code == 201:
            stored.append(body)
        else:
            assert r.status_code == 507 and "storage is full" in body["error"], r.text
    assert 201 in codes and 507 in codes, codes
    ready = requests.get(f"{server.url}/readyz", timeout=10)
    assert ready.status_code == 503 and "storage: full" in " ".join(ready.json()["problems"])
    assert requests.get(f"{server.url}/healthz", timeout=HEALTH_WITHIN).status_code == 200
    for body in stored[:8]:  # space comes back: ready again
        r = requests.delete(f"{server.url}/api/v1/bundles/{body['id']}", timeout=10,
                            headers={"Authorization": f"Bearer {body['delete_token']}"})
        assert r.status_code == 200, r.text
    assert requests.get(f"{server.url}/readyz", timeout=10).status_code == 200


# -- 7. NUL and lone surrogates: the same on SQLite and PostgreSQL ---------------------------

def _nul_scenario(server: Server, tmp_path: Path) -> dict[str, Any]:
    """Upload a bundle with NULs where the index keeps text, then search, filter and mark it
    fixed with hostile values; what the receiver answered, comparable across databases."""
    auth = {"Authorization": f"Bearer {ADMIN}"}
    files = {n: d for n, d in default_files().items() if n != "run/traceback.txt"}
    files["run/stderr.log"] = b"working\nerror: cannot open the\x00file 7\n"
    manifest = make_manifest(files, note="broke\x00here")
    manifest["run"]["argv"] = ["mytool", "sync\x00x", "--all"]
    r = api_upload(server, build_bundle(tmp_path / "nul.tar.zst", files, manifest=manifest))
    assert r.status_code == 201, r.text
    out: dict[str, Any] = {}
    listing = requests.get(f"{server.url}/api/v1/signatures", headers=auth, timeout=30)
    assert listing.status_code == 200, listing.text
    sigs = _strict(listing.text)["signatures"]
    assert len(sigs) == 1, sigs  # the bundle reached the index
    h = sigs[0]["hash"]
    one = _strict(requests.get(f"{server.url}/api/v1/signatures/{h}", headers=auth,
                               timeout=30).text)
    out["signature"] = {k: one.get(k) for k in ("text", "count", "app")}
    out["bundles"] = [{k: b.get(k) for k in ("note", "command")} for b in one["bundles"]]
    for name, url in [("q", "/api/v1/signatures?q=a%00b"),
                      ("q_surrogate", "/api/v1/signatures?q=%ED%A0%80"),
                      ("app", "/api/v1/signatures?app=%00"),
                      ("page_app", "/triage?app=%00"), ("page_q", "/triage?q=x%00")]:
        r = requests.get(server.url + url, headers=auth, timeout=30)
        out[name] = r.status_code
        assert r.status_code < 500, (url, r.status_code, r.text[:300])
    for name, fixed_in in [("nul", "1.\u00000"), ("surrogate", "\ud800"), ("ok", "1.3")]:
        body = json.dumps({"status": "fixed", "fixed_in": fixed_in})
        r = requests.post(f"{server.url}/api/v1/signatures/{h}", data=body, timeout=30,
                          headers={**auth, "Content-Type": "application/json"})
        assert r.status_code < 500, (fixed_in, r.status_code, r.text[:300])
        out[f"fixed_{name}"] = (r.status_code, _strict(r.text).get("fixed_in"))
    return out


def test_nul_and_surrogates_give_the_same_answers_on_sqlite_and_postgresql(
        tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    import uuid

    from tests.services import run_postgres

    answers: list[dict[str, Any]] = []
    with run_postgres() as pg:
        for database in (None, pg.database("n" + uuid.uuid4().hex[:12])):
            store = tmp_path / f"store-{len(answers)}"
            s = start_server(store, "--admin-token", ADMIN,
                             *(["--database", database] if database else []))
            try:
                answers.append(_nul_scenario(s, tmp_path))
            finally:
                stop_server(s)
    sqlite, postgres = answers
    assert sqlite == postgres
    assert "\x00" not in json.dumps(sqlite, ensure_ascii=False)


# -- 13. a 201 is durable --------------------------------------------------------------------

def test_a_201_comes_after_the_bundle_and_its_directories_are_synced(tmp_path: Path) -> None:
    """The receiver under strace: the syscalls it makes for one upload, in order."""
    import re
    import shutil
    import subprocess
    import sys

    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    store, trace = tmp_path / "store", tmp_path / "trace"
    proc = subprocess.Popen(
        ["strace", "-f", "-qq", "-y", "-s", "24", "-e", "signal=none", "-o", str(trace),
         "-e", "trace=fsync,fdatasync,rename,renameat,renameat2,sendto",
         sys.executable, "-m", "rage", "serve", "--port", "0", "--storage", str(store)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if "http://" not in first:
        proc.wait(10)
        pytest.skip(f"the receiver does not start under strace here: {first!r}")
    server = Server(first.split()[-1].rstrip("/"), store, proc)
    try:
        r = api_upload(server, build_bundle(tmp_path / "b.tar.zst"))
        assert r.status_code == 201, r.text
        bundle_id = r.json()["id"]
    finally:
        for child in psutil.Process(proc.pid).children():
            child.terminate()
        proc.wait(30)
        proc.stdout.close()
    lines = trace.read_text().splitlines()

    def first_at(pattern: str) -> int:
        rx = re.compile(pattern)
        return next((i for i, line in enumerate(lines) if rx.search(line)), len(lines) + 1)

    root = re.escape(str(store.resolve()))
    stored = first_at(rf'rename\w*\(.*"{root}/bundles/{bundle_id}\.tar\.zst"')
    answered = first_at(r'sendto\(.*"HTTP/1\.1 201')
    assert stored < answered <= len(lines), "\n".join(lines[-40:])
    # the upload's bytes before the name points at them; the name before the answer
    assert first_at(rf"fsync\(\d+<{root}/tmp/upload-[^>]*>\)") < stored
    assert stored < first_at(rf"fsync\(\d+<{root}/bundles>\)") < answered
    # the metadata that makes the bundle visible, the same way
    meta = first_at(rf'rename\w*\(.*"{root}/meta/{bundle_id}\.json"')
    assert first_at(rf"fsync\(\d+<{root}/meta/[^>]*{bundle_id}[^>]*>\)") < meta
    assert meta < first_at(rf"fsync\(\d+<{root}/meta>\)") < answered


# -- 14. HTTP framing ------------------------------------------------------------------------

def _raw_exchange(server: Server, request: bytes) -> bytes:
    """Send ``request`` on one connection; everything the server answers until it closes
    the connection or goes quiet for a second."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        s.settimeout(1)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except TimeoutError:
            out += b"<still open>"
    return out


def test_content_length_with_transfer_encoding_is_refused_and_closed(server: Server) -> None:
    smuggled = b"GET /api/v1/bundles/smuggled-request-xxxxxxxxxxxx HTTP/1.1\r\nHost: x\r\n\r\n"
    request = (b"POST /api/v1/bundles HTTP/1.1\r\nHost: x\r\nContent-Type: application/zstd\r\n"
               b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
               % (5 + len(smuggled))) + smuggled
    answer = _raw_exchange(server, request)
    assert answer.split(b"\r\n", 1)[0].endswith(b" 400 Bad Request"), answer[:300]
    assert b"both Content-Length and Transfer-Encoding" in answer
    assert answer.count(b"HTTP/1.") == 1, answer  # the smuggled request never ran
    assert not answer.endswith(b"<still open>")  # and the connection was closed
    # one framing or the other alone is still served, on a connection kept open
    for framing in (b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n"):
        body = b"" if framing.startswith(b"Content") else b"0\r\n\r\n"
        answer = _raw_exchange(server, b"POST /api/v1/bundles HTTP/1.1\r\nHost: x\r\n"
                               + framing + b"\r\n" + body)
        assert answer.startswith(b"HTTP/1.1 400") and b"empty upload" in answer, answer
        assert answer.endswith(b"<still open>")


# -- the maintainer's side: reporters, cross-site requests, token guessing -------------------

@pytest.fixture(scope="module")
def admin_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("hostile-admin") / "store", "--admin-token", ADMIN)
    yield s
    stop_server(s)


def _signature_of(server: Server, bundle_id: str) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {ADMIN}"}
    for _ in range(50):
        rows = requests.get(f"{server.url}/api/v1/signatures?per_page=200", headers=auth,
                            timeout=30).json()["signatures"]
        for row in rows:
            one = requests.get(row["api_url"], headers=auth, timeout=30).json()
            if any(b["id"] == bundle_id for b in one["bundles"]):
                return one  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"bundle {bundle_id} is in no signature")


def test_reporters_are_counted_as_the_receiver_saw_them(admin_server: Server,
                                                        tmp_path: Path) -> None:
    files = default_files()
    files["run/traceback.txt"] = (b'Traceback (most recent call last):\n  File "x.py", line 1, '
                                  b"in forged_reporters\nKeyError: x\n")
    ids = []
    for i in range(25):
        manifest = make_manifest(files, reporter=f"reporter-{i}")
        r = api_upload(admin_server, build_bundle(tmp_path / f"r{i}.tar.zst", files,
                                                  manifest=manifest))
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    sig = _signature_of(admin_server, ids[-1])
    assert sig["count"] == 25
    assert sig["reporters"] == 1  # one address: one reporter, whatever the manifests say


def _session_cookie(server: Server, token: str = ADMIN) -> str:
    r = requests.post(f"{server.url}/admin/login", data={"token": token},
                      allow_redirects=False, timeout=10)
    assert r.status_code == 303, r.text
    return r.headers["Set-Cookie"].split(";", 1)[0]  # Secure: requests would not send it


def test_the_json_api_and_logout_refuse_cross_site_requests(admin_server: Server,
                                                            tmp_path: Path) -> None:
    files = default_files()
    files["run/traceback.txt"] = (b'Traceback (most recent call last):\n  File "x.py", line 1, '
                                  b"in cross_site\nKeyError: x\n")
    r = api_upload(admin_server, build_bundle(tmp_path / "c.tar.zst", files))
    sig = _signature_of(admin_server, r.json()["id"])
    url = f"{admin_server.url}/api/v1/signatures/{sig['hash']}"
    cookie = _session_cookie(admin_server)
    fixed = json.dumps({"status": "fixed", "fixed_in": "9999"})
    # a page on a sibling subdomain: same-site, so the cookie rides along; text/plain
    # needs no preflight
    for headers in ({"Sec-Fetch-Site": "same-site", "Origin": "https://evil.example.org"},
                    {"Origin": "https://evil.example.org"},
                    {"Sec-Fetch-Site": "same-origin"}):  # same origin, but not JSON
        r = requests.post(url, data=fixed, timeout=10, headers={
            "Cookie": cookie, "Content-Type": "text/plain", **headers})
        assert r.status_code in (403, 415), (headers, r.status_code, r.text)
    assert _signature_of(admin_server, sig["bundles"][0]["id"])["status"] == "open"
    # the maintainer's own page, and a script with the token, are served
    r = requests.post(url, data=fixed, timeout=10, headers={
        "Cookie": cookie, "Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 200 and r.json()["status"] == "fixed", r.text
    r = requests.post(url, data=json.dumps({"status": "open"}), timeout=10,
                      headers={"Authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 200 and r.json()["status"] == "open", r.text
    # another site cannot log the maintainer out either
    r = requests.post(f"{admin_server.url}/admin/logout", allow_redirects=False, timeout=10,
                      headers={"Cookie": cookie, "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403 and "Set-Cookie" not in r.headers, r.status_code
    r = requests.post(f"{admin_server.url}/admin/logout", allow_redirects=False, timeout=10,
                      headers={"Cookie": cookie, "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 303 and "Max-Age=0" in r.headers["Set-Cookie"]


def test_guessing_the_admin_bearer_token_is_throttled_per_address(tmp_path: Path) -> None:
    import subprocess
    import sys

    log = tmp_path / "server.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rage", "serve", "--port", "0", "--storage",
             str(tmp_path / "store"), "--admin-token", "short"],
            stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    server = Server(proc.stdout.readline().split()[-1].rstrip("/"), tmp_path / "store", proc)
    try:
        cookie = _session_cookie(server, "short")  # a session from before the attack
        with requests.Session() as guesser:
            codes = [guesser.get(f"{server.url}/api/v1/signatures", timeout=10,
                                 headers={"Authorization": f"Bearer guess{i}"}).status_code
                     for i in range(300)]
        assert codes[:20] == [403] * 20 and set(codes[20:]) == {429}, codes
        # the right token from that address waits out the minute like the guesses...
        r = requests.get(f"{server.url}/api/v1/signatures", timeout=10,
                         headers={"Authorization": "Bearer short"})
        assert r.status_code == 429 and r.headers["Retry-After"] == "60"
        assert "error" in r.json()
        # ...and a maintainer's session is not affected
        r = requests.get(f"{server.url}/api/v1/signatures", timeout=10,
                         headers={"Cookie": cookie})
        assert r.status_code == 200, r.text
    finally:
        stop_server(server)
    assert "the admin token is 5 characters" in log.read_text()


def test_a_throttled_address_gets_its_tries_back_after_the_window() -> None:
    from rage.server.auth import Throttle

    throttle = Throttle(limit=3, window=0.3)
    for _ in range(3):
        throttle.failed("10.0.0.1")
    assert throttle.blocked("10.0.0.1") and not throttle.blocked("10.0.0.2")
    time.sleep(0.35)
    assert not throttle.blocked("10.0.0.1")  # not locked out for good


def test_trickling_uploads_hold_connections_not_workers(server: Server) -> None:
    """What a trickling client can do to rage serve alone: hold one connection (of
    --connection-limit, 100) until --channel-timeout of silence; waitress reads a body
    before a worker sees the request, so no worker is held (behind nginx, as the deployment
    section sets it up, nginx holds it instead: tests/test_server_deploy.py)."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    socks = []
    for _ in range(12):  # more than the 8 workers
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"POST /api/v1/bundles HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/zstd\r\nContent-Length: 100000\r\n\r\n")
        socks.append(s)

    def trickle() -> None:
        for _ in range(20):
            for s in socks:
                s.sendall(b"\0")
            time.sleep(0.1)

    try:
        watch = under_attack(server, trickle)
        assert watch.health_checks >= 3 and watch.rss_growth < RSS_SLACK
    finally:
        for s in socks:
            s.close()


# -- 5. notifications ----------------------------------------------------------------------

def test_notifications_cannot_be_forged_or_flooded(tmp_path: Path) -> None:
    import re
    import subprocess
    import sys

    from tests.test_server_triage_notify import Hook

    hook = Hook()
    public = "https://rage.example.com"
    try:
        # without a public URL, links would name whatever Host an uploader sends
        refused = subprocess.run(
            [sys.executable, "-m", "rage", "serve", "--port", "0", "--storage",
             str(tmp_path / "s0"), "--notify-slack", hook.url + "/slack"],
            capture_output=True, text=True, timeout=60, check=False)
        assert refused.returncode != 0 and "--public-url" in refused.stderr
        server = start_server(tmp_path / "store", "--notify-slack", hook.url + "/slack",
                              "--notify-webhook", hook.url + "/json", "--public-url", public)
        try:
            files = default_files()
            for i in range(15):  # each a new signature: each would be an event
                files["run/traceback.txt"] = (
                    b'Traceback (most recent call last):\n  File "x.py", line 1, in '
                    b"f%d\nKeyError: x\n" % i)
                manifest = make_manifest(
                    files, app="<!channel>",
                    app_version="<https://evil.example/phish|View the crash report>")
                r = api_upload(server, build_bundle(tmp_path / f"n{i}.tar.zst", files,
                                                    manifest=manifest),
                               headers={"Host": "evil.example"})
                assert r.status_code == 201, r.text
            got = hook.wait_for(20)
            time.sleep(1)  # anything more would have come by now
            got = list(hook.received)
        finally:
            stop_server(server)
    finally:
        hook.close()
    assert len(got) == 2 * 10, len(got)  # ten events per address and hour, two targets
    for path, body in got:
        if path == "/json":
            assert body["url"].startswith(public + "/") and body["bundle_url"].startswith(public)
            continue
        texts = [body["text"], body["blocks"][0]["text"]["text"],
                 body["blocks"][1]["elements"][0]["text"]]
        for text in texts:
            # Slack's control sequences: every one must be a link to the receiver itself
            for token in re.findall(r"<([^>]*)>", text):
                assert token.startswith(public + "/"), (token, text)
        assert "&lt;!channel&gt;" in body["blocks"][0]["text"]["text"]
