"""One member of a stored bundle, streamed as a download (``/b/<id>/files/<name>``).

The worker thread that took the request finds the member through the bundle's listing
(:mod:`rage.bundle.seek`): built by one walk of the archive, then kept in a small LRU
(:class:`Listings`), so repeated downloads of a bundle that lists thousands of members do
not walk it again; it seeks to the zstd frame the member starts in. The member's own bytes
are inflated only as the client takes them, from a local file (an object store's bundle
is fetched to the receiver's disk first). Under waitress the member goes out as a
``wsgi.file_wrapper``: the server's event loop reads it as the socket drains, so a client
reading at a trickle holds a connection, not a worker thread (eight such readers once held
every worker, and /healthz went unanswered).

Each download in flight holds a zstd decompressor and its window (at most
``rage.bundle.stream.MAX_WINDOW``, 8 MiB), so at most MAX_STREAMS run at once; one more
is a 503 with Retry-After, not more memory.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import IO
from urllib.parse import quote

from rage.bundle.seek import Listing, build_listing, open_listed
from rage.bundle.stream import CHUNK, Member
from rage.errors import NotFoundError
from rage.server.cache import SizedLRU
from rage.server.limits import visible
from rage.server.storage import Storage

MAX_STREAMS = 8  # downloads in flight: 8 x (an 8 MiB window + a read) is about 70 MiB
# listings kept: the largest a receiver accepts (a 256 KiB manifest lists ~2,500 files)
# takes ~0.5 MiB, one of 20,000 entries stored before the bounds ~5 MiB
LISTINGS_BYTES = 16 * 1024 * 1024


class Listings:
    """Listings of stored bundles, by bundle id, each valid for one generation of the
    stored bytes (their sha256: an id stored again with other bytes is another bundle);
    least recently used dropped past ``max_bytes``, whatever each listing's size."""

    def __init__(self, max_bytes: int = LISTINGS_BYTES) -> None:
        self._lru: SizedLRU[tuple[str, Listing]] = SizedLRU(
            max_bytes, lambda item: item[1].nbytes())

    def get(self, bundle_id: str, generation: str) -> Listing | None:
        item = self._lru.get(bundle_id)
        return item[1] if item is not None and item[0] == generation else None

    def put(self, bundle_id: str, generation: str, listing: Listing) -> None:
        self._lru.put(bundle_id, (generation, listing))

    def discard(self, bundle_id: str) -> None:
        self._lru.discard(bundle_id)


class Streams:
    """Counts the member downloads in flight, up to ``limit``."""

    def __init__(self, limit: int = MAX_STREAMS) -> None:
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)

    def take(self) -> Callable[[], None] | None:
        """A slot's release function (call it once or more: it releases once), or None
        when every slot is taken."""
        if not self._slots.acquire(blocking=False):
            return None
        lock, released = threading.Lock(), [False]

        def release() -> None:
            with lock:
                if released[0]:
                    return
                released[0] = True
            self._slots.release()

        return release


class MemberFile:
    """A member being streamed, as the read-only file ``wsgi.file_wrapper`` wants.

    waitress reads ahead of what the socket takes, then seeks back to the start of that
    read and forward by what was sent: so this keeps the bytes of the last read, and a seek
    may go anywhere from there on, never before it. At most about one read is held.
    """

    def __init__(self, member: Member, f: IO[bytes],
                 on_close: Callable[[], None] | None = None) -> None:
        self.size = member.size
        self._on_close = on_close
        self._closed = False
        self._member = member
        self._f = f
        self._buf = bytearray()
        self._base = 0  # the offset of _buf[0] in the member
        self._pos = 0

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        pos = (offset, self._pos + offset, self.size + offset)[whence]
        if pos < self._base:
            raise OSError("a member being streamed cannot seek back before its last read")
        self._pos = pos
        return pos

    def read(self, n: int = -1) -> bytes:
        if n < 0 or self._pos + n > self.size:
            n = max(0, self.size - self._pos)
        drop = min(self._pos - self._base, len(self._buf))  # nothing reads these again
        del self._buf[:drop]
        self._base += drop
        need = self._pos + n - self._base
        while len(self._buf) < need:
            chunk = self._member.read(max(CHUNK, need - len(self._buf)))
            if not chunk:
                # an OSError makes the server drop the connection (a short answer, not a
                # busy loop waiting for bytes that will never come)
                raise OSError(f"member {self._member.name!r} ended early")
            self._buf += chunk
        at = self._pos - self._base
        out = bytes(self._buf[at:at + n])
        self._pos += len(out)
        return out

    def close(self) -> None:
        """Release the stored file (and the download's slot); closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self._f.close()
        finally:
            if self._on_close is not None:
                self._on_close()

    def __iter__(self) -> Iterator[bytes]:
        """The bytes in chunks, for a server without ``wsgi.file_wrapper``."""
        try:
            while chunk := self.read(CHUNK):
                yield chunk
        finally:
            self.close()


def open_member(storage: Storage, bundle_id: str, name: str, max_decompressed: int, *,
                listings: Listings | None = None, generation: str = "",
                on_close: Callable[[], None] | None = None) -> MemberFile:
    """The member, positioned at its first byte; NotFoundError if it is not there.

    The bundle's listing comes from ``listings`` for this ``generation`` of the stored
    bundle, or from a walk of it (then kept there). Close the member (the server does,
    once it is sent) to release the stored file; ``on_close`` is called then (not when
    this raises)."""
    f = storage.open_local(bundle_id)
    try:
        listing = listings.get(bundle_id, generation) if listings is not None else None
        if listing is None:
            listing = build_listing(f, max_decompressed)
            if listings is not None:
                listings.put(bundle_id, generation, listing)
        if name not in listing.members:
            raise NotFoundError(f"no file {name!r} in this bundle")
        return MemberFile(open_listed(f, listing, name), f, on_close)
    except BaseException:
        f.close()
        raise


def content_type(name: str) -> str:
    """The Content-Type a bundle member is served with."""
    if name.endswith((".log", ".txt", ".md", ".json", ".jsonl")):
        return "text/plain; charset=utf-8"  # shown as text, never run as a page (nosniff)
    return "application/octet-stream"


def attachment(name: str) -> str:
    """Content-Disposition for a download named after the member (ASCII and RFC 5987)."""
    # a name stored before such names were refused must not reorder the saved file's name
    base = visible(name.rsplit("/", 1)[-1])
    plain = re.sub(r"[^A-Za-z0-9._-]", "_", base) or "file"
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(base, safe='')}"
