"""What the client found before sending (what changed since it last worked, whose bug it
is) shows on the receiver's bundle page, as text: uploaded manifests are hostile, so a
tracker is a link only when it is an http(s) address."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.test_server import (
    Server,
    build_bundle,
    default_files,
    make_manifest,
    start_server,
    stop_server,
)

ADMIN = "findings-admin-token"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = start_server(tmp_path / "store", "--admin-token", ADMIN)
    yield s
    stop_server(s)


def page(server: Server, tmp_path: Path, **manifest: object) -> str:
    files = default_files()
    path = build_bundle(tmp_path / "b.tar.zst", files,
                        manifest=make_manifest(files, **manifest))
    with open(path, "rb") as f:
        r = requests.post(f"{server.url}/api/v1/bundles", data=f, timeout=30)
    assert r.status_code == 201, r.text
    got = requests.get(r.json()["url"], timeout=30,
                       headers={"Authorization": f"Bearer {ADMIN}"})
    assert got.status_code == 200
    return got.text


def test_the_page_says_what_changed_and_whose_bug(server: Server, tmp_path: Path) -> None:
    html = page(server, tmp_path,
                since_it_worked="Since it last worked (run 3f2a91c0, 3 days ago): "
                                "requests 2.31.0 -> 2.32.3, option --fast added",
                culprit={"name": "requests", "version": "2.32.3", "kind": "python",
                         "tracker": "https://github.com/psf/requests/issues",
                         "where": ".../requests/models.py"})
    assert "requests 2.31.0 -&gt; 2.32.3, option --fast added" in html
    assert "The crash is inside requests 2.32.3" in html
    assert 'href="https://github.com/psf/requests/issues"' in html


def test_hostile_findings_are_text_and_no_link(server: Server, tmp_path: Path) -> None:
    html = page(server, tmp_path, since_it_worked="<script>alert(1)</script>",
                culprit={"name": "<img src=x onerror=alert(1)>", "kind": "python",
                         "tracker": "javascript:alert(document.cookie)"})
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html
    assert "<img src=x" not in html
    assert "javascript:" not in html


def test_a_signature_counts_what_its_reporters_found(server: Server, tmp_path: Path) -> None:
    """Three reports of one crash, two of them from clients that found the same culprit and
    change: the signature's page says "2 of 3 reports"."""
    found = {"since_it_worked": "Since it last worked (run 3f2a91c0, 2 days ago): "
                                "requests 2.31.0 -> 2.32.3, env HTTPS_PROXY changed",
             "culprit": {"name": "requests", "version": "2.32.3", "kind": "python"}}
    for i, extra in enumerate([found, found, {}]):
        page(server, tmp_path, note=f"report {i}", **extra)
    auth = {"Authorization": f"Bearer {ADMIN}"}
    [sig] = requests.get(f"{server.url}/api/v1/signatures", headers=auth,
                         timeout=10).json()["signatures"]
    one = requests.get(f"{server.url}/api/v1/signatures/{sig['hash']}", headers=auth,
                       timeout=10).json()
    assert one["count"] == 3
    assert one["findings"] == [
        {"text": "env HTTPS_PROXY changed", "reports": 2, "of": 3},
        {"text": "inside requests 2.32.3", "reports": 2, "of": 3},
        {"text": "requests 2.31.0 -> 2.32.3", "reports": 2, "of": 3}]
    html = requests.get(f"{server.url}/triage/{sig['hash']}", headers=auth, timeout=10).text
    assert "2 of 3 reports: inside requests 2.32.3" in html
