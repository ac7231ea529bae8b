"""The triage index on a real PostgreSQL server (tests/services.py): the same contract as on
SQLite (tests/test_index.py), plus exact counters when several processes write at once."""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Iterator
from typing import Literal

import pytest

from tests import test_index as T
from tests.services import Postgres

pytest.importorskip("psycopg")
pytestmark = pytest.mark.slow

from rage.server.facts import Event  # noqa: E402
from rage.server.index import Index, Query  # noqa: E402


def _url(pg: Postgres) -> str:
    url = pg.database("t" + uuid.uuid4().hex[:12])
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.fixture
def index(pg: Postgres) -> Iterator[Index]:
    ix = Index(_url(pg))
    yield ix
    ix.close()


def test_counts_days_versions_reporters(index: Index) -> None:
    T.test_counts_days_versions_reporters(index)


def test_fixed_then_later_version_reopens_as_regression(index: Index) -> None:
    T.test_fixed_then_later_version_reopens_as_regression(index)


def test_search_filters_and_paging(index: Index) -> None:
    T.test_search_filters_and_paging(index)


def test_forget_and_reassign_rebuild_counters(index: Index) -> None:
    T.test_forget_and_reassign_rebuild_counters(index)


def test_migrated_once_and_reopened(pg: Postgres) -> None:
    url = _url(pg)
    first = Index(url)
    first.record(T.sig("a"), T.facts(1))
    first.close()
    again = Index(url)  # a second receiver starting on a migrated database
    got = again.signature(T.sig("a").hash)
    assert got is not None and got["count"] == 1
    again.close()


def _writer(url: str, worker: int, n: int, q: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    ix = Index(url)
    events: list[Event | Literal["dup", "counted-twice"] | None] = []
    for i in range(n):
        k = worker * n + i
        r = ix.record(T.sig(f"cmd{k % 5}"), T.facts(k, reporter=f"r{k % 7}"))
        events.append(r.event if r else "dup")
        # every bundle is offered twice (a retried upload): the second must count nothing
        r2 = ix.record(T.sig(f"cmd{k % 5}"), T.facts(k, reporter=f"r{k % 7}"))
        events.append("dup" if r2 is None else "counted-twice")
    ix.close()
    q.put(events)


def test_processes_writing_at_once_keep_counters_exact(pg: Postgres) -> None:
    url = _url(pg)
    Index(url).close()  # migrate once, as `rage serve --migrate` would
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, w, 60, q)) for w in range(3)]
    for p in procs:
        p.start()
    events = [e for _ in procs for e in q.get(timeout=120)]
    for p in procs:
        p.join(30)
    assert events.count("new") == 5
    assert events.count("dup") == 180 and "counted-twice" not in events
    ix = Index(url)
    rows, total = ix.search(Query(per_page=10))
    assert total == 5 and sorted(r["count"] for r in rows) == [36] * 5
    assert all(r["reporters"] == 7 for r in rows)
    ix.close()
