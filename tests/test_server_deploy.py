"""Deployment limits of `rage serve`: slow clients, the connection limit, a reverse proxy."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import requests

from tests.test_server import api_upload, build_bundle, start_server, stop_server


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
        t0 = time.monotonic()
        assert _served_within(s.url, 15)
        assert time.monotonic() - t0 < 10
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
