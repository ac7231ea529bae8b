"""A crash storm: many reports of the same crash at once, on three receivers that share one
SeaweedFS (S3) and one PostgreSQL, all real servers.

The same crash's signature row is the hot spot: every receiver's index writer updates its
counter. Reports of one crash and of distinct crashes arrive together, spread over the
receivers; every upload must get its 201 (no deadlock, no serialization failure reaches a
client), every count must be exact, and PostgreSQL must have detected no deadlock (one
costs a second of ``deadlock_timeout`` and a retry of the whole batch).

``bench/bench_storm.py`` measures the same storm at 1,000 + 1,000 uploads.
"""

from __future__ import annotations

import http.client
import io
import itertools
import json
import random
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.services import Postgres, SeaweedFS
from tests.test_scale_out import Receiver, serve_args, start, stop
from tests.test_server import make_manifest, reg, tar_bytes

pytest.importorskip("boto3")
pytest.importorskip("psycopg")
pytest.importorskip("sqlalchemy")
pytestmark = pytest.mark.slow


def crash_bundle(n: int, crash: str, attach: bytes = b"") -> bytes:
    """Report ``n`` of crash ``crash``: reports of one crash differ as real ones do (home,
    line numbers, the failing value), distinct crashes in their exception and frames.
    ``attach``: a file attached to the report (bench/bench_storm.py weighs bundles so)."""
    import zstandard

    home = f"/home/user{n}"
    tb = (f"Traceback (most recent call last):\n"
          f'  File "{home}/src/mytool/cli.py", line {40 + n % 50}, in main\n'
          f"    run_{crash}()\n"
          f'  File "{home}/src/mytool/core.py", line {100 + n % 70}, in run_{crash}\n'
          f"    step_{crash}(x)\n"
          f'  File "{home}/src/mytool/core.py", line {7 + n % 30}, in step_{crash}\n'
          f"KeyError: 'item-{n * 37}'\n")
    files = {"summary.md": b"# mytool failed\n", "run/stderr.log": tb.encode()}
    if attach:
        files["run/attachments/blob.bin"] = attach
    manifest = make_manifest(files, note=f"report {n}")
    manifest["run"].update({"argv": ["mytool", "sync", f"--batch={n}"], "exit_code": 1,
                            "id": f"20260101T000000Z-{n:08x}"})
    members = [reg("manifest.json", json.dumps(manifest).encode())]
    members += [reg(name, data) for name, data in files.items()]
    return zstandard.ZstdCompressor().compress(tar_bytes(members))


def storm(urls: list[str], bodies: list[bytes], clients: int) -> tuple[list[int], float]:
    """POST every body once from ``clients`` threads, client i to ``urls[i % len(urls)]``
    (as a load balancer spreads them), each on one keep-alive connection; returns each
    upload's HTTP status (0: no answer) and the seconds the storm took."""
    statuses = [0] * len(bodies)
    order = itertools.count()
    take = threading.Lock()
    start_gun = threading.Barrier(clients)

    def client(c: int) -> None:
        target = urlsplit(urls[c % len(urls)])
        conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=300)
        start_gun.wait()
        try:
            while True:
                with take:
                    i = next(order)
                if i >= len(bodies):
                    return
                try:
                    conn.request("POST", "/api/v1/bundles", body=bodies[i],
                                 headers={"Content-Type": "application/zstd"})
                    r = conn.getresponse()
                    r.read()
                    statuses[i] = r.status
                except (OSError, http.client.HTTPException):
                    conn.close()  # statuses[i] stays 0; the next request reconnects
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return statuses, time.perf_counter() - t0


def index_counts(db: str) -> tuple[dict[str, int], int, dict[str, int]]:
    """Per signature text: its counter; the number of bundle rows; per signature text: the
    sum of its per-day counters."""
    import psycopg

    with psycopg.connect(db) as conn:
        counts: dict[str, int] = {str(t): int(c) for t, c in conn.execute(
            "SELECT text, count FROM signatures").fetchall()}
        rows = conn.execute("SELECT count(*) FROM bundles").fetchone()
        days: dict[str, int] = {str(t): int(c) for t, c in conn.execute(
            "SELECT s.text, sum(d.count) FROM signature_days d JOIN signatures s "
            "ON s.id = d.signature_id GROUP BY s.text").fetchall()}
    assert rows is not None
    return counts, int(rows[0]), days


def deadlocks(db: str, *, settle: float = 0) -> int:
    """PostgreSQL's count of deadlocks detected in ``db``. A backend reports its statistics
    when idle for a while or when it exits: with ``settle``, wait up to that long for every
    other connection to the database to be gone first (stop the receivers before)."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                               "current_database() AND pid <> pg_backend_pid()").fetchone()
            if row is not None and row[0] == 0:
                break
            time.sleep(0.1)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT deadlocks FROM pg_stat_database "
                           "WHERE datname = current_database()").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.timeout(600)
def test_a_crash_storm_on_three_receivers_counts_every_report(weed: SeaweedFS,
                                                              pg: Postgres) -> None:
    bucket = weed.make_bucket("storm-" + uuid.uuid4().hex[:8])
    db = pg.database("storm" + uuid.uuid4().hex[:8])
    receivers: list[Receiver] = []
    try:
        receivers = [start(serve_args(weed, bucket, db), weed.env) for _ in range(3)]
        # two crashes reported 75 times each (the storm: their rows are the hot spots, and
        # a batch holds both, in either order), among 150 crashes reported once each
        plan = ["hot_a"] * 75 + ["hot_b"] * 75 + [f"once_{k}" for k in range(150)]
        random.Random(39).shuffle(plan)
        bodies = [crash_bundle(n, crash) for n, crash in enumerate(plan)]
        before = deadlocks(db)
        statuses, elapsed = storm([r.url for r in receivers], bodies, clients=36)
        assert [s for s in statuses if s != 201] == []
        counts, rows, days = index_counts(db)
        hot = {text: c for text, c in counts.items() if "hot_" in text}
        assert sorted(hot.values()) == [75, 75], hot
        assert len(counts) == 152 and sorted(counts.values())[:150] == [1] * 150
        assert rows == 300 and sum(counts.values()) == 300
        assert days == counts  # the per-day counters agree with the totals
        print(f"\n300 uploads (150 of two crashes) over 3 receivers in {elapsed:.1f}s")
    finally:
        for r in receivers:
            stop(r)
    assert deadlocks(db, settle=30) == before, "PostgreSQL detected deadlocks between receivers"


def test_crash_bundle_signs_alike_and_apart() -> None:
    from rage.bundle import validate_bundle
    from rage.server import signature as signing
    from rage.server.triage import Tails

    def sig(n: int, crash: str) -> str:
        tails = Tails()
        manifest = validate_bundle(io.BytesIO(crash_bundle(n, crash)), 1 << 20,
                                   sinks=tails.sinks)
        s: Any = signing.compute(manifest, tails.texts())
        return str(s.hash)

    assert sig(1, "hot_a") == sig(2, "hot_a") != sig(3, "hot_b")
    assert len({sig(n, f"once_{n}") for n in range(5)}) == 5


def test_two_writers_lock_the_same_crashes_in_one_order(pg: Postgres) -> None:
    """Two receivers' batches hold the same two crashes in opposite order, and each writer
    is held just after its first signature upsert until the other has made its own: if
    they locked rows in batch order, each would now wait for the other (PostgreSQL fails
    one with a deadlock after ``deadlock_timeout``)."""
    import contextlib

    import sqlalchemy as sa

    from rage.server.index import Index
    from tests import test_index as T

    url = pg.database("order" + uuid.uuid4().hex[:8]).replace(
        "postgresql://", "postgresql+psycopg://", 1)
    a, b = Index(url), Index(url)
    both_hold_one = threading.Barrier(2)
    held = threading.local()

    def hold(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.startswith("INSERT INTO signatures") and not getattr(held, "once", False):
            held.once = True
            # a writer that waits on the other's row never gets here: the barrier breaks
            with contextlib.suppress(threading.BrokenBarrierError):
                both_hold_one.wait(1.5)

    for ix in (a, b):
        sa.event.listen(ix.engine, "after_cursor_execute", hold)
    x, y = T.sig("crash-x"), T.sig("crash-y")
    errors: list[BaseException] = []

    def write(ix: Index, items: list[Any]) -> None:
        try:
            ix.record_many(items)
        except Exception as e:
            errors.append(e)

    try:
        # new crashes (two inserts meet on the unique index), then known ones (two updates)
        for n in (0, 4):
            both_hold_one.reset()
            writers = [
                threading.Thread(target=write, args=(a, [(x, T.facts(n + 1)),
                                                         (y, T.facts(n + 2))])),
                threading.Thread(target=write, args=(b, [(y, T.facts(n + 3)),
                                                         (x, T.facts(n + 4))]))]
            for t in writers:
                t.start()
            for t in writers:
                t.join(60)
            assert errors == []
            for s in (x, y):
                got = a.signature(s.hash)
                assert got is not None and got["count"] == n // 2 + 2
    finally:
        a.close()
        b.close()
