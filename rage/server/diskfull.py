"""A full disk: uploads answer 507 and /readyz says not ready until the space comes back.

Measured before: with the storage full, 29 of 40 uploads got waitress's plain-text 500 and
/readyz still said ok, so a load balancer kept sending uploads that could not be kept.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
MARGIN = 1024 * 1024  # beyond the upload itself: its metadata, the index's pages


def is_full(e: BaseException) -> bool:
    """Whether ``e`` says the disk (or the user's quota) is full."""
    return isinstance(e, OSError) and e.errno in FULL_ERRNOS


class Fullness:
    """Remembers a write that failed for want of space; the storage counts as full until
    as much is free again as that write needed."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._need: int | None = None

    def failed(self, needed: int) -> None:
        with self._lock:
            self._need = max(self._need or 0, needed + MARGIN)

    def free(self) -> int:
        st = os.statvfs(self.directory)
        return st.f_bavail * st.f_frsize

    def problem(self) -> str | None:
        """"storage: full (...)" while it is, else None."""
        with self._lock:
            need = self._need
            if need is None:
                return None
            free = self.free()
            if free >= need:
                self._need = None  # bundles were deleted, or the disk grew
                return None
        return f"storage: full ({free} bytes free, {need} needed)"
