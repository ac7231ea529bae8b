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

Frames use the bundle's level and carry their checksum and content size, as the writer's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rage.fsutil import open_private

ZSTD_LEVEL = 3
# frames are at most this long: zstd sizes its tables to a small input, which fit the CPU's
# caches. On ordinary logs 512 KiB frames compress 8% faster than 2 MiB ones, to the same
# size (0.1% smaller); content that repeats itself at a greater distance compresses less
FRAME = 512 * 1024


@dataclass(frozen=True)
class Framed:
    """A member held only as zstd frames: ``size`` bytes of content, in ``frames`` (a file),
    made of pieces whose (content, compressed) lengths are ``index``, in order. A large run
    file is kept so from its redaction to the bundle: never as plain text on disk."""

    frames: Path
    size: int
    index: tuple[tuple[int, int], ...]

    def read(self, start: int, length: int) -> bytes:
        """``length`` bytes of the content from ``start`` (fewer at its end): only the
        pieces that hold them are decompressed."""
        import zstandard

        end = min(start + length, self.size)
        out: list[bytes] = []
        pos = at = 0  # content and compressed offsets of the piece
        with open(self.frames, "rb") as f:
            for plain, packed in self.index:
                if pos + plain > start and pos < end:
                    f.seek(at)
                    data = zstandard.ZstdDecompressor().stream_reader(
                        f.read(packed), read_across_frames=True).read()
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

        self._cctx: Any = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)

    def __call__(self, data: bytes) -> bytes:
        if len(data) <= FRAME:
            return bytes(self._cctx.compress(data))
        view = memoryview(data)
        return b"".join(self._cctx.compress(view[i:i + FRAME])
                        for i in range(0, len(data), FRAME))


class FrameWriter:
    """Writes a member's frames to ``path`` (0600), compressing the pieces that come without.

    :meth:`add` takes each piece of the member in order, with the frames a worker made of it
    or None; :meth:`close` returns the :class:`Framed` member.
    """

    def __init__(self, path: Path, compress: FrameCompressor) -> None:
        self.path = path
        self.compress = compress
        self._f = open_private(path, "wb")
        self.size = 0
        self._index: list[tuple[int, int]] = []

    def add(self, data: bytes, frame: bytes | None = None) -> None:
        if not data:
            return
        if frame is None:
            frame = self.compress(data)
        self._f.write(frame)
        self.size += len(data)
        self._index.append((len(data), len(frame)))

    def close(self) -> Framed:
        """The member the frames hold."""
        self._f.close()
        return Framed(self.path, self.size, tuple(self._index))

    def discard(self) -> None:
        self._f.close()
        self.path.unlink(missing_ok=True)
