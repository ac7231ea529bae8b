"""The triage desk end to end: a real `rage serve`, real uploads (curl, requests, and real
`rage report` bundles of real failing programs), the index and its API checked by count."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.test_server import (
    Server,
    api_upload,
    build_bundle,
    curl,
    make_manifest,
    start_server,
    stop_server,
)

pytest.importorskip("sqlalchemy")
ADMIN = "triage-admin-token"
AUTH = {"Authorization": f"Bearer {ADMIN}"}

# -- generated families of failures -------------------------------------------------------

PY_FUNCS = [("load_config", "read_file"), ("sync", "push_batch"), ("render", "format_row")]


def family_files(family: int, variant: int) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Run files and run metadata of failure ``family``, perturbed by ``variant`` (paths,
    line numbers, PIDs, times, values) the way real reports of one bug differ."""
    home = f"/home/user{variant}"
    if family < len(PY_FUNCS):
        outer, inner = PY_FUNCS[family]
        tb = (f"Traceback (most recent call last):\n"
              f'  File "{home}/src/mytool/cli.py", line {40 + variant}, in main\n'
              f"    {outer}()\n"
              f'  File "{home}/src/mytool/core.py", line {100 + 3 * variant}, in {outer}\n'
              f"    {inner}(x)\n"
              f'  File "/usr/lib/python3.11/json/__init__.py", line 293, in load\n'
              f'  File "{home}/src/mytool/core.py", line {7 + variant}, in {inner}\n'
              f"KeyError: 'item-{variant * 37}'\n")
        stderr = f"2026-03-0{variant % 9 + 1}T10:00:0{variant % 10}Z starting\n" + tb
        run = {"argv": ["mytool", "sync", f"--batch={variant}"], "exit_code": 1,
               "status": "failed", "signal": None}
    elif family == len(PY_FUNCS):
        stderr = (f"mytool[{1000 + variant}]: connecting to 10.0.{variant}.7:5432\n"
                  f"error: connection to 10.0.{variant}.7:5432 timed out after {variant + 3}s"
                  f" (pid {4000 + variant})\n")
        run = {"argv": ["mytool", "push", f"{home}/data{variant}.db"], "exit_code": 2,
               "status": "failed", "signal": None}
    else:
        stderr = f"fatal: cannot open {home}/.cache/mytool/{variant:08x}.lock: permission denied\n"
        run = {"argv": ["mytool", "gc"], "exit_code": 1, "status": "failed", "signal": None}
    files = {"summary.md": b"# mytool failed\n", "run/stderr.log": stderr.encode()}
    return files, run


FAMILIES = len(PY_FUNCS) + 2


def upload_family(server: Server, tmp: Path, family: int, variant: int, *,
                  version: str = "1.2.3", note: str = "") -> dict[str, Any]:
    files, run = family_files(family, variant)
    manifest = make_manifest(files, app_version=version, note=note or f"report {variant}")
    manifest["run"].update(run)
    path = build_bundle(tmp / f"f{family}-{variant}.tar.zst", files, manifest=manifest)
    r = api_upload(server, path)
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def signatures(server: Server, **params: Any) -> dict[str, Any]:
    r = requests.get(f"{server.url}/api/v1/signatures", params=params, headers=AUTH, timeout=10)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = start_server(tmp_path / "store", "--admin-token", ADMIN)
    yield s
    stop_server(s)


# -- grouping and counting ----------------------------------------------------------------

def test_families_group_into_one_signature_each_with_exact_counts(server: Server,
                                                                   tmp_path: Path) -> None:
    sizes = {f: 3 + 2 * f for f in range(FAMILIES)}
    for f, n in sizes.items():
        for v in range(n):
            upload_family(server, tmp_path, f, v, version=f"1.{v % 3}")
    body = signatures(server, sort="count", per_page=50)
    assert body["total"] == FAMILIES
    assert sorted(s["count"] for s in body["signatures"]) == sorted(sizes.values())
    top = body["signatures"][0]
    assert top["count"] == max(sizes.values()) and top["reporters"] == 1  # all from 127.0.0.1
    assert (top["first_version"], top["last_version"]) == ("1.0", f"1.{(top['count'] - 1) % 3}")
    py = next(s for s in body["signatures"] if s["exception"] == "KeyError")
    assert py["text"].startswith("mytool: KeyError in mytool.core.")
    one = requests.get(py["api_url"], headers=AUTH, timeout=10).json()
    assert len(one["bundles"]) == py["count"] and one["days"][0]["count"] == py["count"]
    assert all(b["url"].startswith(server.url + "/b/") for b in one["bundles"])
    assert any("line numbers" in r for r in one["reasons"])


def test_real_rage_report_bundles_of_a_real_program(server: Server, tmp_path: Path) -> None:
    """Two runs of one bug from different checkouts and inputs, one of another bug: real
    `rage run`, real `rage report --to receiver+URL`."""
    env = {**os.environ, "RAGE_HOME": str(tmp_path / "home")}
    src = ("import sys\ndef parse(v):\n    return int(v)\ndef main():\n"
           "    parse(sys.argv[1]) if sys.argv[1] != 'crash' else [][1]\nmain()\n")
    for i, arg in enumerate(["x1", "y22", "crash"]):
        d = tmp_path / f"checkout{i}"
        d.mkdir()
        (d / "tool.py").write_text("\n" * i + src)  # other checkouts, lines shifted
        subprocess.run([sys.executable, "-m", "rage", "run", "--", sys.executable, "tool.py",
                        arg], cwd=d, env=env, capture_output=True, timeout=60, check=False)
        rep = subprocess.run([sys.executable, "-m", "rage", "report", "--last", "--yes",
                              "--no-collect", "-m", f"note {i}", "--to",
                              f"receiver+{server.url}/"], env=env, capture_output=True,
                             text=True, timeout=60, check=False)
        assert rep.returncode == 0 and "uploaded:" in rep.stdout, rep.stderr
    body = signatures(server, sort="count")
    counts = {s["exception"]: s["count"] for s in body["signatures"]}
    assert counts == {"ValueError": 2, "IndexError": 1}
    assert signatures(server, q="note 2")["signatures"][0]["exception"] == "IndexError"
    assert signatures(server, q="tool.py y22")["total"] == 1  # the command is searched


def test_filters_search_and_paging(server: Server, tmp_path: Path) -> None:
    for f in range(FAMILIES):
        upload_family(server, tmp_path, f, 0, version="2.0" if f == 1 else "1.0",
                      note="DISK is full" if f == 2 else "")
    assert signatures(server, version="2.0")["total"] == 1
    assert signatures(server, q="disk IS")["total"] == 1
    assert signatures(server, q="permission denied")["total"] == 1
    assert signatures(server, q="KeyError")["total"] == len(PY_FUNCS)
    assert signatures(server, app="mytool")["total"] == FAMILIES
    assert signatures(server, app="nope")["total"] == 0
    seen = []
    for page in (1, 2, 3):
        body = signatures(server, per_page=2, page=page)
        assert body["pages"] == 3
        seen += [s["hash"] for s in body["signatures"]]
    assert len(set(seen)) == FAMILIES
    for bad in ({"page": "x"}, {"sort": "bogus"}, {"status": "closed"}, {"per_page": "0"}):
        r = requests.get(f"{server.url}/api/v1/signatures", params=bad, headers=AUTH, timeout=10)
        assert r.status_code == 400 and "\n" not in r.json()["error"]


def test_triage_needs_the_admin_token(server: Server, tmp_path: Path) -> None:
    for path in ("/triage", "/api/v1/signatures", "/triage/0123456789abcdef"):
        assert requests.get(server.url + path, timeout=10).status_code == 401
        bad = {"Authorization": "Bearer wrong"}
        assert requests.get(server.url + path, headers=bad, timeout=10).status_code == 403
    assert requests.get(server.url + "/triage?token=" + ADMIN, timeout=10).status_code == 401
    no_admin = start_server(tmp_path / "other")
    try:
        r = requests.get(no_admin.url + "/triage", headers=AUTH, timeout=10)
        assert r.status_code == 404 and "--admin-token" in r.json()["error"]
    finally:
        stop_server(no_admin)


def test_pages_escape_hostile_text_and_keep_the_csp(server: Server, tmp_path: Path) -> None:
    files = {"summary.md": b"x", "run/stderr.log": b"error: <script>alert(1)</script> bad\n"}
    manifest = make_manifest(files, note="<img src=x onerror=alert(2)>")
    manifest["run"]["argv"] = ["mytool", "<b>"]
    api_upload(server, build_bundle(tmp_path / "h.tar.zst", files, manifest=manifest))
    r = requests.get(server.url + "/triage", headers=AUTH, timeout=10)
    assert r.status_code == 200 and "<script>alert" not in r.text
    assert "error: &lt;script&gt;alert(&lt;num&gt;)" in r.text
    csp = r.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "nonce-" in csp
    sig = signatures(server)["signatures"][0]
    page = requests.get(sig["url"], headers=AUTH, timeout=10)
    assert "<img src=x" not in page.text and "&lt;img src=x onerror=alert(2)&gt;" in page.text
    assert "Why these were grouped" in page.text


def test_deleting_a_bundle_updates_its_signature(server: Server, tmp_path: Path) -> None:
    first = upload_family(server, tmp_path, 0, 0)
    upload_family(server, tmp_path, 0, 1)
    assert signatures(server)["signatures"][0]["count"] == 2
    p = curl("-X", "DELETE", "-H", f"Authorization: Bearer {first['delete_token']}",
             f"{server.url}/api/v1/bundles/{first['id']}")
    assert p.returncode == 0 and "deleted" in p.stdout
    assert signatures(server)["signatures"][0]["count"] == 1


def test_mark_fixed_then_a_later_version_is_a_regression(server: Server,
                                                         tmp_path: Path) -> None:
    upload_family(server, tmp_path, 3, 0, version="1.2")
    sig = signatures(server)["signatures"][0]
    api = sig["api_url"]
    r = requests.post(api, json={"status": "fixed"}, headers=AUTH, timeout=10)
    assert r.status_code == 400 and "fixed_in" in r.json()["error"]
    r = requests.post(api, json={"status": "fixed", "fixed_in": "1.3"}, headers=AUTH, timeout=10)
    assert r.status_code == 200 and r.json()["status"] == "fixed"
    upload_family(server, tmp_path, 3, 1, version="1.2.5")  # an old install: still fixed
    assert signatures(server, status="fixed")["total"] == 1
    upload_family(server, tmp_path, 3, 2, version="1.4")
    got = signatures(server, status="regressed")["signatures"]
    assert [s["hash"] for s in got] == [sig["hash"]] and got[0]["fixed_in"] == "1.3"
    # the HTML form does the same from a browser (a cross-site post is refused)
    form = {"action": "open"}
    r = requests.post(sig["url"], data=form, headers={**AUTH, "Origin": "https://evil.example"},
                      timeout=10, allow_redirects=False)
    assert r.status_code == 403
    r = requests.post(sig["url"], data=form, headers={**AUTH, "Sec-Fetch-Site": "cross-site",
                                                      "Origin": "null"},
                      timeout=10, allow_redirects=False)
    assert r.status_code == 403
    r = requests.post(sig["url"], data=form, headers=AUTH, timeout=10, allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"] == f"/triage/{sig['hash']}"
    assert signatures(server, status="open")["total"] == 1


def test_reindexes_on_start_and_after_an_algorithm_change(tmp_path: Path) -> None:
    store = tmp_path / "store"
    s = start_server(store, "--admin-token", ADMIN)
    try:
        for v in range(4):
            upload_family(s, tmp_path, v % 2, v)
        before = {x["hash"]: x["count"] for x in signatures(s)["signatures"]}
    finally:
        stop_server(s)
    db = store / "index.sqlite3"
    assert db.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(db) as conn:  # as if signed by an older algorithm, grouped wrongly
        conn.execute("UPDATE bundles SET algo_version = 0")
        conn.execute("UPDATE bundles SET signature_id = (SELECT min(id) FROM signatures)")
    s = start_server(store, "--admin-token", ADMIN)
    try:
        assert _eventually(lambda: {x["hash"]: x["count"]
                                    for x in signatures(s)["signatures"]} == before)
    finally:
        stop_server(s)
    with sqlite3.connect(db) as conn:  # as if the receiver died before the index write
        bundle_id, sig_id = conn.execute(
            "SELECT id, signature_id FROM bundles ORDER BY rowid DESC LIMIT 1").fetchone()
        conn.execute("DELETE FROM bundles WHERE id = ?", (bundle_id,))
        conn.execute("UPDATE signatures SET count = count - 1 WHERE id = ?", (sig_id,))
    s = start_server(store, "--admin-token", ADMIN)
    try:
        assert _eventually(lambda: {x["hash"]: x["count"]
                                    for x in signatures(s)["signatures"]} == before)
    finally:
        stop_server(s)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    s = start_server(store, "--admin-token", ADMIN)  # a lost index is rebuilt from storage
    try:
        assert _eventually(lambda: {x["hash"]: x["count"]
                                    for x in signatures(s)["signatures"]} == before)
    finally:
        stop_server(s)


def _eventually(check: Any, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return bool(check())


def test_serve_refuses_a_bad_database_url_in_one_line(tmp_path: Path) -> None:
    for url, words in (("nosuchdb://x", "bad --database URL"),
                       (f"sqlite:///{tmp_path}/missing/dir/i.db", "cannot open the index")):
        p = subprocess.run([sys.executable, "-m", "rage", "serve", "--port", "0", "--storage",
                            str(tmp_path / "s"), "--database", url], capture_output=True,
                           text=True, timeout=30, check=False)
        assert p.returncode != 0 and words in p.stderr and "Traceback" not in p.stderr


def test_counts_exact_under_concurrent_uploads(server: Server, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    paths = []
    for i in range(60):
        files, run = family_files(i % FAMILIES, i)
        manifest = make_manifest(files)
        manifest["run"].update(run)
        paths.append(build_bundle(tmp_path / f"c{i}.tar.zst", files, manifest=manifest))
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda p: api_upload(server, p).status_code, paths))
    assert codes == [201] * 60
    counts = Counter({s["hash"]: s["count"] for s in signatures(server)["signatures"]})
    assert sorted(counts.values()) == [60 // FAMILIES] * FAMILIES


def test_a_bundle_of_several_zstd_frames_gets_its_signature(server: Server,
                                                           tmp_path: Path) -> None:
    """`pzstd` and concatenated files write several frames; the receiver validates across
    them, and the signature must read past the first one too (the traceback is in the
    second frame here), on upload and when the index is rebuilt from the stored bundles
    (rage.server.triage.bundle_texts): the same signature as the one-frame bundle's."""
    import json

    import zstandard

    from rage.server.triage import bundle_texts

    one = upload_family(server, tmp_path, 0, 1)
    path = tmp_path / "f0-1.tar.zst"  # the one-frame bundle upload_family wrote
    tar = zstandard.ZstdDecompressor().decompress(path.read_bytes())
    cut = len(tar) // 3  # inside the members: the traceback lies past the first frame
    c = zstandard.ZstdCompressor()
    path.write_bytes(c.compress(tar[:cut]) + c.compress(tar[cut:]))
    r = api_upload(server, path)
    assert r.status_code == 201, r.text
    body = signatures(server)
    assert body["total"] == 1, [s["text"] for s in body["signatures"]]
    assert body["signatures"][0]["count"] == 2
    assert r.json()["id"] != one["id"]
    stored = server.storage / "bundles" / f"{r.json()['id']}.tar.zst"
    manifest = json.loads(tar[512:tar.index(b"\0", 512)])
    with open(stored, "rb") as f:
        texts = bundle_texts(f, manifest, 1 << 30)
    assert "KeyError: 'item-37'" in texts["run/stderr.log"]
