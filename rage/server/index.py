"""The triage index: signatures, their counters, and the bundles in each (SQL).

A SQLite file by default; any SQLAlchemy URL (``postgresql+psycopg://...``) works the same,
since only Core constructs and ``INSERT ... ON CONFLICT`` (both dialects) are used.
Counters are updated in the database, never read-modify-written in Python, so concurrent
receivers stay exact: the signature row is upserted with ``count = count + 1``, the
per-day row likewise, and a reporter counts once because its (signature, reporter) row is
inserted ``ON CONFLICT DO NOTHING`` and only a real insert bumps ``reporters``.

SQLite: WAL (readers never wait for the writer), write transactions ``BEGIN IMMEDIATE``
(a deferred one that later writes can fail at once with "database is locked" instead of
waiting), a busy timeout, foreign keys on.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, date, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from rage.server import queries
from rage.server import schema as S
from rage.server.batch import Expected, GroupCommit, aggregate
from rage.server.facts import BundleFacts, Event, Recorded
from rage.server.queries import PAGE_SIZE, SORTS, STATUSES, Query
from rage.server.signature import ALGORITHM_VERSION, Signature
from rage.versions import version_gt, version_key

__all__ = ["PAGE_SIZE", "SORTS", "STATUSES", "BundleFacts", "Index", "Query", "Recorded",
           "version_gt", "version_key"]


def now_utc() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Index:
    """Thread-safe: every call runs in its own transaction on a pooled connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:  # a database server restarts: test pooled connections before using them
            kwargs["pool_pre_ping"] = True
        self.engine = sa.create_engine(url, **kwargs)
        self._write_lock: AbstractContextManager[Any] = nullcontext()
        if self.engine.dialect.name == "sqlite":
            _private_file(self.engine.url.database)
            _sqlite_setup(self.engine)
            self._write_lock = threading.Lock()
            self._stop = threading.Event()
            threading.Thread(target=self._checkpoints, name="rage-index-checkpoint",
                             daemon=True).start()
        self.migrated_from = S.migrate(self.engine)
        self._statements()
        self._group = GroupCommit(self.record_many)
        self._secret = self._reporter_secret()

    def close(self) -> None:
        if hasattr(self, "_stop"):
            self._stop.set()
        self.engine.dispose()

    def ping(self) -> None:
        """For /readyz: raises if the database does not answer."""
        with self.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))

    def _checkpoints(self, every: float = 1.0) -> None:
        """Copy the WAL into the database now and then, beside the writers (PASSIVE never
        blocks them); the WAL stays small and uploads never wait for an fsync."""
        while not self._stop.wait(every):
            try:  # on the driver's connection: outside a transaction, as a checkpoint must be
                raw = self.engine.raw_connection()
                try:
                    raw.driver_connection.execute(  # type: ignore[union-attr]
                        "PRAGMA wal_checkpoint(PASSIVE)")
                finally:
                    raw.close()
            except Exception:  # the next round tries again; uploads go on meanwhile
                continue

    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        # SQLite has one writer at a time, and a writer that finds the lock taken sleeps in
        # steps of up to 100 ms before it tries again: threads of one receiver queue on a
        # Python lock instead (woken at once). Other processes still meet the busy timeout.
        with self._write_lock, \
                self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn, \
                conn.begin():
            yield conn

    @contextmanager
    def _read(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def _insert(self, table: sa.Table) -> Any:
        mod = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        return mod.insert(table)

    # -- reporters -------------------------------------------------------------------------

    def _reporter_secret(self) -> bytes:
        with self._write() as conn:
            conn.execute(self._insert(S.settings).values(
                key="reporter_secret", value=secrets.token_hex(32)).on_conflict_do_nothing())
            value = conn.execute(sa.select(S.settings.c.value).where(
                S.settings.c.key == "reporter_secret")).scalar_one()
        return bytes.fromhex(value)

    def reporter(self, identity: str) -> str:
        """A pseudonym for who sent a report: keyed hash, so the index never holds the
        address (or install id) itself and pseudonyms differ between servers."""
        return hmac.new(self._secret, identity.encode("utf-8", "replace"),
                        hashlib.sha256).hexdigest()[:16]

    # -- writing ---------------------------------------------------------------------------

    def _statements(self) -> None:
        """The write statements, built once: building a construct costs more than running
        it (SQLAlchemy caches the compiled SQL, not the Python objects)."""
        t, b = S.signatures, S.bundles
        ins = self._insert(t)
        ex = ins.excluded
        later = ex.last_seen >= t.c.last_seen
        self._upsert_sig = ins.on_conflict_do_update(index_elements=[t.c.hash], set_={
            "count": t.c.count + ex.count,
            "last_seen": sa.case((later, ex.last_seen), else_=t.c.last_seen),
            "last_version": sa.case((later, sa.func.coalesce(ex.last_version,
                                                             t.c.last_version)),
                                    else_=t.c.last_version),
            "first_seen": sa.case((ex.first_seen < t.c.first_seen, ex.first_seen),
                                  else_=t.c.first_seen),
            "first_version": sa.func.coalesce(t.c.first_version, ex.first_version),
        }).returning(t.c.id, t.c.count, t.c.status, t.c.fixed_in)
        self._add_bundles = b.insert()  # rows already known are filtered out first
        # which of a batch's bundles are indexed already (an expanding IN: the construct is
        # built once, not per batch)
        self._known = sa.select(b.c.id).where(b.c.id.in_(sa.bindparam("ids", expanding=True)))
        days = S.signature_days
        day_ins = self._insert(days)
        self._count_day = day_ins.on_conflict_do_update(
            index_elements=[days.c.signature_id, days.c.day],
            set_={"count": days.c.count + day_ins.excluded.count})
        # RETURNING says whether a row went in: a driver's rowcount is not reliable here
        # (psycopg reports -1 for these inserts)
        self._add_reporter = self._insert(S.signature_reporters).on_conflict_do_nothing(
        ).returning(S.signature_reporters.c.reporter)
        self._bump_reporters = t.update().where(t.c.id == sa.bindparam("sid")).values(
            reporters=t.c.reporters + sa.bindparam("k"))
        self._regress = t.update().where(t.c.id == sa.bindparam("sid"),
                                         t.c.status == "fixed").values(
            status="regressed", status_changed=sa.bindparam("changed")).returning(t.c.id)

    def expect(self) -> Expected:
        """Announce a bundle that will probably be recorded soon (an upload being
        validated): commits wait a little for it (batch.py). Settle it if it is not."""
        return self._group.expect()

    def record(self, sig: Signature, facts: BundleFacts, *,
               expected: Expected | None = None) -> Recorded | None:
        """Count one stored bundle under ``sig``; None if the bundle is already indexed.
        Returns once it is committed (with whatever else was queued: see batch.py);
        ``expected`` is the bundle's announcement, settled here."""
        return self._group.submit(sig, facts, expected=expected)

    def record_many(self, items: list[tuple[Signature, BundleFacts]]) -> list[Recorded | None]:
        """Count many bundles in one transaction (None for those already indexed)."""
        with self._write() as conn:
            return self._record_batch(conn, items)

    def _record_batch(self, conn: sa.Connection,
                      items: list[tuple[Signature, BundleFacts]]) -> list[Recorded | None]:
        results: list[Recorded | None] = [None] * len(items)
        known = set(conn.execute(self._known, {"ids": [f.id for _, f in items]}).scalars())
        fresh: list[int] = []
        for n, (_, f) in enumerate(items):
            if f.id not in known:
                known.add(f.id)
                fresh.append(n)
        sub = [items[n] for n in fresh]
        rows: list[dict[str, Any]] = []
        days: Counter[tuple[int, date]] = Counter()
        pairs: set[tuple[int, str]] = set()
        # signature rows locked in one order (their hashes) by every writer: two receivers'
        # batches holding the same two crashes in either order deadlocked, and PostgreSQL
        # broke the tie after deadlock_timeout (1 s) by failing one whole batch
        for _, g in sorted(aggregate(sub).items()):
            sig, members = g["sig"], g["items"]
            row = self._upsert_signature(conn, sig, g["first"], count=len(members),
                                         last=g["last"])
            regressed = None
            if row.status == "fixed":
                regressed = next((k for k in members
                                  if version_gt(sub[k][1].app_version, row.fixed_in)), None)
                if regressed is not None and conn.execute(self._regress, {
                        "sid": row.id, "changed": sub[regressed][1].received_at}).first() is None:
                    regressed = None  # another receiver reopened it first: one notification
            for j, k in enumerate(members):
                f = sub[k][1]
                rows.append({
                    "id": f.id, "signature_id": row.id, "algo_version": sig.version,
                    "received_at": f.received_at, "app": f.app[:200],
                    "app_version": _cap(f.app_version, 100), "reporter": f.reporter,
                    "run_status": _cap(f.run_status, 32), "command": _cap(f.command, 500),
                    "note": _cap(f.note, 2000), "size": f.size,
                    "findings": json.dumps(list(f.findings)) if f.findings else None})
                days[(row.id, f.received_at.date())] += 1
                pairs.add((row.id, f.reporter))
                event: Event | None = ("new" if row.count == len(members) and j == 0
                                       else "regression" if k == regressed else None)
                results[fresh[k]] = Recorded(row.id, sig.hash, event)
        if not rows:
            return results
        conn.execute(self._add_bundles, rows)
        conn.execute(self._count_day, [{"signature_id": sid, "day": d, "count": c}
                                       for (sid, d), c in days.items()])
        new_reporters: Counter[int] = Counter()
        for sid, reporter in sorted(pairs):
            if conn.execute(self._add_reporter, {"signature_id": sid,
                                                 "reporter": reporter}).first():
                new_reporters[sid] += 1
        for sid, k in new_reporters.items():
            conn.execute(self._bump_reporters, {"sid": sid, "k": k})
        return results

    def _upsert_signature(self, conn: sa.Connection, sig: Signature, facts: BundleFacts,
                          *, count: int, last: BundleFacts | None = None) -> Any:
        last = last or facts
        return conn.execute(self._upsert_sig, {
            "hash": sig.hash, "algo_version": sig.version, "kind": sig.kind, "app": sig.app,
            "text": sig.text, "exception": sig.exception,
            "reasons": json.dumps(list(sig.reasons)), "count": count, "reporters": 0,
            "first_seen": facts.received_at, "last_seen": last.received_at,
            "first_version": _cap(facts.app_version, 100),
            "last_version": _cap(last.app_version, 100), "status": "open"}).one()

    def set_status(self, sig_hash: str, status: str, fixed_in: str | None = None) -> bool:
        """Mark fixed (in ``fixed_in``) or open again; False if there is no such signature."""
        if status not in ("open", "fixed"):
            raise ValueError("status must be open or fixed")
        with self._write() as conn:
            r = conn.execute(S.signatures.update().where(S.signatures.c.hash == sig_hash).values(
                status=status, fixed_in=_cap(fixed_in, 100) if status == "fixed" else None,
                status_changed=now_utc()).returning(S.signatures.c.id))
            return r.first() is not None

    def forget(self, bundle_id: str) -> None:
        """A deleted bundle leaves its signature's counters (recomputed from what is left)."""
        with self._write() as conn:
            sig_id = conn.execute(sa.select(S.bundles.c.signature_id).where(
                S.bundles.c.id == bundle_id)).scalar()
            if sig_id is None:
                return
            conn.execute(S.bundles.delete().where(S.bundles.c.id == bundle_id))
            _rebuild(conn, sig_id)

    def stale(self, limit: int = 500) -> list[str]:
        """Bundles signed by an older algorithm (to recompute), oldest first."""
        with self._read() as conn:
            return list(conn.execute(sa.select(S.bundles.c.id).where(
                S.bundles.c.algo_version != ALGORITHM_VERSION).order_by(
                S.bundles.c.received_at).limit(limit)).scalars())

    def expired(self, default_days: float | None, per_app: dict[str, float],
                limit: int = 500) -> list[str]:
        """Ids of bundles older than their app's retention (``per_app``, else
        ``default_days``; None keeps an app's bundles for ever), oldest first."""
        now = now_utc()
        b = S.bundles.c
        conds = []
        for app, days in per_app.items():
            conds.append(sa.and_(b.app == app, b.received_at < now - timedelta(days=days)))
        if default_days is not None:
            others = b.received_at < now - timedelta(days=default_days)
            conds.append(sa.and_(b.app.not_in(list(per_app)), others) if per_app else others)
        if not conds:
            return []
        with self._read() as conn:
            rows = conn.execute(sa.select(b.id).where(sa.or_(*conds))
                                .order_by(b.received_at).limit(limit))
            return [r.id for r in rows]

    def has(self, bundle_id: str) -> bool:
        with self._read() as conn:
            return conn.execute(sa.select(S.bundles.c.id).where(
                S.bundles.c.id == bundle_id)).first() is not None

    def reassign(self, bundle_id: str, sig: Signature) -> None:
        """Move a bundle to its recomputed signature; both signatures' counters are rebuilt
        from their bundles (a signature left empty goes; a fixed status stays with its hash)."""
        with self._write() as conn:
            old = conn.execute(sa.select(S.bundles).where(S.bundles.c.id == bundle_id)).first()
            if old is None:
                return
            facts = BundleFacts(old.id, old.received_at, old.app, old.app_version, old.reporter,
                                old.run_status, old.command or "", old.note or "", old.size,
                                tuple(json.loads(old.findings or "[]")))
            row = self._upsert_signature(conn, sig, facts, count=0)
            conn.execute(S.bundles.update().where(S.bundles.c.id == bundle_id).values(
                signature_id=row.id, algo_version=sig.version))
            conn.execute(S.signatures.update().where(S.signatures.c.id == row.id).values(
                algo_version=sig.version, text=sig.text, reasons=json.dumps(list(sig.reasons))))
            for sig_id in {old.signature_id, row.id}:
                _rebuild(conn, sig_id)

    # -- reading (rage.server.queries) ---------------------------------------------------------

    def search(self, query: Query) -> tuple[list[dict[str, Any]], int]:
        """One page of signatures matching ``query``, and how many match in all."""
        with self._read() as conn:
            return queries.search(conn, query)

    def signature(self, sig_hash: str, *, bundles: int = 100) -> dict[str, Any] | None:
        """A signature with its per-day counts, versions and newest bundles."""
        with self._read() as conn:
            return queries.signature(conn, sig_hash, bundles=bundles)

    def signature_of(self, bundle_id: str) -> tuple[str, str] | None:
        """``(hash, text)`` of the signature ``bundle_id`` is counted under, if indexed."""
        with self._read() as conn:
            row = conn.execute(sa.select(S.signatures.c.hash, S.signatures.c.text).join(
                S.bundles, S.bundles.c.signature_id == S.signatures.c.id).where(
                S.bundles.c.id == bundle_id)).first()
        return (row.hash, row.text) if row is not None else None

    def known(self, prefix: str, *, limit: int = 100) -> list[dict[str, Any]]:
        """Signatures whose hash starts with ``prefix`` (a k-anonymity query: see
        rage.upload.known)."""
        with self._read() as conn:
            return queries.known(conn, prefix, limit)

    def facets(self) -> dict[str, list[str]]:
        """The apps and versions there are, for the filter menus."""
        with self._read() as conn:
            return queries.facets(conn)


def _rebuild(conn: sa.Connection, sig_id: int) -> None:
    """Recompute one signature's counters from its bundles (delete it if none are left)."""
    t, b = S.signatures, S.bundles
    rows = conn.execute(sa.select(b.c.received_at, b.c.app_version, b.c.reporter).where(
        b.c.signature_id == sig_id).order_by(b.c.received_at)).all()
    conn.execute(S.signature_days.delete().where(S.signature_days.c.signature_id == sig_id))
    conn.execute(S.signature_reporters.delete().where(
        S.signature_reporters.c.signature_id == sig_id))
    if not rows:
        conn.execute(t.delete().where(t.c.id == sig_id))
        return
    days: dict[date, int] = {}
    for r in rows:
        days[r.received_at.date()] = days.get(r.received_at.date(), 0) + 1
    reporters = {r.reporter for r in rows}
    conn.execute(S.signature_days.insert(), [
        {"signature_id": sig_id, "day": d, "count": c} for d, c in days.items()])
    conn.execute(S.signature_reporters.insert(), [
        {"signature_id": sig_id, "reporter": p} for p in reporters])
    versions = [r.app_version for r in rows if r.app_version]
    conn.execute(t.update().where(t.c.id == sig_id).values(
        count=len(rows), reporters=len(reporters), first_seen=rows[0].received_at,
        last_seen=rows[-1].received_at, first_version=versions[0] if versions else None,
        last_version=versions[-1] if versions else None))


def _cap(value: str | None, n: int) -> str | None:
    return value[:n] if value else None


def _private_file(database: str | None) -> None:
    """The index holds notes and commands: 0600 like the bundles (SQLite gives its -wal and
    -shm files the database file's mode)."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    import os

    fd = os.open(database, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)


def _sqlite_setup(engine: sa.Engine) -> None:
    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" event below starts them
        cur = dbapi_conn.cursor()
        # checkpoints (the fsyncs) move to Index's background thread: an automatic one runs
        # in the committing upload, with every other writer waiting behind it
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON",
                       "busy_timeout=30000", "wal_autocheckpoint=0",
                       "journal_size_limit=16777216"):  # the WAL file shrinks back to 16 MiB
            cur.execute(f"PRAGMA {pragma}")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "")
        conn.exec_driver_sql(f"BEGIN {mode}".strip())
