"""Deployment limits of `rage serve`: slow clients, the connection limit, a reverse proxy."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
import requests

from tests.test_server import (
    Server,
    api_upload,
    build_bundle,
    default_files,
    start_server,
    stop_server,
)


def _idle_clients(url: str, n: int) -> list[socket.socket]:
    """``n`` connections that start a request and then say nothing (a slowloris)."""
    host, port = url.removeprefix("http://").split(":")
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"POST /api/v1/bundles HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n")
        socks.append(s)
    return socks


def _served_within(url: str, seconds: float) -> bool:
    try:
        return requests.get(url + "/", timeout=seconds).status_code == 200
    except requests.exceptions.Timeout:
        return False


def test_slow_clients_hold_the_connection_limit_until_the_channel_timeout(
        tmp_path: Path) -> None:
    # the lock-out, reproduced: as many silent clients as the limit and nobody else gets in
    s = start_server(tmp_path / "a", "--connection-limit", "4", "--channel-timeout", "600")
    socks = _idle_clients(s.url, 4)
    try:
        time.sleep(0.5)
        assert not _served_within(s.url, 2)
    finally:
        for sock in socks:
            sock.close()
        stop_server(s)
    # with a short channel timeout the silent clients are dropped and service resumes
    s = start_server(tmp_path / "b", "--connection-limit", "4", "--channel-timeout", "2")
    socks = _idle_clients(s.url, 4)
    try:
        assert _served_within(s.url, 15)  # a hang guard: the lock-out above never ends
        assert socks[0].recv(100) == b""  # the server hung up on the silent one
    finally:
        for sock in socks:
            sock.close()
        stop_server(s)


def test_behind_a_reverse_proxy_links_use_the_forwarded_scheme_and_host(tmp_path: Path) -> None:
    bundle = build_bundle(tmp_path / "b.tar.zst")
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "bugs.example.org",
                 "X-Forwarded-For": "203.0.113.9"}
    s = start_server(tmp_path / "p", "--trusted-proxy", "127.0.0.1")
    try:
        r = api_upload(s, bundle, headers=forwarded)
        assert r.status_code == 201, r.text
        assert r.json()["url"].startswith("https://bugs.example.org/b/")
    finally:
        stop_server(s)
    # without --trusted-proxy the same headers are ignored (anyone could send them)
    s = start_server(tmp_path / "q")
    try:
        r = api_upload(s, bundle, headers=forwarded)
        assert r.json()["url"].startswith(s.url + "/b/")
    finally:
        stop_server(s)


# -- behind a real nginx, configured with the block docs/receiver.md shows ----------------------

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK)
                                  else None)
needs_nginx = pytest.mark.skipif(NGINX is None,
                                 reason="nginx is not installed (apt-get install nginx-light)")
RECEIVER_DOC = Path(__file__).resolve().parents[1] / "docs" / "receiver.md"
MiB = 1024 * 1024
# the documented timeouts divided by this, so the test waits seconds, not half a minute
SCALE = 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def documented_nginx() -> str:
    """The nginx block of the deployment section, as the page shows it."""
    section = RECEIVER_DOC.read_text().split("\n## Deployment\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```nginx\n(.*?)```", section, re.S)
    assert m, "docs/receiver.md's Deployment section has no nginx block"
    return m.group(1)


def timeouts(block: str) -> dict[str, int]:
    """The block's client_header_timeout, client_body_timeout and send_timeout, seconds."""
    found = dict(re.findall(r"\b(client_header_timeout|client_body_timeout|send_timeout)"
                            r"\s+(\d+)s;", block))
    assert set(found) == {"client_header_timeout", "client_body_timeout", "send_timeout"}
    return {k: int(v) for k, v in found.items()}


def for_test(block: str, port: int, upstream: str) -> str:
    """The documented block on 127.0.0.1:``port`` without TLS (nginx's own business),
    proxying to ``upstream``, its timeouts divided by SCALE; every other line as shown."""
    out = []
    for shown in block.splitlines():
        if shown.strip().startswith("ssl_certificate"):
            continue
        line = shown.replace("listen 443 ssl;", f"listen 127.0.0.1:{port};")
        line = line.replace("http://127.0.0.1:8080", upstream)
        line = re.sub(r"(_timeout\s+)(\d+)s;",
                      lambda m: f"{m.group(1)}{max(1, int(m.group(2)) // SCALE)}s;", line)
        out.append(line)
    text = "\n".join(out)
    assert f"listen 127.0.0.1:{port};" in text and f"proxy_pass {upstream};" in text
    return text


@contextmanager
def nginx_in_front(tmp_path: Path, upstream: str) -> Iterator[str]:
    """nginx on 127.0.0.1 proxying to ``upstream`` with the documented block (in the
    ``http`` block, as conf.d files are), its temporary files in ``tmp_path``."""
    port = _free_port()
    d = tmp_path / "nginx"
    d.mkdir()
    temps = "\n".join(f"  {k}_temp_path {d / k};" for k in
                      ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (d / "nginx.conf").write_text(f"""
daemon off; master_process off; worker_processes 1;
pid {d / 'nginx.pid'}; error_log {d / 'error.log'} info;
events {{ worker_connections 512; }}
http {{
{temps}
  access_log off;
{for_test(documented_nginx(), port, upstream)}
}}
""")
    proc = subprocess.Popen([str(NGINX), "-p", str(d), "-e", str(d / "error.log"), "-c",
                             str(d / "nginx.conf")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "nginx did not start"
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


@needs_nginx
def test_behind_nginx_slow_clients_do_not_reach_the_receiver(tmp_path: Path) -> None:
    s = start_server(tmp_path / "store", "--connection-limit", "4", "--channel-timeout", "600",
                     "--trusted-proxy", "127.0.0.1")
    try:
        with nginx_in_front(tmp_path, s.url) as front:
            # uploads through the proxy: the links name the proxy, the page is readable
            r = api_upload(Server(front, s.storage, s.proc),
                           build_bundle(tmp_path / "b.tar.zst"))
            assert r.status_code == 201, r.text
            # links name the proxy's scheme and host; nginx's $host has no port (the page
            # says to pass --public-url behind a proxy on another port than 443)
            url = r.json()["url"]
            assert url.startswith("http://127.0.0.1/b/")
            assert requests.get(front + url.removeprefix("http://127.0.0.1"),
                                timeout=10).status_code == 200
            # five times the receiver's connection limit in silent clients: nginx holds them,
            # the receiver never sees them, everyone else is served at once
            socks = _idle_clients(front, 20)
            try:
                # served while the silent clients are held: they lock the receiver out for
                # its 600 s channel timeout when they reach it (the test above)
                assert _served_within(front, 5)
                assert _served_within(s.url, 5)  # the receiver's own slots are all free
            finally:
                for sock in socks:
                    sock.close()
            # the proxy refuses what is too large (client_max_body_size) from its headers,
            # before the receiver reads a byte
            big = requests.post(front + "/api/v1/bundles", timeout=30,
                                headers={"Content-Length": str(65 * 1024 * 1024)})
            assert big.status_code == 413
    finally:
        stop_server(s)


def _from(address: str, port: int, rcvbuf: int = 0) -> socket.socket:
    """A connection to the proxy from ``address`` (any 127.x.y.z is this machine's): nginx
    counts connections per client address. ``rcvbuf``: a small receive window (set before
    the connection: the window is agreed on then)."""
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((address, 0))
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    return s


def _closed(s: socket.socket) -> bool:
    """The peer has closed the connection (what it sent before is read and dropped)."""
    s.setblocking(False)
    try:
        while True:
            data = s.recv(1 << 20)
            if not data:
                return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        s.setblocking(True)


@needs_nginx
@pytest.mark.slow
def test_what_trickling_clients_can_do_through_the_documented_nginx(tmp_path: Path) -> None:
    """docs/receiver.md's table "What a client that trickles can do", row by row."""
    from rage.server.downloads import MAX_STREAMS

    limits = {k: v // SCALE for k, v in timeouts(documented_nginx()).items()}
    header_t, body_t, send_t = (limits["client_header_timeout"],
                                limits["client_body_timeout"], limits["send_timeout"])
    per_address = int(re.findall(r"limit_conn perip (\d+);", documented_nginx())[0])
    opened: list[socket.socket] = []

    def connect(address: str, rcvbuf: int = 0) -> socket.socket:
        opened.append(_from(address, port, rcvbuf))
        return opened[-1]

    s = start_server(tmp_path / "store", "--connection-limit", "4", "--channel-timeout", "600",
                     "--trusted-proxy", "127.0.0.1")
    big = b"".join(b"line %d: nothing to see\n" % i for i in range(1_000_000))
    small = build_bundle(tmp_path / "small.tar.zst").read_bytes()
    try:
        with nginx_in_front(tmp_path, s.url) as front:
            port = int(front.rsplit(":", 1)[1])  # (read by connect)
            r = api_upload(Server(front, s.storage, s.proc),
                           build_bundle(tmp_path / "big.tar.zst",
                                        {**default_files(), "run/output.log": big}))
            assert r.status_code == 201, r.text
            member = f"/b/{r.json()['id']}/files/run/output.log"
            post = (b"POST /api/v1/bundles HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    b"application/zstd\r\nContent-Length: %d\r\n\r\n")
            # bodies a byte at a time (more than the receiver's 4 connections), one address
            # each: one trickles a whole bundle, one goes quiet, the rest keep trickling
            bodies = [connect(f"127.0.1.{i}") for i in range(6)]
            for b in bodies:
                b.sendall(post % (len(small) if b is bodies[0] else 100_000))
            # as many connections from one address as limit_conn allows, then one more
            crowd = [connect("127.0.0.3") for _ in range(per_address)]
            for c in crowd:
                c.sendall(post % 100_000)
            time.sleep(0.3)
            extra = connect("127.0.0.3")
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert extra.recv(100).startswith(b"HTTP/1.1 503")
            # slow readers of a large member: more than the receiver's download slots
            readers = []
            for i in range(MAX_STREAMS + 4):
                readers.append(rd := connect(f"127.0.2.{i}", 4096))
                rd.sendall(f"GET {member} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                assert rd.recv(100).startswith(b"HTTP/1.1 200")

            # slowloris: request headers a byte at a time, more than limit_conn from one
            # address (it counts only connections whose headers are whole)
            lorises = [connect("127.0.0.2") for _ in range(per_address + 2)]
            t0 = time.monotonic()
            sent = 0
            loris_line = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000
            checked = dropped_loris = dropped_quiet = False
            # the bodies trickle from their own thread, every 0.25 s whatever the checks
            # below take on a busy machine: a pause longer than client_body_timeout is
            # silence, which nginx rightly ends
            whole_sent = [0.0]
            trickle_errors: list[BaseException] = []
            done = threading.Event()

            def trickle() -> None:
                piece_no = 0
                try:
                    while not done.wait(0.25):
                        for b in bodies[2:] + crowd:
                            b.sendall(b"\0")  # never quiet for client_body_timeout
                        piece = small[piece_no * 64:(piece_no + 1) * 64]
                        if piece:
                            bodies[0].sendall(piece)
                            whole_sent[0] = time.monotonic() - t0
                        piece_no += 1
                except BaseException as e:  # raised again by the test's thread, with
                    # nginx's own account of why it closed a connection
                    log = tmp_path / "nginx" / "error.log"
                    tail = log.read_text(errors="replace").splitlines()[-15:]
                    trickle_errors.append(e)
                    trickle_errors.append(AssertionError(
                        f"at {time.monotonic() - t0:.2f} s; nginx said:\n" + "\n".join(tail)))

            trickler = threading.Thread(target=trickle, daemon=True)
            trickler.start()
            while time.monotonic() - t0 < max(header_t, body_t, send_t) * 1.6 + 1:
                now = time.monotonic() - t0
                assert not trickle_errors, trickle_errors
                for lo in lorises:
                    with contextlib.suppress(OSError):
                        lo.sendall(loris_line[sent:sent + 1])
                sent += 1
                # through the proxy and directly, the receiver answers at once, and its
                # download slots are free: nginx took each slow reader's member
                assert requests.get(front + "/healthz", timeout=1).status_code == 200
                assert requests.get(s.url + "/healthz", timeout=1).status_code == 200
                if not checked:  # (503 while nginx is still taking the members in)
                    direct = requests.get(s.url + member, timeout=30)
                    assert direct.status_code in (200, 503)
                    checked = direct.status_code == 200 and direct.content == big
                if now < header_t * 0.8:
                    assert not any(_closed(lo) for lo in lorises)
                if now > header_t * 1.5 and not dropped_loris:
                    assert all(_closed(lo) for lo in lorises)  # the total header time
                    dropped_loris = True
                if now > body_t * 1.5 and not dropped_quiet:
                    assert _closed(bodies[1])  # quiet for client_body_timeout
                    dropped_quiet = True
                time.sleep(0.25)
            done.set()
            trickler.join(timeout=30)
            assert not trickle_errors, trickle_errors
            assert dropped_loris and dropped_quiet and checked
            # the whole bundle, trickled for longer than client_body_timeout, was stored
            assert whole_sent[0] > body_t
            reply = bodies[0].recv(4096)
            assert reply.startswith(b"HTTP/1.1 201"), reply
            # trickling bodies are never dropped, however long they take
            assert not any(_closed(b) for b in bodies[2:] + crowd)
            # a reader who takes nothing is dropped after send_timeout: the member unsent
            for rd in readers:
                got = bytearray()
                with contextlib.suppress(ConnectionResetError):
                    while chunk := rd.recv(1 << 20):
                        got += chunk
                assert len(got) < len(big)
    finally:
        for sock in opened:
            sock.close()
        stop_server(s)


def _spooled(pid: int) -> int:
    """The size of the largest temporary file nginx holds open for a response (it unlinks
    them at once: they are seen through its descriptors)."""
    sizes = [0]
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            if "/proxy/" in os.readlink(fd):
                sizes.append(fd.stat().st_size)
    return max(sizes)


@needs_nginx
@pytest.mark.slow
def test_the_documented_nginx_spools_a_bounded_part_of_a_download(tmp_path: Path) -> None:
    """The table's last row: a reader that takes nothing costs the proxy's disk at most
    ``proxy_max_temp_file_size`` (nginx's own default is 1 GiB a response)."""
    bound = int(re.findall(r"proxy_max_temp_file_size (\d+)m;", documented_nginx())[0]) * MiB
    big = b"".join(b"line %08d: nothing to see here\n" % i for i in range(bound // 32 + MiB))
    assert len(big) > bound + 16 * MiB
    s = start_server(tmp_path / "store", "--trusted-proxy", "127.0.0.1")
    try:
        r = api_upload(s, build_bundle(tmp_path / "big.tar.zst",
                                       {**default_files(), "run/output.log": big}))
        assert r.status_code == 201, r.text
        with nginx_in_front(tmp_path, s.url) as front:
            nginx = next(p for p in psutil.Process().children()
                         if p.name() == "nginx")
            reader = _from("127.0.0.5", int(front.rsplit(":", 1)[1]), 4096)
            try:
                reader.sendall(f"GET /b/{r.json()['id']}/files/run/output.log HTTP/1.1\r\n"
                               "Host: x\r\n\r\n".encode())
                assert reader.recv(100).startswith(b"HTTP/1.1 200")
                # until nginx stops taking the member in
                last, deadline = -1, time.monotonic() + 60
                while (now := _spooled(nginx.pid)) != last and time.monotonic() < deadline:
                    last = now
                    time.sleep(1)
                assert bound - 2 * MiB <= last <= bound
            finally:
                reader.close()
    finally:
        stop_server(s)
