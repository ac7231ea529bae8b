"""`rage serve --retention-days N --retention APP=DAYS` from the command line, on local storage.

Bundles are uploaded to a real receiver, stopped; their index rows are aged in its SQLite
file; the receiver is started again with retention options and its start-up sweep removes
exactly what each app's limit says (an app with its own limit is not held to the default).
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import requests

from tests.test_server import Server, api_upload, build_bundle, default_files, make_manifest

pytest.importorskip("sqlalchemy")


def _serve(storage: Path, log: Path, *args: str) -> Server:
    """`rage serve --port 0`, its log (stderr) kept in ``log`` to read the sweep's line."""
    err = open(log, "ab")  # noqa: SIM115 (the process holds it until stopped)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rage", "serve", "--port", "0", "--storage", str(storage), *args],
        stdout=subprocess.PIPE, stderr=err, text=True, env=dict(os.environ))
    err.close()
    assert proc.stdout is not None
    first = proc.stdout.readline()
    m = re.search(r"(http://\S+?)/?$", first.strip())
    if not m:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        raise AssertionError(f"rage serve printed {first!r}: {log.read_text()}")
    return Server(m.group(1), storage, proc)


def _stop(server: Server) -> None:
    server.proc.terminate()
    server.proc.wait(timeout=15)
    assert server.proc.stdout is not None
    server.proc.stdout.close()


def _age(db: Path, ages: dict[str, int]) -> None:
    """Move bundles' received_at ``days`` into the past, as if received then."""
    with sqlite3.connect(db) as conn:
        for bundle_id, days in ages.items():
            (stamp,) = conn.execute("SELECT received_at FROM bundles WHERE id = ?",
                                    (bundle_id,)).fetchone()
            old = datetime.fromisoformat(stamp) - timedelta(days=days)
            conn.execute("UPDATE bundles SET received_at = ? WHERE id = ?",
                         (old.strftime("%Y-%m-%d %H:%M:%S.%f"), bundle_id))
    conn.close()


def test_serve_retention_options_keep_each_apps_own_limit(tmp_path: Path) -> None:
    storage, log = tmp_path / "store", tmp_path / "serve.log"
    server = _serve(storage, log)
    ids: dict[str, list[str]] = {"keeper": [], "plain": []}
    try:
        for n in range(6):
            app = "keeper" if n < 3 else "plain"
            files = default_files()
            manifest = make_manifest(files, app=app)
            manifest["run"]["id"] = f"20260101T00000{n}Z-abcdef1{n}"
            resp = api_upload(server, build_bundle(tmp_path / f"b{n}.tar.zst", files,
                                                   manifest=manifest))
            assert resp.status_code == 201, resp.text
            ids[app].append(resp.json()["id"])
    finally:
        _stop(server)
    keeper, plain = ids["keeper"], ids["plain"]
    # keeper (own limit 365 days): 40 days old stays, 400 goes; plain (default 30): 40 goes
    _age(storage / "index.sqlite3", {keeper[0]: 40, keeper[1]: 400, plain[0]: 40, plain[1]: 10})
    gone = {keeper[1], plain[0]}

    server = _serve(storage, log, "--retention-days", "30", "--retention", "keeper=365")
    try:
        deadline = time.monotonic() + 60  # a hang guard: the sweep runs at start-up
        while "retention: removed" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        swept = re.findall(r"retention: removed \d+ bundle\(s\)", log.read_text())
        assert swept == ["retention: removed 2 bundle(s)"]
        for bundle_id in keeper + plain:
            got = requests.get(f"{server.url}/b/{bundle_id}.tar.zst", timeout=30)
            assert got.status_code == (404 if bundle_id in gone else 200), bundle_id
        on_disk = "\n".join(server.stored())
        assert [b for b in keeper + plain if b in on_disk] == [
            b for b in keeper + plain if b not in gone]
    finally:
        _stop(server)


def test_serve_rejects_a_bad_retention_option_in_one_line(tmp_path: Path) -> None:
    from tests.conftest import run_rage

    for args in (("--retention", "keeper"), ("--retention", "keeper=0"),
                 ("--retention-days", "-1")):
        p = run_rage("serve", "--storage", str(tmp_path / "s"), *args)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
