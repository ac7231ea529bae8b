"""One member of a stored bundle read without walking the archive up to it.

Reading a member from the start of a bundle parses every tar header before it (up to
``DEFAULT_MAX_ENTRIES`` of them) and inflates every byte before it: a receiver that did that
for each download walked a big listing again at every request. A :class:`Listing` is what
one walk of a stored bundle found, kept by its reader:

- where each regular member's data starts in the decompressed tar stream, and its size;
- where zstd frames start, compressed and decompressed (zstd frames are independent, so
  inflating may start at any of them).

:func:`open_listed` then seeks to the last frame that starts at or before the member and
inflates from there: rage writes large members as frames of their own
(:mod:`rage.bundle.frames`), so a download reads about its own member. A bundle of one
frame is still inflated from its start, without a tar header parsed.

A listing is built only by the full safety walk (:func:`rage.bundle.stream.iter_members`)
of the very file it describes, and used only for that file: the caller keys it on the
stored bundle's identity. The frame scan reads headers only, within bounds
(:data:`MAX_FRAMES`, :data:`MAX_BLOCKS`): past them the table stops and members further
on are inflated from the last frame it has.
"""

from __future__ import annotations

import bisect
import os
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, cast

from rage.bundle.stream import (
    CHUNK,
    MAX_WINDOW,
    ZSTD_MAGIC,
    BundleTooLarge,
    Member,
    corrupt_as_bad_input,
    iter_members,
)
from rage.errors import BadInputError

MAX_FRAMES = 16_384  # seek points kept per bundle: 256 KiB of offsets at most
MAX_BLOCKS = 1 << 18  # block headers read to find them (a frame may hold many small blocks)
_SKIPPABLE = range(0x184D2A50, 0x184D2A60)  # RFC 8878: frames a decoder skips
_HEADER_MAX = 18  # a zstd frame header's largest size


@dataclass(frozen=True)
class Listing:
    """What one walk of a stored bundle found (see the module's docstring)."""

    members: Mapping[str, tuple[int, int]]  # name -> (data offset, size), decompressed
    frames_in: array[int]  # compressed offset of each frame start
    frames_out: array[int]  # its decompressed offset

    def nbytes(self) -> int:
        """About what it holds in memory (dict slots, strings, tuples and arrays)."""
        per = 200  # a dict slot, a tuple of two ints and a str object's header
        names = sum(len(n) for n in self.members)
        return names + per * len(self.members) + 16 * len(self.frames_in) + 200


def build_listing(f: IO[bytes], max_decompressed: int) -> Listing:
    """Walk the bundle open as ``f`` (a seekable local file) with every safety check and
    list it; raises BadInputError as any read does."""
    f.seek(0)
    members: dict[str, tuple[int, int]] = {}
    walk = iter_members(f, max_decompressed)
    try:
        for m in walk:
            members[m.name] = (m.offset, m.size)
    finally:
        walk.close()
    frames_in, frames_out = _frames(f, max_decompressed)
    return Listing(members, frames_in, frames_out)


def _frames(f: IO[bytes], limit: int) -> tuple[array[int], array[int]]:
    """The frames' starts, from their headers and block headers (RFC 8878); a frame that
    does not declare its content size is inflated once to learn it."""
    import zstandard

    at, out = array("q"), array("q")
    end = os.fstat(f.fileno()).st_size
    pos = total = blocks = 0
    while pos < end and len(at) < MAX_FRAMES:
        f.seek(pos)
        head = f.read(_HEADER_MAX)
        magic = int.from_bytes(head[:4], "little")
        if len(head) >= 8 and magic in _SKIPPABLE:
            pos += 8 + int.from_bytes(head[4:8], "little")
            continue
        if head[:4] != ZSTD_MAGIC:
            break
        try:
            params = zstandard.get_frame_parameters(head)
            p = pos + zstandard.frame_header_size(head)
        except zstandard.ZstdError:
            break
        while True:
            blocks += 1
            f.seek(p)
            block = f.read(3)
            if blocks > MAX_BLOCKS or len(block) < 3:
                return at, out
            v = int.from_bytes(block, "little")
            kind = (v >> 1) & 3
            if kind == 3:  # reserved: not a frame a decoder accepts
                return at, out
            p += 3 + (1 if kind == 1 else v >> 3)  # an RLE block holds one byte
            if v & 1:  # the frame's last block
                break
        p += 4 if params.has_checksum else 0
        size = params.content_size
        if size == zstandard.CONTENTSIZE_UNKNOWN:
            size = _inflated_size(f, pos, p - pos, limit - total)
        at.append(pos)
        out.append(total)
        total += size
        pos = p
    return at, out


def _inflated_size(f: IO[bytes], start: int, length: int, room: int) -> int:
    import zstandard

    f.seek(start)
    reader = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).stream_reader(
        cast(IO[bytes], _Window(f, length)), read_across_frames=False)
    n = 0
    with corrupt_as_bad_input():
        while chunk := reader.read(CHUNK):
            n += len(chunk)
            if n > room:
                raise BundleTooLarge("bundle inflates beyond its decompressed-size limit")
    return n


class _Window:
    """The next ``n`` bytes of ``stream`` (a file, a decompressed stream), then its end."""

    def __init__(self, stream: IO[bytes], n: int) -> None:
        self._stream = stream
        self._left = n

    def read(self, size: int = -1) -> bytes:
        want = self._left if size < 0 else min(size, self._left)
        data = self._stream.read(want) if want else b""
        self._left -= len(data)
        return data


def open_listed(f: IO[bytes], listing: Listing, name: str) -> Member:
    """The member ``name`` of the bundle open as ``f`` (the file ``listing`` was built
    from), positioned at its first byte; KeyError if the listing has no such member."""
    import zstandard

    offset, size = listing.members[name]
    i = bisect.bisect_right(listing.frames_out, offset) - 1
    start_in, start_out = (listing.frames_in[i], listing.frames_out[i]) if i >= 0 else (0, 0)
    f.seek(start_in)
    stream = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).stream_reader(
        f, read_across_frames=True)
    skip = offset - start_out
    with corrupt_as_bad_input():
        while skip > 0:
            chunk = stream.read(min(CHUNK, skip))
            if not chunk:
                raise BadInputError("corrupt bundle: truncated")
            skip -= len(chunk)
    return Member(name, size, cast(IO[bytes], _Window(cast(IO[bytes], stream), size)), offset)
