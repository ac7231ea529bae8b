"""Writing a bundle: one tar streamed through a zstd stream writer, manifest first.

Memory stays flat whatever the size. Member metadata carries nothing about the sender:
mtime = creation time, uid/gid 0, mode 0644, no user or group names. A member compressed
ahead (:mod:`rage.bundle.frames`) is copied in as its frames.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, BinaryIO, cast

from rage.bundle.frames import ZSTD_LEVEL, Framed
from rage.bundle.names import check_member_name
from rage.fsutil import open_private, private_dir

CHUNK = 1024 * 1024


def sha256_of(data: bytes | Path) -> tuple[int, str]:
    """Size and hex sha256 of in-memory bytes or a file's contents."""
    if isinstance(data, bytes):
        return len(data), hashlib.sha256(data).hexdigest()
    h = hashlib.sha256()
    size = 0
    with open(data, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


class _HashingWriter:
    """A write-only file object that hashes and counts what passes through it."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self._f.write(data)

    def flush(self) -> None:
        self._f.flush()


def write_bundle(
    dest: Path, members: Sequence[tuple[str, bytes | Path | Framed]], *, mtime: float
) -> tuple[int, str]:
    """Write ``members`` (name, bytes or a file to copy) as a .tar.zst at ``dest``, 0600.

    A :class:`~rage.bundle.frames.Framed` member's frames are copied as they are, between
    the frames compressed here (see :mod:`rage.bundle.frames`). The file appears atomically
    (temporary name, then rename). Returns the bundle's size and sha256. The caller puts
    ``manifest.json`` first; names are checked here.
    """
    import zstandard

    for name, _ in members:
        check_member_name(name)
    private_dir(dest.parent)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        with open_private(tmp, "wb") as raw:
            hashing = _HashingWriter(raw)
            cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL, threads=-1, write_checksum=True)
            sink = cast(IO[bytes], hashing)  # duck-typed: zstd only calls write/flush
            with cctx.stream_writer(sink, closefd=False, write_size=CHUNK) as zw:
                tar = _TarStream(cast(IO[bytes], zw))
                for name, data in members:
                    if isinstance(data, Framed):
                        tar.header(name, data.size, mtime)
                        zw.flush(zstandard.FLUSH_FRAME)  # what came before, as a frame
                        _copy_frames(data, hashing, raw)
                        tar.skip(data.size)
                    else:
                        tar.add(name, data, mtime)
                tar.close()
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return hashing.size, hashing.sha256.hexdigest()


def _copy_frames(data: Framed, out: _HashingWriter, raw: BinaryIO) -> None:
    """Copy ``data``'s frames, which must be what its index says (see Framed.chunks).

    Frames held in memory are hashed by a second thread while this one writes them to
    ``raw`` (the file under ``out``): the report's workers are done by then, so the hash
    (0.03 s for the 55 MB of a 200 MB log's frames) costs no time of its own. Two threads
    writing halves of the file at once were measured no faster (the kernel serialises
    writes to one file). Frames in a file (past MEMORY_MAX) are copied through ``out``.
    """
    if data.frames is not None or len(data.held) < 2:
        for chunk in data.chunks():
            out.write(chunk)
        return
    import threading

    held = data.held
    out.flush()

    def digest() -> None:
        for chunk in held:
            out.sha256.update(chunk)  # hashlib lets go of the GIL for these

    hasher = threading.Thread(target=digest, name="rage-bundle-hash")
    hasher.start()
    try:
        for chunk in held:
            raw.write(chunk)
    finally:
        hasher.join()
    out.size += sum(map(len, held))


class _TarStream:
    """A POSIX (pax) tar stream written to ``out``, as :mod:`tarfile` writes one.

    Members carry nothing about the sender: mtime = creation time, uid/gid 0, mode 0644,
    no user or group names. The end is two zero blocks, padded to tar's record size.
    """

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self.offset = 0

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self.offset += len(data)

    def header(self, name: str, size: int, mtime: float) -> None:
        info = tarfile.TarInfo(name)
        info.size = size
        info.mtime = int(mtime)
        info.mode = 0o644
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        self._write(info.tobuf(tarfile.PAX_FORMAT, tarfile.ENCODING, "surrogateescape"))

    def skip(self, size: int) -> None:
        """``size`` bytes of content were written past this stream: pad them to a block."""
        self.offset += size
        self._pad(size)

    def add(self, name: str, data: bytes | Path, mtime: float) -> None:
        if isinstance(data, bytes):
            self.header(name, len(data), mtime)
            self._write(data)
            self._pad(len(data))
            return
        with open(data, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.header(name, size, mtime)
            left = size
            while left > 0:
                chunk = f.read(min(CHUNK, left))
                if not chunk:
                    raise OSError(f"unexpected end of data: {data} shrank while bundled")
                self._write(chunk)
                left -= len(chunk)
        self._pad(size)

    def _pad(self, size: int) -> None:
        pad = -size % tarfile.BLOCKSIZE
        if pad:
            self._write(tarfile.NUL * pad)

    def close(self) -> None:
        self._write(tarfile.NUL * (2 * tarfile.BLOCKSIZE))
        pad = -self.offset % tarfile.RECORDSIZE
        if pad:
            self._write(tarfile.NUL * pad)
