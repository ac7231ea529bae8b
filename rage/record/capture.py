"""A byte sink that keeps the head and the tail of a stream, within a cap.

The end of a failing program's output matters most, and the start says what it was doing, so
above the cap the middle is dropped and replaced by a one-line marker. Memory stays bounded
by half the cap (the tail ring) whatever the stream's length.
"""

from __future__ import annotations

import os

from rage.fsutil import open_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

MARKER = b"\n[rage: %d bytes dropped here: output above the cap keeps its head and tail]\n"


class Truncation:
    """What a capped file kept: total bytes seen and how many were dropped from the middle.

    Immutable plain data. Not a dataclass: ``rage run`` writes these on every recorded
    command and importing dataclasses costs ~10 ms of its start-up.
    """

    __slots__ = ("dropped_bytes", "name", "total_bytes")
    name: str
    total_bytes: int
    dropped_bytes: int

    def __init__(self, name: str, total_bytes: int, dropped_bytes: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "total_bytes", total_bytes)
        object.__setattr__(self, "dropped_bytes", dropped_bytes)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {key!r}: Truncation is immutable")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"cannot delete field {key!r}: Truncation is immutable")

    def _key(self) -> tuple[str, int, int]:
        return (self.name, self.total_bytes, self.dropped_bytes)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Truncation)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Truncation(name={self.name!r}, total_bytes={self.total_bytes!r}, "
                f"dropped_bytes={self.dropped_bytes!r})")

    def to_dict(self) -> dict[str, int | str]:
        return {
            "name": self.name,
            "total_bytes": self.total_bytes,
            "dropped_bytes": self.dropped_bytes,
        }


# Past the head, output goes to the file as it comes (a recorder killed with SIGKILL leaves on
# disk what was shown), and the middle is cut out again each time this much more than the tail
# has piled up: every byte past the cap is copied once more at most, and the file stays
# within head + tail + this while the run goes on.
SLACK_MIN = 16 * 1024 * 1024
_COPY = 1 << 20


class CappedFile:
    """Write-only file that keeps at most ``cap`` bytes: the first half and the last half.

    What has been written is in the file at once (with ``write_through``: no buffer in this
    process at all), head and tail alike, so a recorder killed without a chance to close it
    leaves what it saw; until :meth:`close` the file may hold up to ``slack`` bytes more
    than the tail, after a marker saying how much was dropped before them. Memory stays
    bounded by one copy chunk whatever the stream's length."""

    def __init__(self, path: Path | str, cap: int, *, write_through: bool = False,
                 slack: int = SLACK_MIN, lazy: bool = False) -> None:
        self.path = path
        self.cap = max(cap, 0)
        self._head_left = self.cap - self.cap // 2
        self._head_end = self._head_left
        self._tail_cap = self.cap // 2
        self._slack = max(self._tail_cap, slack, 1)
        self._total = 0
        self._size = 0  # bytes in the file
        self._body = self._head_end  # where the bytes after the head (and a marker) start
        self._write_through = write_through
        self._f: BinaryIO | None = None
        self._fd = -1  # written with os.write (write_through)
        self.closed = False
        if not lazy:  # lazy: the first bytes create the file; a silent stream leaves none
            self._open()

    def _open(self) -> BinaryIO:
        f: BinaryIO = open_private(self.path, "w+b",  # read back by _cut
                                   buffering=0 if self._write_through else -1)
        self._f = f
        self._fd = f.fileno() if self._write_through else -1
        return f

    @property
    def total_bytes(self) -> int:
        return self._total

    def write(self, data: bytes) -> None:
        n = len(data)
        self._total += n
        if self._head_left > 0:
            if n <= self._head_left:
                self._head_left -= n
                self._put(data)
                return
            self._put(data[: self._head_left])
            data = data[self._head_left:]
            self._head_left = 0
        if self._tail_cap == 0:
            return
        self._put(data)
        if self._size - self._body >= self._tail_cap + self._slack:
            self._cut()

    def _put(self, data: bytes) -> None:
        self._size += len(data)
        f = self._f if self._f is not None else self._open()
        if self._fd < 0:
            f.write(data)
            return
        n = os.write(self._fd, data)  # on the relay's path for every chunk: kept lean
        while n < len(data):  # a short write (a signal, a full disk about to say so)
            data = data[n:]
            n = os.write(self._fd, data)

    def _cut(self) -> None:
        """Keep only the last ``tail`` bytes after the head, behind the marker."""
        f = self._f
        assert f is not None  # bytes were written
        f.flush()
        fd = f.fileno()
        dropped = self._total - self._head_end - self._tail_cap
        marker = MARKER % dropped
        src, dst = self._size - self._tail_cap, self._head_end + len(marker)
        # a move over itself, chunk by chunk: from the front when moving left (far past the
        # cap), from the back when moving right (just past it, the marker being longer)
        offsets = range(0, self._tail_cap, _COPY)
        for off in offsets if src >= dst else reversed(offsets):
            chunk = os.pread(fd, min(_COPY, self._tail_cap - off), src + off)
            os.pwrite(fd, chunk, dst + off)
        os.pwrite(fd, marker, self._head_end)  # last: it may cover where the tail was
        self._body = self._head_end + len(marker)
        self._size = self._body + self._tail_cap
        os.ftruncate(fd, self._size)
        f.seek(self._size)

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()

    def close(self) -> Truncation:
        """Cut to head, marker and tail if bytes were dropped, and close; idempotent."""
        if not self.closed:
            dropped = self._total - self.cap
            if dropped > 0:
                if self._tail_cap:
                    self._cut()
                else:
                    self._put(MARKER % dropped)
            if self._f is not None:
                self._f.close()
            self._dropped = max(dropped, 0)
            self.closed = True
        return Truncation(os.path.basename(self.path), self._total, self._dropped)


def copy_appended(fd: int, start: int, path: str, cap: int) -> Truncation | None:
    """Record what the child wrote to the regular file open on our ``fd`` since ``start``.

    The child had the user's own descriptor (its writes, errors and ``cat f >> f`` checks
    are exactly as without rage); it shares the file offset with ours, so the bytes it
    appended are ``[start, offset)``. They are read back through ``/proc/self/fd`` (the
    descriptor is often write-only) with the same head-and-tail cap as a live capture.
    None when the file cannot be read back (no read permission, not Linux). Nothing
    appended makes no file, as a silent stream of a live capture (``CappedFile(lazy=True)``).
    """
    try:
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if end <= start:
            return Truncation(os.path.basename(path), 0, 0)
        src = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = max(end - start, 0)
        cap = max(cap, 0)
        head_n = min(size, cap - cap // 2)
        tail_n = min(size - head_n, cap // 2)
        with open_private(path, "wb") as out:
            _copy_range(src, start, head_n, out)
            dropped = size - head_n - tail_n
            if dropped > 0:
                out.write(MARKER % dropped)
            _copy_range(src, end - tail_n, tail_n, out)
    finally:
        os.close(src)
    return Truncation(os.path.basename(path), size, dropped)


def _copy_range(src: int, offset: int, n: int, out: BinaryIO) -> None:
    while n > 0:
        data = os.pread(src, min(n, 1 << 20), offset)
        if not data:  # the file shrank meanwhile
            return
        out.write(data)
        offset += len(data)
        n -= len(data)
