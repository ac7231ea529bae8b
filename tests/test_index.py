"""The SQL triage index on a real SQLite file: counters, concurrency, statuses, migrations."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rage.server import schema
from rage.server.index import BundleFacts, Index, Query, version_gt
from rage.server.signature import Signature, compute
from tests.services import Postgres

T0 = datetime(2026, 3, 1, 12, 0, 0)


def sig(name: str, app: str = "mytool") -> Signature:
    m = {"app": app, "run": {"argv": [app, name], "exit_code": 1}}
    return compute(m, {"run/stderr.log": f"error: {name} failed\n"})


def facts(n: int, *, version: str | None = "1.0", reporter: str = "r1", note: str = "",
          at: datetime = T0, app: str = "mytool") -> BundleFacts:
    return BundleFacts(f"b{n:030d}", at, app, version, reporter, "failed",
                       f"{app} sync --all", note, 1000)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    ix = Index(f"sqlite:///{tmp_path / 'index.sqlite3'}")
    yield ix
    ix.close()


def test_counts_days_versions_reporters(index: Index) -> None:
    s = sig("sync")
    first = index.record(s, facts(1, version="1.0", reporter="a", at=T0))
    assert first is not None and first.event == "new"
    index.record(s, facts(2, version="1.2", reporter="b", at=T0 + timedelta(days=1)))
    index.record(s, facts(3, version="1.1", reporter="a", at=T0 + timedelta(hours=1)))
    assert index.record(s, facts(3)) is None  # the same bundle twice counts once
    got = index.signature(s.hash)
    assert got is not None
    assert (got["count"], got["reporters"]) == (3, 2)
    assert (got["first_version"], got["last_version"]) == ("1.0", "1.2")
    assert got["first_seen"] == "2026-03-01T12:00:00Z"
    assert got["last_seen"] == "2026-03-02T12:00:00Z"
    assert got["days"] == [{"day": "2026-03-01", "count": 2}, {"day": "2026-03-02", "count": 1}]
    assert [v["version"] for v in got["versions"]] == ["1.0", "1.1", "1.2"]
    assert [b["id"][-1] for b in got["bundles"]] == ["2", "3", "1"]


def test_concurrent_records_are_exact(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite3'}"
    indexes = [Index(url) for _ in range(3)]  # three "receivers" on one file
    sigs = [sig(f"cmd{i}") for i in range(5)]

    def one(n: int) -> str | None:
        r = indexes[n % 3].record(sigs[n % 5], facts(n, reporter=f"r{n % 7}"))
        return r.event if r else "dup"

    with ThreadPoolExecutor(12) as pool:
        events = list(pool.map(one, range(300)))
    assert events.count("new") == 5 and "dup" not in events
    rows, total = indexes[0].search(Query(per_page=10))
    assert total == 5 and all(r["count"] == 60 for r in rows)
    assert all(r["reporters"] == 7 for r in rows)
    for ix in indexes:
        ix.close()


def test_fixed_then_later_version_reopens_as_regression(index: Index) -> None:
    s = sig("sync")
    index.record(s, facts(1, version="1.2"))
    assert index.set_status(s.hash, "fixed", "1.3")
    assert not index.set_status("0" * 24, "fixed", "1.3")
    r = index.record(s, facts(2, version="1.2.9"))  # an old install: still fixed
    assert r is not None and r.event is None
    r = index.record(s, facts(3, version="1.10"))
    assert r is not None and r.event == "regression"
    got = index.signature(s.hash)
    assert got is not None and got["status"] == "regressed" and got["fixed_in"] == "1.3"
    r = index.record(s, facts(4, version="1.11"))  # notified once, not per report
    assert r is not None and r.event is None


def test_a_batch_counts_like_one_by_one(index: Index) -> None:
    a, b = sig("a"), sig("b")
    index.record(b, facts(0, version="1.0"))
    assert index.set_status(b.hash, "fixed", "1.1")
    got = index.record_many([
        (a, facts(1, reporter="x", at=T0 + timedelta(days=1))),
        (a, facts(2, reporter="x", at=T0)),
        (a, facts(1)),  # the same bundle twice in one batch
        (b, facts(3, version="1.0")),
        (b, facts(4, version="1.2")),
        (b, facts(5, version="1.3")),
        (a, facts(6, reporter="y", version="0.9", at=T0 + timedelta(days=1))),
    ])
    assert [r.event if r else None for r in got] == [
        "new", None, None, None, "regression", None, None]
    assert got[2] is None and all(r is not None for n, r in enumerate(got) if n != 2)
    one = index.signature(a.hash)
    assert one is not None and (one["count"], one["reporters"]) == (3, 2)
    assert one["days"] == [{"day": "2026-03-01", "count": 1}, {"day": "2026-03-02", "count": 2}]
    assert (one["first_seen"], one["last_seen"]) == ("2026-03-01T12:00:00Z",
                                                     "2026-03-02T12:00:00Z")
    two = index.signature(b.hash)
    assert two is not None and two["count"] == 4 and two["status"] == "regressed"


def test_version_order() -> None:
    assert version_gt("1.10", "1.9") and version_gt("1.3", "1.3rc1")
    assert version_gt("1.3.1", "1.3") and not version_gt("1.3", "1.3")
    assert not version_gt(None, "1.0") and not version_gt("2.0", None)


def test_search_filters_and_paging(index: Index) -> None:
    for n in range(30):
        app = "other" if n % 10 == 0 else "mytool"
        index.record(sig(f"cmd{n}", app), facts(n, version=f"1.{n % 3}", app=app,
                                                note="disk full" if n == 7 else "",
                                                at=T0 + timedelta(minutes=n)))
    rows, total = index.search(Query(per_page=10))
    assert total == 30 and len(rows) == 10 and rows[0]["text"].endswith("cmd29 failed")
    page3, _ = index.search(Query(per_page=10, page=3))
    assert page3[-1]["text"].endswith("cmd0 failed")
    assert index.search(Query(app="other"))[1] == 3
    assert index.search(Query(version="1.1"))[1] == 10
    assert [r["text"] for r in index.search(Query(q="DISK FULL"))[0]] == [
        "mytool cmd7: exit 1: error: cmd7 failed"]
    assert index.search(Query(q="cmd1"))[1] == 11  # cmd1, cmd10..cmd19
    assert index.search(Query(q="100%"))[1] == 0  # LIKE wildcards are literal
    assert index.facets()["apps"] == ["mytool", "other"]


def test_forget_and_reassign_rebuild_counters(index: Index) -> None:
    a, b = sig("a"), sig("b")
    index.record(a, facts(1, reporter="x"))
    index.record(a, facts(2, reporter="y", at=T0 + timedelta(days=2)))
    index.forget(facts(2).id)
    got = index.signature(a.hash)
    assert got is not None and (got["count"], got["reporters"]) == (1, 1)
    assert got["last_seen"] == "2026-03-01T12:00:00Z"
    index.reassign(facts(1).id, b)
    assert index.signature(a.hash) is None
    got = index.signature(b.hash)
    assert got is not None and got["count"] == 1 and len(got["bundles"]) == 1


def test_an_index_of_schema_1_gains_the_findings_column(tmp_path: Path) -> None:
    """An index a receiver of schema 1 made (no bundles.findings) is upgraded in place,
    its rows kept, and then keeps what clients found."""
    path = tmp_path / "index.sqlite3"
    old = Index(f"sqlite:///{path}")
    old.record(sig("a"), facts(1))
    old.close()
    with sqlite3.connect(path) as db:  # as version 1 left it
        db.execute("ALTER TABLE bundles DROP COLUMN findings")
        db.execute("UPDATE rage_schema SET version = 1")
    index = Index(f"sqlite:///{path}")
    try:
        index.record(sig("a"), dataclasses.replace(facts(2), findings=("inside lib 1.0",)))
        got = index.signature(sig("a").hash)
        assert got is not None and got["count"] == 2
        assert got["findings"] == [{"text": "inside lib 1.0", "reports": 1, "of": 2}]
    finally:
        index.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM rage_schema").fetchall() == [(schema.LATEST,)]


def test_migrations_are_versioned(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    Index(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM rage_schema").fetchall() == [(schema.LATEST,)]
        db.execute("UPDATE rage_schema SET version = 999")
    with pytest.raises(schema.SchemaTooNew, match="upgrade rage"):
        Index(f"sqlite:///{path}")
    assert path.stat().st_mode & 0o777 == 0o600


# -- the same index on a real PostgreSQL 15 (Debian's), when this machine has one ----------

def _database(pg: Postgres, name: str) -> str:
    """A new database ``name`` on the module's server (tests/conftest.py's ``pg``: whichever
    Debian PostgreSQL is installed), as the index's URL."""
    pytest.importorskip("psycopg")
    return pg.database(name).replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.mark.slow
@pytest.mark.parametrize("check", [test_counts_days_versions_reporters,
                                   test_fixed_then_later_version_reopens_as_regression,
                                   test_search_filters_and_paging,
                                   test_forget_and_reassign_rebuild_counters])
def test_the_same_on_postgresql(pg: Postgres, check: Any) -> None:
    ix = Index(_database(pg, check.__name__[5:40]))
    try:
        check(ix)
    finally:
        ix.close()


@pytest.mark.slow
def test_concurrent_receivers_exact_on_postgresql(pg: Postgres) -> None:
    url = _database(pg, "concurrent")
    indexes = [Index(url) for _ in range(3)]  # three receivers starting together: one migrates
    sigs = [sig(f"cmd{i}") for i in range(5)]

    def one(n: int) -> str | None:
        r = indexes[n % 3].record(sigs[n % 5], facts(n, reporter=f"r{n % 7}"))
        return r.event if r else "dup"

    with ThreadPoolExecutor(12) as pool:
        events = list(pool.map(one, range(300)))
    assert events.count("new") == 5 and "dup" not in events
    assert indexes[1].record(sigs[0], facts(0)) is None
    rows, total = indexes[2].search(Query())
    assert total == 5 and {(r["count"], r["reporters"]) for r in rows} == {(60, 7)}
    for ix in indexes:
        ix.close()
