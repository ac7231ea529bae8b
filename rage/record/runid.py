"""Run ids: sortable, unique without coordination (a leaf: the store, retention and the
hand-off between recorders all recognise them without importing each other)."""

from __future__ import annotations

import os
import time


def new_run_id(now: float | None = None) -> str:
    """Sortable, unique without coordination: UTC start second plus 32 random bits."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    # os.urandom, not secrets: importing secrets pulls in hmac/hashlib (~3 ms of start-up)
    return f"{stamp}-{os.urandom(4).hex()}"


_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdef")


def is_run_id(name: str) -> bool:
    """True for names shaped like :func:`new_run_id` results (``YYYYmmddTHHMMSSZ-<8 hex>``)."""
    return (len(name) == 25 and name[8] == "T" and name[15:17] == "Z-"
            and all(c in _DIGITS for c in name[:8] + name[9:15])
            and all(c in _HEX for c in name[17:]))
