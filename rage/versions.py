"""Comparing version strings without `packaging`: shared by the receiver (regressions, the
triage pages) and the client (is a known crash fixed in a later version than mine?)."""

from __future__ import annotations

import re
from typing import Any


def version_key(version: str) -> tuple[tuple[int, Any], ...]:
    """Orders versions: 1.2 < 1.2.1 < 1.10, 1.3rc1 < 1.3 (no dependency on `packaging`)."""
    parts = [(0, int(p)) if p.isdigit() else (-1, p.lower())
             for p in re.findall(r"\d+|[A-Za-z]+", version[:200])]
    return (*parts, (0, -1))  # the end sorts after a pre-release tag, before more numbers


def version_gt(a: str | None, b: str | None) -> bool:
    return bool(a and b) and version_key(a or "") > version_key(b or "")
