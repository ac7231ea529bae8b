"""Group commit for the triage index: uploads arriving together are counted in one transaction.

Measured: with one transaction per upload, eight upload threads queue behind the index's
writer, and the writer loses the GIL to them at every SQLite call (each call releases it,
and getting it back can take a whole switch interval), so index writes, not CPU, capped a
receiver at a few hundred uploads per second. Here each upload thread hands its bundle to
one writer thread and waits; the writer takes everything queued, aggregates it (one upsert
per signature with ``count = count + n``, one per signature and day, executemany for the
bundle rows) and commits once. The upload is acknowledged only after that commit, so what
was acknowledged is counted, as before.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rage.server.index import BundleFacts, Recorded
    from rage.server.signature import Signature

log = logging.getLogger("rage.server.index")
MAX_BATCH = 256


@dataclass
class _Item:
    sig: Signature
    facts: BundleFacts
    done: threading.Event = field(default_factory=threading.Event)
    result: Recorded | None = None
    error: BaseException | None = None


class GroupCommit:
    """Runs ``write(items)`` (one transaction for a list of (signature, facts)) on one
    thread for whatever is queued; :meth:`submit` blocks until its item is committed."""

    def __init__(self, write: Callable[[list[tuple[Signature, BundleFacts]]],
                                       list[Recorded | None]]) -> None:
        self._write = write
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, sig: Signature, facts: BundleFacts, timeout: float = 120) -> Recorded | None:
        item = _Item(sig, facts)
        self._queue.put(item)
        self._ensure_thread()
        if not item.done.wait(timeout):
            raise TimeoutError("the index writer did not answer")
        if item.error is not None:
            raise item.error
        return item.result

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="rage-index-writer",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._commit(batch)

    def _commit(self, batch: list[_Item]) -> None:
        try:
            results = self._write([(i.sig, i.facts) for i in batch])
        except Exception as e:
            if len(batch) > 1:  # one bad item must not fail the others: retry them alone
                for item in batch:
                    self._commit([item])
                return
            batch[0].error = e
            batch[0].done.set()
            return
        for item, result in zip(batch, results, strict=True):
            item.result = result
            item.done.set()


def aggregate(items: list[tuple[Signature, BundleFacts]]) -> dict[str, dict[str, Any]]:
    """Per signature hash: its signature, the items' indexes, count, first and last seen
    (with the versions reported then)."""
    groups: dict[str, dict[str, Any]] = {}
    for n, (sig, facts) in enumerate(items):
        g = groups.get(sig.hash)
        if g is None:
            groups[sig.hash] = {"sig": sig, "items": [n], "first": facts, "last": facts}
            continue
        g["items"].append(n)
        if facts.received_at < g["first"].received_at:
            g["first"] = facts
        if facts.received_at >= g["last"].received_at:
            g["last"] = facts
    return groups
