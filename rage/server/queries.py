"""Reading the triage index: the signature list (filters, search, paging), one signature
with its days, versions and bundles, the filter menus; and the order of version strings.

Functions of an open connection, so :class:`rage.server.index.Index` (and anything else
holding a connection) runs them in its own transaction.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from rage.server import schema as S
from rage.versions import version_key

PAGE_SIZE = 50
SORTS = {"last": S.signatures.c.last_seen, "count": S.signatures.c.count,
         "first": S.signatures.c.first_seen}
STATUSES = ("open", "fixed", "regressed")


@dataclass(frozen=True)
class Query:
    app: str | None = None
    version: str | None = None
    status: str | None = None
    q: str | None = None
    sort: str = "last"
    page: int = 1
    per_page: int = PAGE_SIZE


def search(conn: sa.Connection, query: Query) -> tuple[list[dict[str, Any]], int]:
    """One page of signatures matching ``query``, and how many match in all."""
    t, b = S.signatures, S.bundles
    where: list[Any] = []
    if query.app:
        where.append(t.c.app == query.app)
    if query.status:
        where.append(t.c.status == query.status)
    if query.version:
        where.append(sa.exists().where(b.c.signature_id == t.c.id,
                                       b.c.app_version == query.version))
    if query.q:
        pat = "%" + re.sub(r"([\\%_])", r"\\\1", query.q[:200]) + "%"
        where.append(sa.or_(
            t.c.text.ilike(pat, escape="\\"), t.c.exception.ilike(pat, escape="\\"),
            sa.exists().where(b.c.signature_id == t.c.id, sa.or_(
                b.c.note.ilike(pat, escape="\\"), b.c.command.ilike(pat, escape="\\")))))
    order = SORTS.get(query.sort, t.c.last_seen)
    per = max(1, min(query.per_page, 200))
    page = max(1, query.page)
    total = conn.execute(sa.select(sa.func.count()).select_from(t).where(*where)).scalar()
    rows = conn.execute(sa.select(t).where(*where).order_by(order.desc(), t.c.id.desc())
                        .limit(per).offset((page - 1) * per)).mappings().all()
    return [_sig_dict(r) for r in rows], int(total or 0)


def signature(conn: sa.Connection, sig_hash: str, *, bundles: int = 100) -> dict[str, Any] | None:
    """A signature with its per-day counts, versions and newest bundles."""
    t, b = S.signatures, S.bundles
    row = conn.execute(sa.select(t).where(t.c.hash == sig_hash)).mappings().first()
    if row is None:
        return None
    out = _sig_dict(row)
    days = conn.execute(sa.select(S.signature_days.c.day, S.signature_days.c.count)
                        .where(S.signature_days.c.signature_id == row["id"])
                        .order_by(S.signature_days.c.day)).all()
    out["days"] = [{"day": d.isoformat(), "count": c} for d, c in days]
    versions = conn.execute(
        sa.select(b.c.app_version, sa.func.count()).where(b.c.signature_id == row["id"])
        .group_by(b.c.app_version)).all()
    out["versions"] = sorted(({"version": v, "count": c} for v, c in versions),
                             key=lambda x: version_key(x["version"] or ""))
    items = conn.execute(sa.select(b).where(b.c.signature_id == row["id"]).order_by(
        b.c.received_at.desc()).limit(bundles)).mappings().all()
    out["bundles"] = [_bundle_dict(r) for r in items]
    out["findings"] = _findings(conn, row["id"], int(row["count"]))
    return out


FINDINGS_SCANNED = 2000  # newest reports whose findings a signature's page counts


def _findings(conn: sa.Connection, sig_id: int, total: int) -> list[dict[str, Any]]:
    """What the clients found, counted over the signature's newest reports, most common
    first: ``{"text": "inside requests 2.32.3", "reports": 7, "of": 9}``."""
    b = S.bundles
    rows = conn.execute(sa.select(b.c.findings).where(b.c.signature_id == sig_id).order_by(
        b.c.received_at.desc()).limit(FINDINGS_SCANNED)).scalars().all()
    counts: dict[str, int] = {}
    for raw in rows:
        try:
            items = json.loads(raw) if raw else []
        except ValueError:
            continue
        for item in dict.fromkeys(i for i in items if isinstance(i, str)):
            counts[item] = counts.get(item, 0) + 1
    of = min(total, len(rows))
    return [{"text": t, "reports": n, "of": of}
            for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:20]]


def known(conn: sa.Connection, prefix: str, limit: int) -> list[dict[str, Any]]:
    """The signatures whose hash starts with ``prefix``: what the client that asked needs
    to tell whether its own is among them (the rest of each hash) and what became of it."""
    t = S.signatures
    rows = conn.execute(sa.select(t.c.hash, t.c.status, t.c.fixed_in, t.c.count,
                                  t.c.last_seen, t.c.algo_version)
                        .where(t.c.hash.like(prefix + "%")).order_by(t.c.hash)
                        .limit(limit)).mappings().all()
    return [{"suffix": r["hash"][len(prefix):], "status": r["status"],
             "fixed_in": r["fixed_in"], "count": r["count"],
             "last_seen": r["last_seen"].isoformat() if r["last_seen"] else None,
             "algorithm": r["algo_version"]} for r in rows]


def facets(conn: sa.Connection) -> dict[str, list[str]]:
    """The apps and versions there are, for the filter menus."""
    apps = conn.execute(sa.select(S.signatures.c.app).distinct().order_by(
        S.signatures.c.app).limit(500)).scalars().all()
    versions = conn.execute(sa.select(S.bundles.c.app_version).distinct().where(
        S.bundles.c.app_version.is_not(None)).limit(500)).scalars().all()
    return {"apps": list(apps), "versions": sorted(versions, key=version_key,
                                                   reverse=True)}


def _sig_dict(r: sa.RowMapping) -> dict[str, Any]:
    return {"hash": r["hash"], "kind": r["kind"], "app": r["app"], "text": r["text"],
            "exception": r["exception"], "reasons": json.loads(r["reasons"]),
            "algorithm_version": r["algo_version"], "count": r["count"],
            "reporters": r["reporters"], "first_seen": _iso(r["first_seen"]),
            "last_seen": _iso(r["last_seen"]), "first_version": r["first_version"],
            "last_version": r["last_version"], "status": r["status"],
            "fixed_in": r["fixed_in"], "status_changed": _iso(r["status_changed"])}


def _bundle_dict(r: sa.RowMapping) -> dict[str, Any]:
    return {"id": r["id"], "received_at": _iso(r["received_at"]), "app_version": r["app_version"],
            "reporter": r["reporter"], "run_status": r["run_status"], "command": r["command"],
            "note": r["note"], "size": r["size"]}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") + "Z" if value else None
