"""Group commit for the triage index: uploads arriving together are counted in one transaction.

Measured: with one transaction per upload, eight upload threads queue behind the index's
writer, and the writer loses the GIL to them at every SQLite call (each call releases it,
and getting it back can take a whole switch interval), so index writes, not CPU, capped a
receiver at a few hundred uploads per second. Here each upload thread hands its bundle to
one writer thread and waits; the writer takes everything queued, aggregates it (one upsert
per signature with ``count = count + n``, one per signature and day, executemany for the
bundle rows) and commits once. The upload is acknowledged only after that commit, so what
was acknowledged is counted, as before.

Measured again with the receiver under load (8 threads): batches averaged under three
items, and the transaction, not the items, is the writer's cost (every SQLite call hands
the GIL to an upload thread and waits to get it back). So the writer waits a little for
uploads it knows are on their way, as PostgreSQL's ``commit_delay`` does when
``commit_siblings`` transactions are active: an upload announces itself
(:meth:`GroupCommit.expect`) before it is validated, and while any announced upload has not
arrived, the writer waits for it up to :data:`COMMIT_DELAY` before it commits. A lone
upload never waits.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rage.server.facts import BundleFacts, Recorded
    from rage.server.signature import Signature

log = logging.getLogger("rage.server.index")
MAX_BATCH = 256
# seconds a commit waits for announced uploads (an upload waits at most this much longer).
# Measured in-process, 8 threads: batches of ~5 instead of ~3, the writer's CPU per upload
# -25% and more; over HTTP 5 ms did better than 2 ms and than none
COMMIT_DELAY = 0.005
_WAKE = object()  # queued when an announced upload is withdrawn: the writer looks again


@dataclass
class _Item:
    sig: Signature
    facts: BundleFacts
    done: threading.Event = field(default_factory=threading.Event)
    result: Recorded | None = None
    error: BaseException | None = None


class Expected:
    """An item announced to a :class:`GroupCommit` and not yet arrived; :meth:`settle` it
    once (submitting it does), whether or not it is submitted in the end."""

    __slots__ = ("_group", "_open")

    def __init__(self, group: GroupCommit) -> None:
        self._group = group
        self._open = True

    def settle(self, *, withdrawn: bool = True) -> None:
        """No longer on its way; ``withdrawn`` (it will not be submitted) wakes a writer
        that may be waiting for it. Idempotent."""
        if self._open:
            self._open = False
            self._group._arrived(withdrawn)


class GroupCommit:
    """Runs ``write(items)`` (one transaction for a list of (signature, facts)) on one
    thread for whatever is queued; :meth:`submit` blocks until its item is committed."""

    def __init__(self, write: Callable[[list[tuple[Signature, BundleFacts]]],
                                       list[Recorded | None]], *,
                 delay: float = COMMIT_DELAY) -> None:
        self._write = write
        self._delay = delay
        self._queue: queue.SimpleQueue[_Item | object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._coming = 0  # announced items not yet settled (guarded by _lock)

    def expect(self) -> Expected:
        """Announce an item that will probably be submitted soon (an upload about to be
        validated): the writer waits up to ``delay`` for announced items before a commit."""
        with self._lock:
            self._coming += 1
        return Expected(self)

    def _arrived(self, withdrawn: bool) -> None:
        with self._lock:
            self._coming -= 1
            started = self._thread is not None
        if withdrawn and started:  # no writer yet: nothing waits, and nothing should pile up
            self._queue.put(_WAKE)

    def submit(self, sig: Signature, facts: BundleFacts, timeout: float = 120, *,
               expected: Expected | None = None) -> Recorded | None:
        """Queue one item and wait for its commit; ``expected`` is its announcement."""
        item = _Item(sig, facts)
        self._queue.put(item)  # queued before it is settled: a waiting writer takes it along
        if expected is not None:
            expected.settle(withdrawn=False)
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
            first = self._queue.get()
            if isinstance(first, _Item):
                self._commit(self._gather(first))

    def _gather(self, first: _Item) -> list[_Item]:
        """``first`` and whatever is queued, waiting up to the delay while announced items
        have not arrived."""
        batch = [first]
        deadline = None
        while len(batch) < MAX_BATCH:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                if self._coming <= 0:
                    break
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self._delay
                if now >= deadline:
                    break
                try:
                    item = self._queue.get(timeout=deadline - now)
                except queue.Empty:
                    break
            if isinstance(item, _Item):
                batch.append(item)
        return batch

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
