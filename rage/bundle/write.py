"""Writing a bundle: one tar streamed through a zstd stream writer, manifest first.

Memory stays flat whatever the size. Member metadata carries nothing about the sender:
mtime = creation time, uid/gid 0, mode 0644, no user or group names.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, BinaryIO, cast

from rage.bundle.names import check_member_name
from rage.fsutil import open_private, private_dir

ZSTD_LEVEL = 3
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
    dest: Path, members: Sequence[tuple[str, bytes | Path]], *, mtime: float
) -> tuple[int, str]:
    """Write ``members`` (name, bytes or a file to copy) as a .tar.zst at ``dest``, 0600.

    The file appears atomically (temporary name, then rename). Returns the bundle's size and
    sha256. The caller puts ``manifest.json`` first; names are checked here.
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
            with cctx.stream_writer(sink, closefd=False, write_size=CHUNK) as zw, tarfile.open(
                fileobj=zw, mode="w|", format=tarfile.PAX_FORMAT, bufsize=CHUNK
            ) as tar:
                # 1 MiB copies: tarfile's default 16 KiB costs many more calls per member
                tar.copybufsize = CHUNK  # type: ignore[attr-defined]  # missing from typeshed
                for name, data in members:
                    _add(tar, name, data, mtime)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return hashing.size, hashing.sha256.hexdigest()


def _add(tar: tarfile.TarFile, name: str, data: bytes | Path, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.mtime = int(mtime)
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if isinstance(data, bytes):
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        return
    with open(data, "rb") as f:
        info.size = os.fstat(f.fileno()).st_size
        tar.addfile(info, f)
