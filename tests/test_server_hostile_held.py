"""What held when issue 35's attacker tried it, kept as a suite against a real `rage serve`:
script payloads on every page, traversal URLs, malformed API calls, and one idempotency key
raced by twenty uploads. None of these failed before; they pin what must keep holding.
"""

from __future__ import annotations

import http.client
import json
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
import requests

from tests.test_server import (
    ADMIN,
    Server,
    api_upload,
    build_bundle,
    default_files,
    make_manifest,
    start_server,
    stop_server,
)

AUTH = {"Authorization": f"Bearer {ADMIN}"}
HTML = {"Accept": "text/html"}

PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "'><svg onload=alert(1)>",
    "</textarea><script>alert(1)</script>",
    "</script><script>alert(1)</script>",
    "<iframe src=javascript:alert(1)></iframe>",
    '<a href="javascript:alert(1)">x</a>',
    "<style>*{display:none}</style>",
    "<base href=//evil.example/>",
    '<meta http-equiv="refresh" content="0;url=//evil.example">',
    "<!--",
    "\x1b]8;;javascript:alert(1)\x1b\\link\x1b]8;;\x1b\\",
]


class _Tags(HTMLParser):
    """Every element a browser would build from a page, with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("held") / "store", "--admin-token", ADMIN)
    yield s
    stop_server(s)


def _hostile_bundle(path: Path, payload: str) -> Path:
    files = default_files()
    files["run/stderr.log"] = f"working\nerror: {payload}\n".encode()
    files["run/traceback.txt"] = (
        f'Traceback (most recent call last):\n  File "{payload}.py", line 1, in '
        f"{payload}\n    {payload}\nValueError: {payload}\n").encode()
    files["run/log.jsonl"] = (json.dumps({"t": payload, "level": payload, "logger": payload,
                                          "msg": payload, "exc": payload}) + "\n").encode()
    files["collectors/platform.json"] = json.dumps({
        "name": payload, "status": "ok", "duration_s": 0.1, "error": None,
        "data": {payload: payload, "os": {"name": payload}}}).encode()
    files["summary.md"] = f"# {payload}\n".encode()
    if "/" not in payload:
        files[f"run/attachments/{payload}"] = payload.encode()
    manifest = make_manifest(files, app=payload, app_version=payload, note=payload,
                             truncation=[{"name": payload, "total_bytes": 1,
                                          "dropped_bytes": 0}])
    manifest["run"].update(argv=[payload, payload], cwd=payload, status=payload)
    return build_bundle(path, files, manifest=manifest)


def _assert_inert(html: str, payload: str, where: str) -> None:
    if "<" in payload:
        assert payload not in html, f"{where}: raw {payload!r}"
    if where.startswith("/b/"):  # a recorded terminal's escapes become classes or go
        assert "\x1b" not in html, f"{where}: a raw escape sequence"
    parser = _Tags()
    parser.feed(html)
    for tag, attrs in parser.tags:
        assert tag not in ("iframe", "base", "svg", "img", "object", "embed"), (where, tag)
        assert not any(k.startswith("on") for k in attrs), (where, tag, attrs)
        for k in ("href", "src", "action", "formaction"):
            assert not attrs.get(k, "").strip().lower().startswith("javascript:"), (where, attrs)
        if tag in ("script", "style"):
            assert attrs.get("nonce"), (where, tag)  # the page's own, under its CSP nonce
        if tag == "meta":
            assert "http-equiv" not in attrs, (where, attrs)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_script_payloads_are_inert_on_every_page(server: Server, tmp_path: Path,
                                                 payload: str) -> None:
    r = api_upload(server, _hostile_bundle(tmp_path / "x.tar.zst", payload))
    # a member name with a backslash or a control character is refused (inert too)
    assert r.status_code == (400 if "\x1b" in payload else 201), r.text
    q = quote(payload, safe="")
    urls = [f"/admin/login?next={q}", f"/b/{q}", f"/triage?q={q}&app={q}",
            f"/nowhere/{q}"]
    if r.status_code == 201:
        created = r.json()
        bundle = created["id"]
        urls += [f"/b/{bundle}", "/admin", "/triage",
                 f"/b/{bundle}/delete?token={q}", f"/b/{bundle}/files/{q}"]
        sigs = requests.get(f"{server.url}/api/v1/signatures?per_page=200", headers=AUTH,
                            timeout=30).json()["signatures"]
        urls += [f"/triage/{s['hash']}" for s in sigs]
    for url in urls:
        page = requests.get(server.url + url, headers={**HTML, **AUTH}, timeout=30)
        assert page.status_code < 500, (url, page.status_code)
        if page.headers.get("Content-Type", "").startswith("text/html"):
            assert "default-src 'none'" in page.headers["Content-Security-Policy"]
            _assert_inert(page.text, payload, url)


def _raw_get(server: Server, path: str) -> tuple[int, bytes]:
    """GET ``path`` exactly as written (no client-side normalisation of dot segments)."""
    host = urlsplit(server.url)
    conn = http.client.HTTPConnection(host.hostname or "127.0.0.1", host.port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


TRAVERSALS = [
    "/b/{id}/files/../../../../etc/passwd",
    "/b/{id}/files/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/b/{id}/files/..%2f..%2f..%2fetc%2fpasswd",
    "/b/{id}/files//etc/passwd",
    "/b/{id}/files/run/../../manifest.json",
    "/b/{id}/files/run/../../../meta/{id}.json",
    "/b/{id}/files/..\\..\\..\\etc\\passwd",
    "/b/{id}/files/C:/Windows/win.ini",
    "/b/{id}/files/~/.bashrc",
    "/b/{id}/files/run%2foutput.log%00.txt",
    "/b/{id}/files/%00",
    "/b/..%2f..%2f..%2fetc%2fpasswd",
    "/b/../../../etc/passwd.tar.zst",
    "/b/{id}.tar.zst/../../../meta/{id}.json",
    "/api/v1/bundles/..%2f..%2fmeta%2f{id}",
    "/api/v1/bundles/{id}/../../../etc/passwd",
    "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/b/{id}/delete/../../../etc/passwd",
    "/triage/../../../etc/passwd",
    "/b/{id}/files/" + "../" * 200 + "etc/passwd",
]


def test_traversal_urls_never_leave_the_bundle(server: Server, tmp_path: Path) -> None:
    r = api_upload(server, build_bundle(tmp_path / "t.tar.zst"))
    bundle = r.json()["id"]
    for template in TRAVERSALS:
        path = template.format(id=bundle)
        status, body = _raw_get(server, path)
        assert status < 500, (path, status)
        assert b"root:" not in body and b"delete_token_hash" not in body, path
        assert b"[fonts]" not in body, path
        if status == 200:  # only a real member, under its own name, is ever served
            assert body in default_files().values() or body.startswith(b"<!doctype"), path


API_CASES: list[tuple[str, str, dict[str, str], bytes]] = [
    ("GET", "/api/v1/bundles/short", {}, b""),
    ("GET", "/api/v1/bundles/" + "a" * 65, {}, b""),
    ("GET", "/api/v1/bundles/" + "A" * 30, {}, b""),
    ("DELETE", "/api/v1/bundles/{id}", {}, b""),
    ("DELETE", "/api/v1/bundles/{id}", {"Authorization": "Bearer wrong"}, b""),
    ("POST", "/api/v1/bundles", {"Content-Type": "application/zstd"}, b""),
    ("POST", "/api/v1/bundles", {"Content-Type": "application/zstd"}, b"not a bundle"),
    ("PUT", "/api/v1/bundles", {}, b""),
    ("POST", "/api/v1/bundles", {"Content-Type": "multipart/form-data; boundary=x"},
     b"--x\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nhi\r\n--x--\r\n"),
    ("POST", "/api/v1/bundles", {"Idempotency-Key": "short"}, b"x"),
    ("POST", "/api/v1/bundles", {"Idempotency-Key": "bad key with spaces and more chars"},
     b"x"),
    ("GET", "/api/v1/signatures?page=0", AUTH, b""),
    ("GET", "/api/v1/signatures?per_page=100000", AUTH, b""),
    ("GET", "/api/v1/signatures?sort=evil", AUTH, b""),
    ("GET", "/api/v1/signatures?status=evil", AUTH, b""),
    ("GET", "/api/v1/signatures?page=-1", AUTH, b""),
    ("GET", "/api/v1/signatures", {"Authorization": "Bearer wrong"}, b""),
    ("GET", "/api/v1/signatures", {}, b""),
    ("GET", "/api/v1/signatures/zz", AUTH, b""),
    ("GET", "/api/v1/signatures/" + "0" * 24, AUTH, b""),
    ("POST", "/api/v1/signatures/{hash}", {**AUTH, "Content-Type": "application/json"},
     b"not json"),
    ("POST", "/api/v1/signatures/{hash}", {**AUTH, "Content-Type": "application/json"},
     b"[1, 2]"),
    ("POST", "/api/v1/signatures/{hash}", {**AUTH, "Content-Type": "application/json"},
     b'{"status": "evil"}'),
    ("POST", "/api/v1/signatures/{hash}", {**AUTH, "Content-Type": "application/json"},
     b'{"status": "fixed"}'),
    ("POST", "/api/v1/signatures/{hash}", {**AUTH, "Content-Type": "application/json"},
     b'{"status": "fixed", "fixed_in": NaN}'),
    ("POST", "/api/v1/signatures/{hash}", {**AUTH, "Content-Type": "application/json"},
     b"[" * 100_000 + b"]" * 100_000),
    ("POST", "/api/v1/signatures/{hash}", {**AUTH, "Content-Length": "999999999"}, b""),
    ("DELETE", "/api/v1/signatures/{hash}", AUTH, b""),
]


def test_malformed_api_calls_get_a_json_4xx(server: Server, tmp_path: Path) -> None:
    files = default_files()
    r = api_upload(server, build_bundle(tmp_path / "a.tar.zst", files))
    bundle = r.json()["id"]
    sig = requests.get(f"{server.url}/api/v1/signatures", headers=AUTH,
                       timeout=30).json()["signatures"][0]["hash"]
    for method, template, headers, body in API_CASES:
        url = server.url + template.format(id=bundle, hash=sig)
        try:
            r = requests.request(method, url, headers=headers, data=body, timeout=30)
        except requests.ConnectionError:
            continue  # refused before a response (an oversized Content-Length): also fine
        assert 400 <= r.status_code < 500, (method, template, r.status_code, r.text[:200])
        if r.headers.get("Content-Type", "").startswith("application/json"):
            answer: Any = json.loads(r.text)
            assert answer["error"], (method, template)


def test_twenty_racing_uploads_with_one_key_store_one_bundle(server: Server,
                                                            tmp_path: Path) -> None:
    bundle = build_bundle(tmp_path / "i.tar.zst")
    key = secrets.token_urlsafe(24)
    before = server.stored()
    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: api_upload(
            server, bundle, headers={"Idempotency-Key": key}), range(20)))
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["id"] for a in answers}) == 1
    assert len({a.json()["delete_token"] for a in answers}) == 1
    assert len(server.stored() - before) == 2  # one bundle and its metadata
