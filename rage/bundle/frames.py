"""Members compressed ahead of the bundle: zstd frames made while a member is produced.

A bundle is a tar stream compressed with zstd, and zstd frames concatenate: every reader
(``zstd -d``, ``tar --zstd``, python-zstandard reading across frames, rage's own reader)
sees one stream. A large run file is redacted in worker processes (see
:mod:`rage.redact.parallel`); each worker also compresses the piece it redacted, as one
frame, while the others redact theirs. :func:`rage.bundle.write.write_bundle` then copies
these frames between the frames it compresses itself (tar headers, padding, small members),
so a large member is compressed once, in parallel with its redaction, instead of after it,
and is never written to disk as plain text: the preview and the summary read the pieces
they show (:meth:`Framed.read`).

Frames use the bundle's level (with smaller match tables, see :data:`HASH_LOG`) and carry
their checksum and content size, as the writer's own. They are held in memory up to
:data:`MEMORY_MAX` for the whole report (a member's default cap compresses to far less),
past it in a 0600 file: the bundle then writes them once, where a file in between had them
written twice (on the development machine, writing 42 MB to a new file took 0.11-0.14 s,
a tenth of a 200 MB report).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from rage.fsutil import open_private

ZSTD_LEVEL = 3
# frames are at most this long: zstd sizes its tables to a small input, which fit the CPU's
# caches. On ordinary logs 512 KiB frames compress 8% faster than 2 MiB ones, to the same
# size (0.1% smaller); content that repeats itself at a greater distance compresses less
FRAME = 512 * 1024
MEMORY_MAX = 64 * 1024 * 1024  # frames a report holds in memory, all members together
# level 3's strategy with smaller match tables (2^15 hash, 2^14 chain entries: 32 KiB and
# 16 KiB of them, which zstd fills anew for every frame) than level 3 picks for a 512 KiB
# input (2^17, 2^16): 6-18% less CPU on logs and tracebacks (the words-heavy log of
# bench_report 18%), output within 1% of level 3's (logs 0.1-1.2% smaller, Python source
# 1% larger; bench note of issue 10)
HASH_LOG, CHAIN_LOG = 15, 14


@dataclass(frozen=True)
class Framed:
    """A member held only as zstd frames: ``size`` bytes of content, made of pieces whose
    (content, compressed) lengths are ``index``, in order; the frames are ``held`` (one
    bytes per piece) or, when ``frames`` is a path, in that file. A large run file is kept
    so from its redaction to the bundle: never as plain text on disk."""

    frames: Path | None
    size: int
    index: tuple[tuple[int, int], ...]
    held: tuple[bytes, ...] = ()

    def chunks(self) -> Iterator[bytes]:
        """The frames, in order. OSError if the file does not hold what ``index`` says (a
        file that changed in the report's private directory is an error, not a bundle
        that lies)."""
        if self.frames is None:
            yield from self.held
            return
        want = sum(packed for _, packed in self.index)
        with open(self.frames, "rb") as f:
            if os.fstat(f.fileno()).st_size != want:
                raise OSError(f"unexpected size of {self.frames}: its frames changed")
            while chunk := f.read(1024 * 1024):
                yield chunk

    def read(self, start: int, length: int) -> bytes:
        """``length`` bytes of the content from ``start`` (fewer at its end): only the
        pieces that hold them are decompressed."""
        import zstandard

        end = min(start + length, self.size)
        out: list[bytes] = []
        pos = at = 0  # content and compressed offsets of the piece
        with contextlib.ExitStack() as stack:
            f = None if self.frames is None else stack.enter_context(open(self.frames, "rb"))
            for i, (plain, packed) in enumerate(self.index):
                if pos + plain > start and pos < end:
                    if f is None:
                        frames = self.held[i]
                    else:
                        f.seek(at)
                        frames = f.read(packed)
                    data = zstandard.ZstdDecompressor().stream_reader(
                        frames, read_across_frames=True).read()
                    out.append(data[max(start - pos, 0):end - pos])
                pos += plain
                at += packed
                if pos >= end:
                    break
        return b"".join(out)


class FrameCompressor:
    """Compresses one piece into frames of at most :data:`FRAME` bytes; made before the
    workers fork, so they share it."""

    def __init__(self) -> None:
        import zstandard

        params = zstandard.ZstdCompressionParameters.from_level(
            ZSTD_LEVEL, source_size=FRAME, hash_log=HASH_LOG, chain_log=CHAIN_LOG,
            write_checksum=True, write_content_size=True)
        self._cctx: Any = zstandard.ZstdCompressor(compression_params=params)

    def __call__(self, data: bytes | memoryview) -> bytes:
        if len(data) <= FRAME:
            return bytes(self._cctx.compress(data))
        view = memoryview(data)
        return b"".join(self._cctx.compress(view[i:i + FRAME])
                        for i in range(0, len(data), FRAME))


class FrameWriter:
    """Holds a member's frames, compressing the pieces that come without: in memory up to
    ``memory_max`` bytes of frames, then in the file ``path`` (0600), created only then.

    :meth:`add` takes each piece of the member in order, with the frames a worker made of it
    or None; :meth:`close` returns the :class:`Framed` member.
    """

    def __init__(self, path: Path, compress: FrameCompressor, *,
                 memory_max: int = MEMORY_MAX) -> None:
        self.path = path
        self.compress = compress
        self._memory_max = memory_max
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._f: BinaryIO | None = None
        self.size = 0
        self._index: list[tuple[int, int]] = []

    def add(self, data: bytes | memoryview, frame: bytes | None = None) -> None:
        if not data:
            return
        if frame is None:
            frame = self.compress(data)
        if self._f is None and self._held_bytes + len(frame) > self._memory_max:
            self._f = open_private(self.path, "wb")
            for held in self._held:
                self._f.write(held)
            self._held.clear()
        if self._f is None:
            self._held.append(frame)
            self._held_bytes += len(frame)
        else:
            self._f.write(frame)
        self.size += len(data)
        self._index.append((len(data), len(frame)))

    def close(self) -> Framed:
        """The member the frames hold."""
        if self._f is None:
            return Framed(None, self.size, tuple(self._index), tuple(self._held))
        self._f.close()
        return Framed(self.path, self.size, tuple(self._index))

    def discard(self) -> None:
        self._held.clear()
        if self._f is not None:
            self._f.close()
            self.path.unlink(missing_ok=True)
