"""Bundles: one ``.tar.zst`` file per report, written manifest first, read defensively.

Layout, in this order so a reader can stop early::

    manifest.json            schema, run metadata, sizes and sha256 of every other member
    summary.md               what a maintainer reads first
    run/...                  the run's files (redacted)
    collectors/<name>.json   what each collector found (redacted)

Writing streams one tar through a zstd stream writer: memory stays flat whatever the size.
Member metadata carries nothing about the sender: mtime = creation time, uid/gid 0, mode
0644, no user or group names.

Reading treats the file as hostile: member names must be relative and free of ``..``, only
regular files (and directories) are allowed, names are unique, ``manifest.json`` comes
first, and the total decompressed size is bounded (a bomb is refused as soon as it crosses
the bound, without decompressing the rest). Any problem is a one-line
:class:`~rage.errors.BadInputError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from rage.errors import BadInputError
from rage.fsutil import open_private, private_dir

SCHEMA = 1
MANIFEST = "manifest.json"
SUMMARY = "summary.md"
GiB = 1024**3
DEFAULT_MAX_DECOMPRESSED = 1 * GiB
ZSTD_LEVEL = 3
_CHUNK = 1024 * 1024
_MAX_MANIFEST = 16 * 1024 * 1024  # the manifest is read into memory: keep it bounded


@dataclass(frozen=True)
class MemberInfo:
    """One member as found in (or listed for) a bundle."""

    name: str
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "sha256": self.sha256}


# -- writing ---------------------------------------------------------------------------------

def sha256_of(data: bytes | Path) -> tuple[int, str]:
    """Size and hex sha256 of in-memory bytes or a file's contents."""
    if isinstance(data, bytes):
        return len(data), hashlib.sha256(data).hexdigest()
    h = hashlib.sha256()
    size = 0
    with open(data, "rb") as f:
        while chunk := f.read(_CHUNK):
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


def check_member_name(name: str) -> str:
    """Return ``name`` if it is a safe relative POSIX path, else raise BadInputError."""
    bad = (
        not name
        or name.startswith("/")
        or "\\" in name
        or "\0" in name
        or any(part in {"", ".", ".."} for part in name.split("/"))
        or posixpath.normpath(name) != name
    )
    if bad or len(name) > 1024:
        raise BadInputError(f"unsafe member name in bundle: {name[:200]!r}")
    return name


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
            with cctx.stream_writer(sink, closefd=False, write_size=_CHUNK) as zw, tarfile.open(
                fileobj=zw, mode="w|", format=tarfile.PAX_FORMAT, bufsize=_CHUNK
            ) as tar:
                # 1 MiB copies: tarfile's default 16 KiB costs many more calls per member
                tar.copybufsize = _CHUNK  # type: ignore[attr-defined]  # missing from typeshed
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
        import io

        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        return
    with open(data, "rb") as f:
        info.size = os.fstat(f.fileno()).st_size
        tar.addfile(info, f)


# -- reading ---------------------------------------------------------------------------------

class _Bounded:
    """Reads decompressed bytes, refusing once more than ``limit`` have come out."""

    def __init__(self, reader: IO[bytes], limit: int) -> None:
        self._r = reader
        self.limit = limit
        self.total = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = _CHUNK
        data = self._r.read(min(size, self.limit - self.total + 1))
        self.total += len(data)
        if self.total > self.limit:
            raise BadInputError(f"bundle is larger than {self.limit} bytes uncompressed: refused")
        return data


@contextlib.contextmanager
def _open_source(src: Path | BinaryIO) -> Iterator[BinaryIO]:
    if isinstance(src, Path | str):
        try:
            f = open(src, "rb")  # noqa: SIM115 - closed by the with below
        except OSError as e:
            raise BadInputError(f"cannot read bundle {src}: {e.strerror}") from None
        with f:
            yield f
    else:
        yield src


def _iter_members(
    src: Path | BinaryIO, max_decompressed: int
) -> Iterator[tuple[str, int, IO[bytes]]]:
    """Yield (name, size, reader) for each regular-file member, after the safety checks.

    The caller must read each member before asking for the next (the tar is a stream).
    """
    import zstandard

    with _open_source(src) as f:
        head = f.read(4)
        if head != b"\x28\xb5\x2f\xfd":
            raise BadInputError("not a rage bundle: the file is not zstd-compressed")
        # the magic number was consumed: hand zstd a stream that starts with it again
        bounded = _Bounded(
            zstandard.ZstdDecompressor().stream_reader(
                cast(IO[bytes], _Prefixed(head, f)), read_across_frames=True),
            max_decompressed,
        )
        seen: set[str] = set()
        with _corrupt_as_bad_input():
            tar = tarfile.open(  # noqa: SIM115 - a stream: nothing to close but the source
                fileobj=cast(IO[bytes], bounded), mode="r|")
            first = True
            for info in tar:
                name = check_member_name(info.name.rstrip("/") if info.isdir() else info.name)
                if name in seen:
                    raise BadInputError(f"duplicate member in bundle: {name!r}")
                seen.add(name)
                if info.isdir():
                    continue
                if not info.isfile():
                    kind = "link" if info.issym() or info.islnk() else "special file"
                    raise BadInputError(f"bundle member {name!r} is a {kind}: refused")
                if first and name != MANIFEST:
                    raise BadInputError(f"not a rage bundle: the first member is {name!r}, "
                                        f"not {MANIFEST}")
                first = False
                if info.size > max_decompressed - bounded.total:
                    raise BadInputError(
                        f"bundle member {name!r} ({info.size} bytes) exceeds the "
                        f"{max_decompressed}-byte limit: refused")
                reader = tar.extractfile(info)
                assert reader is not None  # regular files always have a reader
                yield name, info.size, reader
            if first:
                raise BadInputError("not a rage bundle: no manifest.json")


@contextlib.contextmanager
def _corrupt_as_bad_input() -> Iterator[None]:
    """Turn the decoders' errors into one-line BadInputErrors."""
    import zstandard

    try:
        yield
    except zstandard.ZstdError as e:
        raise BadInputError(f"corrupt bundle: zstd: {e}") from None
    except tarfile.TarError as e:
        raise BadInputError(f"corrupt bundle: not a valid tar stream: {e}") from None
    except EOFError:
        raise BadInputError("corrupt bundle: truncated") from None


class _Prefixed:
    """A file object that replays ``head`` before the rest of ``f``."""

    def __init__(self, head: bytes, f: BinaryIO) -> None:
        self._head = head
        self._f = f

    def read(self, size: int = -1) -> bytes:
        if self._head:
            out, self._head = self._head, b""
            return out
        return self._f.read(size)


def _drain(name: str, size: int, reader: IO[bytes], sink: Any = None) -> MemberInfo:
    h = hashlib.sha256()
    n = 0
    with _corrupt_as_bad_input():
        while chunk := reader.read(_CHUNK):
            h.update(chunk)
            n += len(chunk)
            if sink is not None:
                sink(chunk)
    if n != size:
        raise BadInputError(f"corrupt bundle: member {name!r} is truncated")
    return MemberInfo(name, n, h.hexdigest())


def _parse_manifest(data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInputError(f"bad manifest.json in bundle: {e}") from None
    if not isinstance(manifest, dict):
        raise BadInputError("bad manifest.json in bundle: not a JSON object")
    if manifest.get("schema") != SCHEMA:
        raise BadInputError(f"unsupported bundle schema {manifest.get('schema')!r} "
                            f"(this rage reads schema {SCHEMA})")
    files = manifest.get("files")
    if not isinstance(files, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str)
        and isinstance(e.get("size"), int) and isinstance(e.get("sha256"), str)
        for e in files
    ):
        raise BadInputError("bad manifest.json in bundle: 'files' must list name/size/sha256")
    return manifest


def _scan(src: Path | BinaryIO, max_decompressed: int) -> tuple[dict[str, Any], str,
                                                               list[MemberInfo]]:
    """One pass: parse the manifest, keep the summary, hash every member."""
    manifest: dict[str, Any] = {}
    summary = ""
    infos: list[MemberInfo] = []
    for name, size, reader in _iter_members(src, max_decompressed):
        if name in (MANIFEST, SUMMARY):
            if size > _MAX_MANIFEST:
                raise BadInputError(f"bundle member {name} is implausibly large: refused")
            buf = bytearray()
            info = _drain(name, size, reader, buf.extend)
            if name == MANIFEST:
                manifest = _parse_manifest(bytes(buf))
                continue  # the manifest does not list itself
            summary = buf.decode("utf-8", "replace")
        else:
            info = _drain(name, size, reader)
        infos.append(info)
    return manifest, summary, infos


def problems(manifest: dict[str, Any], found: Sequence[MemberInfo]) -> list[str]:
    """Differences between what the manifest lists and what the archive holds."""
    listed = {e["name"]: e for e in manifest.get("files", [])}
    out: list[str] = []
    for m in found:
        entry = listed.get(m.name)
        if entry is None:
            out.append(f"{m.name}: not listed in the manifest")
        elif entry["sha256"] != m.sha256 or entry["size"] != m.size:
            out.append(f"{m.name}: checksum mismatch")
    names = {m.name for m in found}
    out.extend(f"{n}: listed in the manifest but missing" for n in listed if n not in names)
    return out


class BundleReader:
    """A bundle opened for reading. Members are re-streamed from the file on demand."""

    def __init__(self, path: Path, max_decompressed: int) -> None:
        self.path = path
        self.max_decompressed = max_decompressed
        self.manifest, self.summary, self._found = _scan(path, max_decompressed)

    @property
    def members(self) -> list[MemberInfo]:
        """Every member but the manifest, in archive order, with size and actual sha256."""
        return list(self._found)

    def read(self, name: str) -> bytes:
        """The bytes of member ``name`` (raises NotFoundError if absent)."""
        from rage.errors import NotFoundError

        for n, size, reader in _iter_members(self.path, self.max_decompressed):
            if n == name:
                buf = bytearray()
                _drain(n, size, reader, buf.extend)
                return bytes(buf)
            _drain(n, size, reader)
        raise NotFoundError(f"no member {name!r} in {self.path.name}")

    def verify(self) -> list[str]:
        """Problems found: checksum mismatches, missing or unlisted members (empty if none)."""
        return problems(self.manifest, self._found)

    def extract(self, dest: Path) -> list[Path]:
        """Write every member under ``dest`` (0700 dirs, 0600 files); return the paths.

        Never overwrites and never follows a symlink: an existing path is an error.
        """
        private_dir(dest)
        root = dest.resolve()
        written: list[Path] = []
        for name, size, reader in _iter_members(self.path, self.max_decompressed):
            target = root.joinpath(*name.split("/"))
            parent = root
            for part in name.split("/")[:-1]:
                parent = parent / part
                with contextlib.suppress(FileExistsError):
                    os.mkdir(parent, 0o700)
                if parent.is_symlink() or not parent.is_dir():
                    raise BadInputError(f"cannot extract {name!r}: {parent} is not a directory")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(target, flags, 0o600)
            except FileExistsError:
                raise BadInputError(f"cannot extract {name!r}: {target} already exists") from None
            with os.fdopen(fd, "wb") as out:
                _drain(name, size, reader, out.write)
            written.append(target)
        return written


def open_bundle(path: Path, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> BundleReader:
    """Open and scan ``path``; raises BadInputError on anything that is not a sound bundle."""
    return BundleReader(Path(path), max_decompressed)


def validate_bundle(
    src: Path | BinaryIO, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
) -> dict[str, Any]:
    """Check a received bundle end to end and return its manifest.

    Raises BadInputError when the archive is unsafe, corrupt, too large, or when its members
    do not match the manifest's checksums.
    """
    manifest, _summary, found = _scan(src, max_decompressed)
    bad = problems(manifest, found)
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise BadInputError(f"bundle failed verification: {bad[0]}{more}")
    return manifest


__all__ = [
    "DEFAULT_MAX_DECOMPRESSED",
    "MANIFEST",
    "SCHEMA",
    "SUMMARY",
    "BundleReader",
    "MemberInfo",
    "check_member_name",
    "open_bundle",
    "problems",
    "sha256_of",
    "validate_bundle",
    "write_bundle",
]
