"""Retention on the receiver: bundles older than their app's limit go, object and index row
together, and blobs a crashed receiver left without metadata are swept.

Every receiver may run the sweep (it is idempotent: deleting what another receiver deleted
meanwhile is not an error), so a deployment needs no separate cron job. A bundle is made
invisible first (its metadata), then its blob goes, then its index row: a crash halfway
leaves at worst an index row whose bundle answers 404, which the next sweep removes.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rage.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from rage.server.index import Index
    from rage.server.storage import Storage

log = logging.getLogger("rage.server")
ORPHAN_AGE_S = 3600.0  # an upload in progress is never this old between its two writes


@dataclass(frozen=True)
class Policy:
    default_days: float | None = None
    per_app: dict[str, float] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.default_days is not None or bool(self.per_app)


def parse_policy(default_days: float | None, per_app: tuple[str, ...]) -> Policy:
    """``--retention-days 90 --retention mytool=30``; raises UsageError in one line."""
    apps: dict[str, float] = {}
    for item in per_app:
        app, sep, days = item.partition("=")
        try:
            value = float(days)
        except ValueError:
            value = -1.0
        if not sep or not app or not value > 0:
            raise UsageError(f"--retention takes APP=DAYS with DAYS > 0, not {item!r}")
        apps[app] = value
    if default_days is not None and not default_days > 0:
        raise UsageError("--retention-days must be more than 0")
    return Policy(default_days, apps)


def sweep(storage: Storage, index: Index, policy: Policy) -> int:
    """Delete what the policy says has expired, and old orphaned blobs; returns the count."""
    done = 0
    while ids := index.expired(policy.default_days, policy.per_app):
        for bundle_id in ids:
            with contextlib.suppress(NotFoundError):
                storage.delete(bundle_id)
            index.forget(bundle_id)
            done += 1
    orphans = getattr(storage, "delete_orphans", None)
    if orphans is not None:
        done += int(orphans(ORPHAN_AGE_S))
    if done:
        log.info("retention: removed %d bundle(s)", done)
    return done


def start(storage: Storage, index: Index, policy: Policy, every_s: float = 3600.0) -> None:
    """Sweep now and then every ``every_s`` seconds, in a daemon thread."""

    def loop() -> None:
        stop = threading.Event()
        while True:
            try:
                sweep(storage, index, policy)
            except Exception:
                log.exception("retention sweep failed (tried again later)")
            stop.wait(every_s)

    threading.Thread(target=loop, name="rage-retention", daemon=True).start()
