"""A stored bundle whose index write failed is counted once the index takes writes again,
without a restart: a real `rage serve`, its real SQLite index refusing inserts for a while
(a trigger another connection adds and drops), real uploads."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from tests.test_server import api_upload, build_bundle, default_files, make_manifest
from tests.test_server_retention import _serve, _stop

pytest.importorskip("sqlalchemy")

REFUSE = ("CREATE TRIGGER refuse_bundles BEFORE INSERT ON bundles "
          "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")


def _indexed(db: Path) -> dict[str, int]:
    """Each indexed bundle's signature count."""
    with sqlite3.connect(db, timeout=30) as conn:
        rows = conn.execute("SELECT b.id, s.count FROM bundles b JOIN signatures s "
                            "ON s.id = b.signature_id").fetchall()
    conn.close()
    return dict(rows)


def _execute(db: Path, sql: str) -> None:
    with sqlite3.connect(db, timeout=30) as conn:
        conn.execute(sql)
    conn.close()


def test_a_bundle_the_index_refused_is_counted_once_it_takes_writes(tmp_path: Path) -> None:
    storage, log = tmp_path / "store", tmp_path / "serve.log"
    server = _serve(storage, log)
    db = storage / "index.sqlite3"
    try:
        files = default_files()
        first = api_upload(server, build_bundle(tmp_path / "a.tar.zst", files,
                                                manifest=make_manifest(files, app="demo")))
        assert first.status_code == 201, first.text
        _execute(db, REFUSE)
        ids = []
        for n in range(3):  # the same crash again, while the index refuses every insert
            manifest = make_manifest(files, app="demo")
            manifest["run"]["id"] = f"20260101T00000{n}Z-abcdef1{n}"
            resp = api_upload(server, build_bundle(tmp_path / f"b{n}.tar.zst", files,
                                                   manifest=manifest))
            assert resp.status_code == 201, resp.text  # stored: the upload succeeded
            ids.append(resp.json()["id"])
        deadline = time.monotonic() + 60  # a hang guard
        while (log.read_text().count("could not index bundle") < 3
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert all(f"could not index bundle {i}" in log.read_text() for i in ids)
        assert set(_indexed(db)) == {first.json()["id"]}
        _execute(db, "DROP TRIGGER refuse_bundles")
        while len(_indexed(db)) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        indexed = _indexed(db)
        # every upload counted, once, under the one signature; no restart in between
        assert set(indexed) == {first.json()["id"], *ids}
        assert set(indexed.values()) == {4}
        assert server.proc.poll() is None
    finally:
        _stop(server)
