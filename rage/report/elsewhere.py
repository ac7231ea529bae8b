"""Bundles `rage report --output` wrote outside an app's reports directory, noted one
absolute path a line in ``<root>/<app>/reports/.elsewhere`` for `rage pending` and `rage
send NAME` (:mod:`rage.report.pending`). Apart from that module so a report notes its bundle
without importing the listing (its dataclass: ~3M instructions)."""

from __future__ import annotations

import os
from pathlib import Path

from rage.paths import reports_dir

SUFFIX = ".tar.zst"
ELSEWHERE = ".elsewhere"
_ELSEWHERE_MAX = 1 << 20  # bytes of notes read: thousands of paths


def elsewhere(reports: Path) -> list[str]:
    """The bundles of this reports directory written elsewhere that are still there."""
    from rage.fsutil import read_own

    data = read_own(reports / ELSEWHERE, _ELSEWHERE_MAX)
    if not data:
        return []
    paths = data.decode("utf-8", "surrogateescape").splitlines()
    return [p for p in dict.fromkeys(paths)
            if p.startswith("/") and p.endswith(SUFFIX) and os.path.isfile(p)]


def note_elsewhere(bundle: Path, app: str) -> None:
    """Remember a bundle ``--output`` wrote outside the reports directory, so `rage pending`
    and `rage send NAME` find it; notes of bundles since deleted are dropped."""
    from rage.fsutil import private_dir, write_atomic

    d = reports_dir(app)
    path = os.path.abspath(bundle)
    if os.path.dirname(path) == os.path.abspath(d):
        return
    kept = [p for p in elsewhere(d) if p != path]
    private_dir(d)
    text = "".join(f"{p}\n" for p in [*kept, path])
    write_atomic(d / ELSEWHERE, text.encode("utf-8", "surrogateescape"))
