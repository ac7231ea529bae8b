"""Kept bundles: what `rage report` wrote and has not (yet) been uploaded.

Bundles live in ``<root>/<app>/reports/*.tar.zst``, or where ``--output`` put them: those
are noted, one absolute path a line, in ``<root>/<app>/reports/.elsewhere``. A successful
upload leaves a sidecar ``<bundle>.sent.json`` (url, delete_url, time; 0600); a bundle
without one is pending.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rage.errors import NotFoundError, UsageError
from rage.fsutil import read_regular, write_json_atomic
from rage.paths import check_app, home_root, reports_dir
from rage.report.elsewhere import SUFFIX
from rage.report.elsewhere import elsewhere as _elsewhere

SENT_SUFFIX = ".sent.json"
SIDECAR_MAX_BYTES = 64 * 1024  # rage writes a few hundred bytes


@dataclass(frozen=True)
class PendingBundle:
    """One kept bundle (``sent`` holds the sidecar when it has been uploaded)."""

    path: Path
    app: str
    size: int
    created_at: str
    sent: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "app": self.app, "size": self.size,
                "created_at": self.created_at, "sent": self.sent}


def sidecar(bundle: Path) -> Path:
    return bundle.with_name(bundle.name + SENT_SUFFIX)


def mark_sent(bundle: Path, url: str, delete_url: str | None, protocol: str) -> None:
    """Record a successful upload next to the bundle (atomically, 0600)."""
    write_json_atomic(sidecar(bundle), {
        "url": url, "delete_url": delete_url, "protocol": protocol,
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
    })


def sent_info(bundle: Path) -> dict[str, Any] | None:
    """The sidecar's content, or None if the bundle has not been sent (or it is unreadable)."""
    try:
        data = json.loads(read_regular(sidecar(bundle), SIDECAR_MAX_BYTES))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _apps(root: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(root) if e.is_dir() and not
                      e.name.startswith("."))
    except FileNotFoundError:
        return []


def list_bundles(app: str | None = None, *, include_sent: bool = False) -> list[PendingBundle]:
    """Kept bundles of ``app`` (or every app), newest first; sent ones only if asked."""
    root = home_root()
    out: list[PendingBundle] = []
    for a in [check_app(app)] if app else _apps(root):
        d = reports_dir(a, root)
        try:
            entries = [e.path for e in os.scandir(d)
                       if e.name.endswith(SUFFIX) and e.is_file(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            continue
        for path in [*entries, *_elsewhere(d)]:
            sent = sent_info(Path(path))
            if sent is not None and not include_sent:
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            created = datetime.fromtimestamp(st.st_mtime, UTC).isoformat(timespec="seconds")
            out.append(PendingBundle(Path(path), a, st.st_size, created, sent))
    out.sort(key=lambda b: (b.created_at, b.path.name), reverse=True)
    return out


def list_pending(app: str | None = None) -> list[PendingBundle]:
    """Kept, unsent bundles of ``app`` (or every app), newest first."""
    return list_bundles(app)


def resolve_bundle(ref: str, app: str | None = None) -> Path:
    """A bundle path from a path, a kept bundle's file name or unique prefix, or ``last``."""
    p = Path(ref).expanduser()
    if p.is_file():
        return p.resolve()
    if p.exists():
        raise UsageError(f"{ref} is not a bundle file")
    candidates = list_bundles(app, include_sent=True)
    if ref == "last":
        pending = [b for b in candidates if b.sent is None]
        if not pending:
            raise NotFoundError("no pending bundle: run `rage report` first")
        return pending[0].path
    if "/" in ref:
        raise NotFoundError(f"no such bundle: {ref}")
    matches = [b for b in candidates if b.path.name == ref] or \
        [b for b in candidates if b.path.name.startswith(ref)]
    if not matches:
        raise NotFoundError(f"no such bundle: {ref} (see `rage pending`)")
    if len(matches) > 1:
        raise UsageError(f"{ref!r} matches {len(matches)} bundles: give more of the name")
    return matches[0].path


def app_of(bundle: Path) -> str | None:
    """The app a kept bundle belongs to (``<root>/<app>/reports/x``), else None."""
    if bundle.parent.name == "reports":
        try:
            return check_app(bundle.parent.parent.name)
        except UsageError:
            return None
    return None
