"""The one streaming reader of bundles: every safety rule of the format, in a single pass.

A bundle is hostile until proven otherwise (the receiver takes them from anyone). The file is
read as a stream (zstd stream reader -> tar stream mode), nothing touches the disk, and the
first problem stops the read:

- names must be relative and free of ``..`` (harmless spellings like ``./a`` are normalised,
  then must be unique);
- only regular files and directories: links, devices, fifos and sparse files are refused;
- ``manifest.json`` is the first member;
- every header must be sound: Python's tarfile quietly ends the archive at a header with a bad
  checksum where GNU tar skips it and carries on, so a bundle could hide members from rage
  that ``tar -x`` extracts. Here a bad header is an error, and after the end of the archive
  only zero bytes may follow;
- the decompressed size is bounded twice: a tar header that claims more than the remaining
  budget is refused before a byte of its data is inflated, and a counting reader under the
  tar enforces the same budget for everything else (padding, pax headers, long names);
- extended headers (pax, GNU long names) are read here, not by tarfile: one larger than
  MAX_EXTENDED is refused from its 512-byte header, before its data is read (tarfile reads
  whatever size one declares into memory), and pax records are parsed in one linear pass
  (tarfile's own parser is quadratic before Python 3.11.10 / 3.12.6, CVE-2024-6232);
  global headers, sparse files and chains of extended headers are refused;
- at most ``max_entries`` entries (directories count), and TarInfo objects are not kept:
  a million directory entries cost neither minutes nor hundreds of megabytes;
- a zstd frame may ask for a window of at most MAX_WINDOW: a streaming decompressor holds
  its window, and a receiver streams one per download in flight.

Every problem is a one-line BadInputError; "too large" is the subclass BundleTooLarge so a
server can answer 413 rather than 400.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import tarfile
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self, cast

from rage.bundle.names import MANIFEST, normalize_member_name
from rage.errors import BadInputError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
DEFAULT_MAX_DECOMPRESSED = 1024**3
# a rage bundle lists every member in its manifest, and a receiver takes at most 20,000 JSON
# values in one: no real bundle comes near
DEFAULT_MAX_ENTRIES = 20_000
# a pax header of rage's holds a path (at most 1,024 characters) and a few numbers
MAX_EXTENDED = 64 * 1024
# zstd level 19's window (rage writes level 3: 2 MiB); zstd's own limit is 128 MiB
MAX_WINDOW = 8 * 1024 * 1024
# records in one pax header (path, size, mtime... a real one has a handful): with the size
# bound, parsing any header costs a few C-level passes over at most 64 KiB
MAX_PAX_RECORDS = 64
MAX_EXTENDED_CHAIN = 4  # extended headers before one member (pax + GNU long name is 2)
_PAX_TYPES = (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE)
_GNU_LONG_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
CHUNK = 256 * 1024  # measured: larger reads cost more copying inside tarfile's stream

Source = Path | str | IO[bytes]


class BundleTooLarge(BadInputError):
    """The bundle inflates beyond the decompressed-size budget (a likely decompression bomb)."""


@dataclass(frozen=True)
class MemberInfo:
    """One member as found in (or listed for) a bundle."""

    name: str
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "sha256": self.sha256}


class Member:
    """A regular-file member being streamed. Read it before asking for the next one: the
    archive is a stream, and moving on skips whatever was left unread. ``offset`` is where
    its data starts in the decompressed tar stream (see :mod:`rage.bundle.seek`)."""

    __slots__ = ("_reader", "name", "offset", "size")

    def __init__(self, name: str, size: int, reader: IO[bytes], offset: int = 0) -> None:
        self.name = name
        self.size = size
        self.offset = offset
        self._reader = reader

    def read(self, n: int = CHUNK) -> bytes:
        """Up to ``n`` bytes of the member's data (b"" at its end)."""
        try:
            return self._reader.read(n)
        except _decoder_errors() as e:
            raise _as_bad_input(e) from None

    def pump(self, sink: Callable[[bytes], object]) -> int:
        """Pass the rest of the data to ``sink`` chunk by chunk; return how many bytes.

        Raises BadInputError if the member holds fewer bytes than its header claimed.
        """
        n = 0
        while chunk := self.read(CHUNK):
            n += len(chunk)
            sink(chunk)
        if n != self.size:
            raise BadInputError(f"corrupt bundle: member {self.name!r} is truncated")
        return n

    def drain(self, sink: Callable[[bytes], object] | None = None) -> MemberInfo:
        """:meth:`pump`, hashing: the member's size and actual sha256."""
        h = hashlib.sha256()
        if sink is None:
            n = self.pump(h.update)
        else:
            def both(chunk: bytes) -> None:
                h.update(chunk)
                sink(chunk)

            n = self.pump(both)
        return MemberInfo(self.name, n, h.hexdigest())


class _Bounded:
    """Reads decompressed bytes, refusing once more than ``limit`` have come out.

    The decompressor is asked for CHUNK bytes at a time and tarfile's small reads (10 KiB
    records, 512-byte headers) are served from that block: each call into the decompressor
    releases the GIL, and under a loaded receiver every release is a thread switch.
    ``total`` counts what was handed out, so the per-member budget check sees the same
    numbers as without the block.
    """

    def __init__(self, reader: IO[bytes], limit: int) -> None:
        self._r = reader
        self.limit = limit
        self.total = 0  # bytes handed to the reader above
        self._pulled = 0  # bytes taken out of the decompressor
        self._block = b""
        self._at = 0

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return b"".join(iter(lambda: self.read(CHUNK), b""))
        if self._at >= len(self._block):
            # never ask for more than one byte past the budget, so a bomb costs at most
            # the limit
            room = self.limit - self._pulled + 1
            self._block = self._r.read(min(max(size, CHUNK), room))
            self._at = 0
            self._pulled += len(self._block)
        at = self._at
        data = self._block[at:at + size]  # the whole block is not copied
        self._at = at + len(data)
        self.total += len(data)
        # refused when the reader above gets past the budget, as without the block (a
        # member's header that claims too much is refused before, with its own message)
        if self.total > self.limit:
            raise BundleTooLarge(f"bundle inflates beyond the {self.limit}-byte limit: refused")
        return data


class _Prefixed:
    """A file object that replays ``head`` before the rest of ``f`` (works on pipes too)."""

    def __init__(self, head: bytes, f: IO[bytes]) -> None:
        self._head = head
        self._f = f

    def read(self, size: int = -1) -> bytes:
        if self._head:
            out, self._head = self._head, b""
            return out
        return self._f.read(size)


@functools.cache
def _decoder_errors() -> tuple[type[Exception], ...]:
    import zstandard

    # ValueError: tarfile's header parsing lets a few slip through (UnicodeError among them)
    return (zstandard.ZstdError, tarfile.TarError, EOFError, ValueError)


def _as_bad_input(e: Exception) -> BadInputError:
    """The one-line BadInputError for a decoder's error."""
    if isinstance(e, tarfile.TarError):
        return BadInputError(f"corrupt bundle: not a valid tar stream: {e}")
    if isinstance(e, EOFError):
        return BadInputError("corrupt bundle: truncated")
    if isinstance(e, ValueError):
        return BadInputError(f"corrupt bundle: {type(e).__name__}: {e}")
    if "too much memory" in str(e):  # the frame's window is over max_window_size
        return BadInputError(f"bundle refused: its zstd window is larger than {MAX_WINDOW} "
                             "bytes (compress at level 19 or below)")
    return BadInputError(f"corrupt bundle: zstd: {e}")


@contextlib.contextmanager
def corrupt_as_bad_input() -> Iterator[None]:
    """Turn the decoders' errors into one-line BadInputErrors."""
    try:
        yield
    except _decoder_errors() as e:
        raise _as_bad_input(e) from None


@contextlib.contextmanager
def _open_source(src: Source) -> Iterator[IO[bytes]]:
    if not isinstance(src, Path | str):
        yield src
        return
    try:
        f = open(src, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as e:
        raise BadInputError(f"cannot read bundle {src}: {e.strerror}") from None
    with f:
        yield f


def _check_kind(name: str, info: tarfile.TarInfo) -> None:
    if info.issym() or info.islnk():
        raise BadInputError(f"bundle member {name!r} is a link: refused")
    # GNU sparse counts as regular for tarfile; its map is never read here (see fromtarfile)
    if (not (info.isdir() or info.isreg()) or info.issparse()
            or info.type == tarfile.GNUTYPE_SPARSE):
        raise BadInputError(f"bundle member {name!r} is a special file: refused")


# not in typeshed, stable since Python 3.2: a zero block / no bytes at all
_END_OF_ARCHIVE: tuple[type[Exception], ...] = (
    tarfile.EOFHeaderError, tarfile.EmptyHeaderError)  # type: ignore[attr-defined]


class StrictTarInfo(tarfile.TarInfo):
    """Header parsing that refuses what tarfile would read as "end of archive" but GNU tar
    would skip: a damaged header (bad checksum, bad number field) or a truncated one."""

    @classmethod
    def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
        try:
            return super().frombuf(buf, encoding, errors)
        except _END_OF_ARCHIVE:
            raise  # a zero block or the end of the stream: the archive really ends here
        except tarfile.HeaderError as e:
            raise BadInputError(f"corrupt bundle: bad tar header ({e}): refused") from None

    @classmethod
    def fromtarfile(cls, tar: tarfile.TarFile) -> Self:
        """The next member, its extended headers (if any) read and applied here, bounded.

        This replaces tarfile's own processing of a header (``_proc_member``) for every
        entry: only regular files and directories matter to a bundle, and everything
        else is refused by the caller from the header alone.
        """
        src = cast(IO[bytes], tar.fileobj)
        pax: dict[str, str] = {}
        long_name: str | None = None
        for extended in range(MAX_EXTENDED_CHAIN + 1):
            try:
                obj = cls.frombuf(src.read(_BLOCK), tar.encoding or "utf-8", tar.errors)
            except _END_OF_ARCHIVE:
                if extended:
                    raise BadInputError("corrupt bundle: an extended tar header with no "
                                        "member after it: refused") from None
                raise
            obj.offset = src.tell() - _BLOCK
            if obj.type not in _PAX_TYPES + _GNU_LONG_TYPES:
                break
            data = _extended_data(src, obj)
            if obj.type in _PAX_TYPES:
                pax.update(_pax_records(data, tar.errors))
            elif obj.type == tarfile.GNUTYPE_LONGNAME:
                long_name = data.split(b"\0", 1)[0].decode("utf-8", tar.errors)
        else:
            raise BadInputError("corrupt bundle: more than "
                                f"{MAX_EXTENDED_CHAIN} extended tar headers in a row: refused")
        if obj.type == tarfile.XGLTYPE:
            raise BadInputError("corrupt bundle: a global pax header: refused")
        if any(k.startswith("GNU.sparse.") for k in pax):
            raise BadInputError("corrupt bundle: a sparse file: refused")
        if long_name is not None:
            obj.name = long_name
        if "path" in pax:
            obj.name = pax["path"]
        if "linkpath" in pax:
            obj.linkname = pax["linkpath"]
        if "size" in pax:
            size = pax["size"]
            if not (size.isascii() and size.isdigit() and len(size) <= 20):
                raise BadInputError("corrupt bundle: a bad size in a pax header: refused")
            obj.size = int(size)
        obj.pax_headers = pax
        if obj.isdir():
            obj.name = obj.name.rstrip("/")
        # where the data starts, and where tarfile looks for the next header
        obj.offset_data = src.tell()
        data_blocks = obj.isreg() or obj.type not in tarfile.SUPPORTED_TYPES
        tar.offset = obj.offset_data + (_padded(obj.size) if data_blocks else 0)
        return obj


_BLOCK = tarfile.BLOCKSIZE


def _padded(size: int) -> int:
    return size + (-size % _BLOCK)


def _extended_data(src: IO[bytes], header: tarfile.TarInfo) -> bytes:
    """An extended header's data, refused from its declared size if that is too large."""
    if header.size > MAX_EXTENDED:
        raise BadInputError(f"corrupt bundle: an extended tar header of {header.size} bytes "
                            f"(more than {MAX_EXTENDED}): refused")
    data = src.read(_padded(header.size))
    if len(data) < _padded(header.size):
        raise BadInputError("corrupt bundle: truncated")
    return data[:header.size]


def _pax_records(data: bytes, errors: str) -> dict[str, str]:
    """A pax header's ``"%d %s=%s\n"`` records, in one linear pass; BadInputError when one
    is malformed (the length must end the record exactly at its newline)."""
    out: dict[str, str] = {}
    pos, end, records = 0, len(data), 0
    while pos < end:
        if data[pos] == 0:
            # padding some writers leave inside the declared size: zeros to the end only
            if data.count(0, pos) != end - pos:
                raise BadInputError("corrupt bundle: a malformed pax header: refused")
            break
        space = data.find(b" ", pos, pos + 21)
        digits = data[pos:space]
        if space < 0 or not digits.isdigit():
            raise BadInputError("corrupt bundle: a malformed pax header: refused")
        stop = pos + int(digits)
        if stop <= space + 1 or stop > end or data[stop - 1] != 0x0A:
            raise BadInputError("corrupt bundle: a malformed pax header: refused")
        keyword, eq, value = data[space + 1:stop - 1].partition(b"=")
        if not eq or not keyword:
            raise BadInputError("corrupt bundle: a malformed pax header: refused")
        out[keyword.decode("utf-8", errors)] = value.decode("utf-8", errors)
        pos = stop
        records += 1
        if records > MAX_PAX_RECORDS:
            raise BadInputError(f"corrupt bundle: a pax header of more than {MAX_PAX_RECORDS} "
                                "records: refused")
    return out


def _only_zeros_follow(tar: tarfile.TarFile) -> None:
    """After the end-of-archive marker, the rest of the stream must be zero bytes."""
    rest = cast(IO[bytes], tar.fileobj)
    while chunk := rest.read(CHUNK):
        if chunk.strip(b"\0"):
            raise BadInputError("corrupt bundle: data after the end of the tar archive: refused")


def iter_members(src: Source, max_decompressed: int, *,
                 max_entries: int = DEFAULT_MAX_ENTRIES,
                 directories: bool = True) -> Generator[Member, None, None]:
    """Yield each regular-file member, in archive order, after the safety checks.

    ``src`` is a path or an open binary file (read from where it stands). The first member
    yielded is always ``manifest.json``. Close the generator (or exhaust it) to release the
    file; a member must be read before the next is asked for. More than ``max_entries``
    entries, or (with ``directories`` false) any directory entry, is a BadInputError.
    """
    import zstandard

    with _open_source(src) as f:
        head = f.read(4)
        if head != ZSTD_MAGIC:
            raise BadInputError("not a rage bundle: the file is not zstd-compressed")
        stream = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).stream_reader(
            cast(IO[bytes], _Prefixed(head, f)), read_across_frames=True)
        bounded = _Bounded(stream, max_decompressed)
        seen: set[str] = set()
        with corrupt_as_bad_input():
            tar = tarfile.open(  # noqa: SIM115 - a stream: nothing to close but the source
                fileobj=cast(IO[bytes], bounded), mode="r|", tarinfo=StrictTarInfo)
            kept: list[tarfile.TarInfo] = tar.members  # type: ignore[attr-defined]
            entries = 0
            while (info := tar.next()) is not None:
                kept.clear()  # a stream: tarfile would keep every entry for nothing
                entries += 1
                if entries > max_entries:
                    raise BadInputError(f"bundle holds more than {max_entries} entries: refused")
                name = normalize_member_name(info.name)
                _check_kind(name, info)
                if not seen and (name != MANIFEST or not info.isreg()):
                    raise BadInputError(f"not a rage bundle: the first member is {name!r}, "
                                        f"not {MANIFEST}")
                if name in seen:
                    raise BadInputError(f"duplicate member in bundle: {name!r}")
                seen.add(name)
                if info.isdir():
                    if not directories:
                        raise BadInputError(f"bundle member {name!r} is a directory, not a "
                                            "file the manifest lists: refused")
                    continue
                if info.size > max_decompressed - bounded.total:
                    raise BundleTooLarge(
                        f"bundle member {name!r} ({info.size} bytes) exceeds the "
                        f"{max_decompressed}-byte decompressed-size limit: refused")
                reader = tar.extractfile(info)
                assert reader is not None  # regular files always have a reader
                yield Member(name, info.size, reader, info.offset_data)
            if not seen:
                raise BadInputError(f"not a rage bundle: no {MANIFEST}")
            _only_zeros_follow(tar)
