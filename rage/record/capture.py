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


class CappedFile:
    """Write-only file that keeps at most ``cap`` bytes: the first half and the last half."""

    def __init__(self, path: Path | str, cap: int) -> None:
        self.path = path
        self.cap = max(cap, 0)
        self._head_left = self.cap - self.cap // 2
        self._tail_cap = self.cap // 2
        # the tail is kept as whole writes (never copied until close): a list of chunks, the
        # index of the oldest one still needed, and the bytes held from there on
        self._tail: list[bytes] = []
        self._tail_first = 0
        self._tail_len = 0
        self._total = 0
        self._f: BinaryIO = open_private(path, "wb")
        self.closed = False

    @property
    def total_bytes(self) -> int:
        return self._total

    def write(self, data: bytes) -> None:
        n = len(data)
        self._total += n
        if self._head_left > 0:
            part = data[: self._head_left]
            self._f.write(part)
            self._head_left -= len(part)
            data = data[len(part):]
            if not data:
                return
        if self._tail_cap == 0:
            return
        tail = self._tail
        tail.append(data)
        self._tail_len += len(data)
        i = self._tail_first
        # forget whole old writes while the rest still covers the tail
        while self._tail_len - len(tail[i]) >= self._tail_cap:
            self._tail_len -= len(tail[i])
            tail[i] = b""  # release the bytes now; the empty slots go at the next compaction
            i += 1
        if i > 1024 and i * 2 > len(tail):  # compact now and then, amortised O(1)
            del tail[:i]
            i = 0
        self._tail_first = i

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> Truncation:
        """Write the tail (after a marker if bytes were dropped) and close; idempotent."""
        if not self.closed:
            kept = b"".join(self._tail[self._tail_first:])
            tail = kept[len(kept) - min(len(kept), self._tail_cap):] if self._tail_cap else b""
            dropped = self._total - (self.cap - self.cap // 2 - self._head_left) - len(tail)
            if dropped > 0:
                self._f.write(MARKER % dropped)
            self._f.write(tail)
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
    None when the file cannot be read back (no read permission, not Linux).
    """
    try:
        end = os.lseek(fd, 0, os.SEEK_CUR)
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
