"""A byte sink that keeps the head and the tail of a stream, within a cap.

The end of a failing program's output matters most, and the start says what it was doing, so
above the cap the middle is dropped and replaced by a one-line marker. Memory stays bounded
by half the cap (the tail ring) whatever the stream's length.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rage.fsutil import open_private

MARKER = b"\n[rage: %d bytes dropped here: output above the cap keeps its head and tail]\n"


@dataclass(frozen=True)
class Truncation:
    """What a capped file kept: total bytes seen and how many were dropped from the middle."""

    name: str
    total_bytes: int
    dropped_bytes: int

    def to_dict(self) -> dict[str, int | str]:
        return {
            "name": self.name,
            "total_bytes": self.total_bytes,
            "dropped_bytes": self.dropped_bytes,
        }


class CappedFile:
    """Write-only file that keeps at most ``cap`` bytes: the first half and the last half."""

    def __init__(self, path: Path, cap: int) -> None:
        self.path = path
        self.cap = max(cap, 0)
        self._head_left = self.cap - self.cap // 2
        self._tail_cap = self.cap // 2
        self._tail = bytearray()
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
        self._tail += data
        # trim lazily (amortised O(1) per byte) rather than on every write
        if len(self._tail) > 2 * self._tail_cap:
            del self._tail[: len(self._tail) - self._tail_cap]

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> Truncation:
        """Write the tail (after a marker if bytes were dropped) and close; idempotent."""
        if not self.closed:
            tail = bytes(self._tail[-self._tail_cap:]) if self._tail_cap else b""
            dropped = self._total - (self.cap - self.cap // 2 - self._head_left) - len(tail)
            if dropped > 0:
                self._f.write(MARKER % dropped)
            self._f.write(tail)
            self._f.close()
            self._dropped = max(dropped, 0)
            self.closed = True
        return Truncation(self.path.name, self._total, self._dropped)
