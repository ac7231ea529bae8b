"""Stored bundles whose index write failed, indexed again in the background.

An upload is answered 201 once its bundle is stored; counting it is the index's job (see
:meth:`rage.server.triage.Triage.on_stored`). A write that fails then (the database away
for a moment, a lock held too long) used to leave the bundle uncounted until the next
start, whose re-index reads only the newest stored bundles: under a storm of uploads a
count could be lost for good. Each such bundle is now tried again, with a growing pause,
until it is counted; the set is bounded (the oldest are left to the start-up re-index).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("rage.server.triage")

FIRST_PAUSE = 1.0  # seconds before the first retry, doubled after each round that failed
LONGEST_PAUSE = 60.0
LIMIT = 10_000  # bundles waiting at most; past it the oldest wait for the next start


class Retries:
    """Attempts to run again until each succeeds: ``add(key, attempt)``; ``attempt()``
    raises while it cannot succeed yet."""

    def __init__(self, *, first: float = FIRST_PAUSE, longest: float = LONGEST_PAUSE,
                 limit: int = LIMIT) -> None:
        self._first, self._longest, self._limit = first, longest, limit
        self._waiting: dict[str, Callable[[], object]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)

    def add(self, key: str, attempt: Callable[[], object]) -> None:
        with self._lock:
            self._waiting.pop(key, None)
            self._waiting[key] = attempt
            while len(self._waiting) > self._limit:
                dropped = next(iter(self._waiting))
                del self._waiting[dropped]
                log.warning("bundle %s left to the next start's re-index: %d bundles wait "
                            "for the index already", dropped, self._limit)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="rage-index-retry",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        pause = self._first
        while True:
            self._wake.wait(pause)
            self._wake.clear()
            with self._lock:
                todo = list(self._waiting.items())
            if not todo:
                with self._lock:
                    if not self._waiting:
                        self._thread = None
                        return
                continue
            failed = 0
            for key, attempt in todo:
                try:
                    attempt()
                except Exception as e:
                    failed += 1
                    log.debug("bundle %s still not indexed: %s", key, e)
                    continue
                with self._lock:
                    if self._waiting.get(key) is attempt:
                        del self._waiting[key]
                log.info("bundle %s indexed on a retry", key)
            pause = min(pause * 2, self._longest) if failed else self._first
