"""Deployment limits of `rage serve`: slow clients, the connection limit, a reverse proxy."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from tests.test_server import Server, api_upload, build_bundle, start_server, stop_server


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


# -- behind a real nginx, as the README's deployment section says ------------------------------

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK)
                                  else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def nginx_in_front(tmp_path: Path, upstream: str) -> Iterator[str]:
    """nginx on 127.0.0.1 proxying to ``upstream`` with the README's settings."""
    port = _free_port()
    d = tmp_path / "nginx"
    d.mkdir()
    temps = "\n".join(f"  {k}_temp_path {d / k};" for k in
                      ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (d / "nginx.conf").write_text(f"""
daemon off; master_process off; worker_processes 1;
pid {d / 'nginx.pid'}; error_log {d / 'error.log'};
events {{ worker_connections 512; }}
http {{
{temps}
  access_log off;
  client_max_body_size 8m;
  client_header_timeout 5s; client_body_timeout 5s; send_timeout 30s;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass {upstream};
      proxy_request_buffering on;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-For $remote_addr;
    }}
  }}
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


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)")
def test_behind_nginx_slow_clients_do_not_reach_the_receiver(tmp_path: Path) -> None:
    s = start_server(tmp_path / "store", "--connection-limit", "4", "--channel-timeout", "600",
                     "--trusted-proxy", "127.0.0.1")
    try:
        with nginx_in_front(tmp_path, s.url) as front:
            # uploads through the proxy: the links name the proxy, the page is readable
            r = api_upload(Server(front, s.storage, s.proc),
                           build_bundle(tmp_path / "b.tar.zst"))
            assert r.status_code == 201, r.text
            assert r.json()["url"].startswith(front + "/b/")
            assert requests.get(r.json()["url"], timeout=10).status_code == 200
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
            # the proxy refuses what is too large before the receiver reads a byte
            big = requests.post(front + "/api/v1/bundles", data=b"x" * (9 * 1024 * 1024),
                                timeout=30)
            assert big.status_code == 413
    finally:
        stop_server(s)
