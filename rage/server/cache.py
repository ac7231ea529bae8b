"""A small in-memory cache of what a bundle page was built from, bounded in bytes.

Building a page inflates the whole bundle to keep the end of each output (a bundle may
inflate to ``--max-decompressed-size``); a maintainer reloading a page, or anyone hammering
one, should not pay that again. Bundles never change once stored, so entries only leave by
eviction (least recently used) or when the bundle is deleted.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from rage.bundle import CappedMember

Members = Mapping[str, CappedMember]


class MemberCache:
    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[Members, int]] = OrderedDict()
        self._bytes = 0

    def get(self, key: str) -> Members | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: str, members: Members) -> None:
        size = sum(len(m.data) + len(m.name) + 100 for m in members.values())
        if size > self.max_bytes:
            return
        with self._lock:
            self._drop(key)
            self._items[key] = (members, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._items)))

    def discard(self, key: str) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: str) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self._bytes -= item[1]
