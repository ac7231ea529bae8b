"""Small in-memory caches of what stored bundles gave, bounded in bytes.

Building a page inflates the whole bundle to keep the end of each output (a bundle may
inflate to ``--max-decompressed-size``); a maintainer reloading a page, or anyone hammering
one, should not pay that again. A download of one member reads the bundle's listing
(:mod:`rage.bundle.seek`) instead of walking the archive again. Bundles never change once
stored, so entries only leave by eviction (least recently used) or when the bundle is
deleted.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

from rage.bundle import CappedMember

Members = Mapping[str, CappedMember]
V = TypeVar("V")


class SizedLRU(Generic[V]):
    """Values by key, least recently used dropped first once their sizes pass
    ``max_bytes``; a value larger than ``max_bytes`` alone is not kept. Thread-safe."""

    def __init__(self, max_bytes: int, size: Callable[[V], int]) -> None:
        self.max_bytes = max_bytes
        self._size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: V) -> None:
        size = self._size(value)
        if size > self.max_bytes:
            return
        with self._lock:
            self._drop(key)
            self._items[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._items)))

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: Hashable) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self._bytes -= item[1]


def _members_size(members: Members) -> int:
    return sum(len(m.data) + len(m.name) + 100 for m in members.values())


class MemberCache(SizedLRU[Members]):
    """What bundle pages were built from, by bundle id (64 MiB by default)."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        super().__init__(max_bytes, _members_size)
