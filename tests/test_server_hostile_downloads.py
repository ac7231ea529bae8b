"""Member downloads of a real `rage serve` (issue 35, items 3 and 4): a big listing is
walked once, not at every download, and a slow reader of a member stored in S3 (a real
SeaweedFS) holds a connection, not a worker thread.
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests
import zstandard

from tests.test_server import (
    Server,
    api_upload,
    build_bundle,
    default_files,
    launch_serve,
    make_manifest,
    reg,
    start_server,
    stop_server,
    tar_bytes,
)
from tests.test_server_hostile_more import HEALTH_WITHIN, RSS_SLACK, MiB, under_attack


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("downloads") / "store")
    yield s
    stop_server(s)


def _largest_listing() -> dict[str, bytes]:
    """As many members as a manifest within its 256 KiB bound can list, each 8 KiB that
    compresses to about half (hex): the bundle is ~8 MB, its listing ~2,000 entries."""
    rng = random.Random(35)
    return {f"run/attachments/a{i:04d}.log": rng.randbytes(4096).hex().encode()
            for i in range(1990)}


def _framed(tar: bytes, frame: int = 256 * 1024) -> bytes:
    """``tar`` as consecutive zstd frames (one stream to every reader, as rage's own
    bundles are: rage.bundle.frames)."""
    cctx = zstandard.ZstdCompressor(level=1)
    return b"".join(cctx.compress(tar[i:i + frame]) for i in range(0, len(tar), frame))


def _read_chars(proc: psutil.Process) -> int:
    return int(proc.io_counters().read_chars)


def test_a_big_listing_is_walked_once_not_at_every_download(server: Server,
                                                            tmp_path: Path) -> None:
    files = _largest_listing()
    manifest = make_manifest(files)
    assert 250_000 < len(json.dumps(manifest)) <= 256 * 1024  # the largest accepted
    tar = tar_bytes([reg("manifest.json", json.dumps(manifest).encode()),
                     *(reg(n, d) for n, d in files.items())])
    bundle = tmp_path / "listing.tar.zst"
    bundle.write_bytes(_framed(tar))
    size = bundle.stat().st_size
    assert size > 7 * MiB
    r = api_upload(server, bundle)
    assert r.status_code == 201, r.text
    base = f"{server.url}/b/{r.json()['id']}/files/"
    names = list(files)
    proc = psutil.Process(server.proc.pid)
    # what the receiver reads from its disk (the store's read count) per download: the
    # first download walks the whole bundle once; every later one reads the frame its
    # member is in (and the bundle's metadata), never the archive up to it again
    before = _read_chars(proc)
    first = requests.get(base + names[-1], timeout=60)
    walked = _read_chars(proc) - before
    assert first.status_code == 200 and first.content == files[names[-1]]
    assert walked >= size
    reads = []
    for name in (names[-1], names[-1], names[-2], names[1000], names[0], names[1]):
        before = _read_chars(proc)
        got = requests.get(base + name, timeout=60)
        reads.append(_read_chars(proc) - before)
        assert got.status_code == 200 and got.content == files[name]
    assert max(reads) < size // 5, (reads, size)
    # a name the bundle does not have is still a 404, from the listing
    missing = requests.get(base + "run/attachments/nope.log", timeout=30)
    assert missing.status_code == 404


def test_listings_are_kept_within_their_memory_bound(tmp_path: Path) -> None:
    from rage.bundle.seek import build_listing
    from rage.server.downloads import Listings

    listings = []
    for k in range(3):
        files = {f"run/attachments/{k}-{i:04d}.log": b"x" for i in range(500)}
        path = build_bundle(tmp_path / f"{k}.tar.zst", files)
        with path.open("rb") as f:
            listings.append(build_listing(f, 1 << 30))
    one = listings[0].nbytes()
    assert 100_000 < one < 200_000  # ~200 bytes an entry, whatever the bundle inflates to
    kept = Listings(max_bytes=2 * one + one // 2)
    for k, listing in enumerate(listings):
        kept.put(f"id{k}", "gen", listing)
    assert kept.get("id0", "gen") is None  # the least recently used went first
    assert kept.get("id1", "gen") is listings[1] and kept.get("id2", "gen") is listings[2]
    assert kept.get("id1", "other bytes") is None  # another generation of the id
    small = Listings(max_bytes=one - 1)
    small.put("id0", "gen", listings[0])  # larger than the whole bound: not kept
    assert small.get("id0", "gen") is None


# -- a member stored in S3, read at a trickle ------------------------------------------------

def _trickling_reader(url: str, path: str) -> socket.socket:
    """Asks for ``path``, takes the response's first bytes, then stops reading (a tiny
    receive window: the server's sends stall at once)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect((host, int(port)))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    assert s.recv(1024).startswith(b"HTTP/1.1 200")
    return s


def _pending(s: socket.socket) -> bool:
    """The server is still sending: bytes are waiting, not the end of the stream."""
    try:
        return len(s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)) == 1
    except BlockingIOError:
        return True  # nothing yet, and not closed


@pytest.mark.slow
def test_trickling_readers_of_an_s3_member_hold_no_worker(tmp_path: Path) -> None:
    pytest.importorskip("boto3")
    from rage.server.downloads import MAX_STREAMS
    from tests.services import run_seaweedfs

    threads = 3
    assert threads < MAX_STREAMS
    big = b"".join(b"line %d: nothing to see\n" % i for i in range(1_800_000))
    assert len(big) > 40 * MiB  # more than waitress buffers for a response (16 MiB)
    bundle = build_bundle(tmp_path / "big.tar.zst", {**default_files(), "run/output.log": big})
    with run_seaweedfs() as weed:
        bucket = weed.make_bucket("dl-" + uuid.uuid4().hex[:16])
        url, proc = launch_serve(["--storage", f"s3://{bucket}/r", "--s3-endpoint",
                                  weed.endpoint, "--threads", str(threads),
                                  "--database", f"sqlite:///{tmp_path}/index.db"],
                                 {**os.environ, **weed.env})
        server = Server(url, tmp_path / "unused", proc)
        try:
            r = api_upload(server, bundle)
            assert r.status_code == 201, r.text
            path = f"/b/{r.json()['id']}/files/run/output.log"
            # more trickling readers than the receiver has worker threads
            readers = [_trickling_reader(url, path) for _ in range(MAX_STREAMS)]
            try:
                watch = under_attack(server, lambda: time.sleep(2))
                assert watch.health_checks >= 3 and watch.rss_growth < RSS_SLACK
                # ...while every reader is still connected and unfinished
                assert all(_pending(s) for s in readers)
                ok = requests.get(url + "/healthz", timeout=HEALTH_WITHIN)
                assert ok.status_code == 200
                # each then gets the whole member once it reads
                for s in readers:
                    s.settimeout(60)
                    got = bytearray()
                    while chunk := s.recv(1 << 20):
                        got += chunk
                    assert got.endswith(big[-1000:])
            finally:
                for s in readers:
                    s.close()
            whole = requests.get(url + path, timeout=60)
            assert whole.status_code == 200 and whole.content == big
        finally:
            stop_server(server)
