"""The triage index's tables and their versioned migrations (SQLAlchemy Core).

One schema for SQLite (the default: a file next to the bundles, nothing to install) and
PostgreSQL (``postgresql+psycopg://``): only portable types, times as naive UTC
``DateTime``, text lengths bounded. ``rage_schema`` holds the version; :data:`MIGRATIONS`
are numbered steps, run in one transaction, so an old index is upgraded in
place when a newer receiver opens it. A receiver refuses an index newer than itself.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

metadata = sa.MetaData()

schema_version = sa.Table(
    "rage_schema", metadata,
    sa.Column("version", sa.Integer, nullable=False),
)

settings = sa.Table(
    "rage_settings", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(255), nullable=False),
)

signatures = sa.Table(
    "signatures", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("hash", sa.String(64), nullable=False, unique=True),
    sa.Column("algo_version", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("app", sa.String(200), nullable=False),
    sa.Column("text", sa.String(300), nullable=False),
    sa.Column("exception", sa.String(200)),
    sa.Column("reasons", sa.Text, nullable=False),  # JSON list: "why these were grouped"
    sa.Column("count", sa.Integer, nullable=False),
    sa.Column("reporters", sa.Integer, nullable=False),
    sa.Column("first_seen", sa.DateTime, nullable=False),
    sa.Column("last_seen", sa.DateTime, nullable=False),
    sa.Column("first_version", sa.String(100)),
    sa.Column("last_version", sa.String(100)),
    # open | fixed | regressed
    sa.Column("status", sa.String(16), nullable=False, server_default="open"),
    sa.Column("fixed_in", sa.String(100)),
    sa.Column("status_changed", sa.DateTime),
    sa.Index("ix_signatures_last_seen", "last_seen"),
    sa.Index("ix_signatures_count", "count"),
    sa.Index("ix_signatures_app", "app"),
)

signature_days = sa.Table(
    "signature_days", metadata,
    sa.Column("signature_id", sa.Integer, sa.ForeignKey("signatures.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("day", sa.Date, primary_key=True),
    sa.Column("count", sa.Integer, nullable=False),
)

signature_reporters = sa.Table(
    "signature_reporters", metadata,
    sa.Column("signature_id", sa.Integer, sa.ForeignKey("signatures.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("reporter", sa.String(32), primary_key=True),
)

bundles = sa.Table(
    "bundles", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("signature_id", sa.Integer, sa.ForeignKey("signatures.id"), nullable=False),
    sa.Column("algo_version", sa.Integer, nullable=False),
    sa.Column("received_at", sa.DateTime, nullable=False),
    sa.Column("app", sa.String(200), nullable=False),
    sa.Column("app_version", sa.String(100)),
    sa.Column("reporter", sa.String(32), nullable=False),
    sa.Column("run_status", sa.String(32)),
    sa.Column("command", sa.String(500)),
    sa.Column("note", sa.String(2000)),
    sa.Column("size", sa.BigInteger, nullable=False),
    # what the client found before sending (schema 2): a JSON list of short texts, "inside
    # requests 2.32.3", "requests 2.31.0 -> 2.32.3", "option --fast added"
    sa.Column("findings", sa.Text),
    sa.Index("ix_bundles_signature", "signature_id", "received_at"),
    sa.Index("ix_bundles_app_version", "app", "app_version"),
    sa.Index("ix_bundles_algo", "algo_version"),
)


def _v1(conn: sa.Connection) -> None:
    for table in (settings, signatures, signature_days, signature_reporters, bundles):
        table.create(conn)


def _v2(conn: sa.Connection) -> None:
    """bundles.findings (an index made at version 1 by this code has it already)."""
    if "findings" not in {c["name"] for c in sa.inspect(conn).get_columns("bundles")}:
        conn.execute(sa.text("ALTER TABLE bundles ADD COLUMN findings TEXT"))


# step n brings the schema from version n-1 to n; append, never edit a released step
MIGRATIONS: list[Callable[[sa.Connection], None]] = [_v1, _v2]
LATEST = len(MIGRATIONS)


class SchemaTooNew(Exception):
    pass


def migrate(engine: sa.Engine) -> int:
    """Bring the index to :data:`LATEST`; returns the version it was at."""
    with engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn, conn.begin():
        if engine.dialect.name == "postgresql":
            # receivers starting together: one migrates, the others wait and then see it done
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7356270)"))
        schema_version.create(conn, checkfirst=True)
        found = conn.execute(sa.select(schema_version.c.version)).scalar()
        if found is None:
            conn.execute(schema_version.insert().values(version=0))
            found = 0
        if found > LATEST:
            raise SchemaTooNew(f"the index is at schema version {found}; this rage knows "
                               f"up to {LATEST}: upgrade rage")
        for n in range(found, LATEST):
            MIGRATIONS[n](conn)
            conn.execute(schema_version.update().values(version=n + 1))
        return int(found)
