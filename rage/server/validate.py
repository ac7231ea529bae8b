"""Streaming validation of uploaded bundles, and bounded reading of stored ones.

A server sees hostile input, so validation reads the ``.tar.zst`` as a stream (zstd stream
reader -> tar stream mode) and stops at the first problem: a tar header that claims more than
the remaining decompressed budget is refused before a byte of its data is inflated, and a
counting reader under the tar enforces the same budget for everything else (padding, pax
headers, long names). Nothing is extracted to disk; member data is only hashed.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rage.errors import BadInputError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MANIFEST = "manifest.json"
MANIFEST_MAX = 4 * 1024 * 1024
_CHUNK = 256 * 1024


class BundleTooLarge(BadInputError):
    """The bundle inflates beyond the decompressed-size budget (a likely decompression bomb)."""


class _Budget:
    """A read-only file that raises once more than ``limit`` bytes have been read through it."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self._raw = raw
        self.limit = limit
        self.used = 0

    def read(self, n: int = -1) -> bytes:
        # never ask for more than one byte past the budget, so a bomb costs at most the limit
        room = self.limit - self.used + 1
        data = self._raw.read(room if n is None or n < 0 else min(n, room))
        self.used += len(data)
        if self.used > self.limit:
            raise BundleTooLarge(f"bundle inflates beyond the {self.limit}-byte limit")
        return data


def check_member_name(name: str) -> str:
    """Return ``name`` normalised if it is a safe relative path; raise BadInputError if not."""
    if not name or "\x00" in name or "\\" in name:
        raise BadInputError(f"unsafe member name {name!r}")
    if name.startswith("/") or posixpath.isabs(name):
        raise BadInputError(f"absolute member name {name!r}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise BadInputError(f"unsafe member name {name!r}")
    return "/".join(parts)


def _check_member(m: tarfile.TarInfo) -> str:
    name = check_member_name(m.name)
    if m.isdir():
        return name
    if m.issym() or m.islnk():
        raise BadInputError(f"link member {name!r} is not allowed")
    if not m.isreg() or m.issparse():
        raise BadInputError(f"member {name!r} is not a regular file")
    return name


def _parse_manifest(data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise BadInputError(f"manifest.json is not valid JSON: {e}") from None
    if not isinstance(manifest, dict):
        raise BadInputError("manifest.json is not a JSON object")
    if manifest.get("schema") != 1:
        raise BadInputError(f"unsupported manifest schema {manifest.get('schema')!r}")
    files = manifest.get("files")
    if not isinstance(files, list):
        raise BadInputError("manifest.json has no 'files' list")
    for f in files:
        if not (isinstance(f, dict) and isinstance(f.get("name"), str)
                and isinstance(f.get("size"), int) and isinstance(f.get("sha256"), str)):
            raise BadInputError("manifest.json 'files' entries need name, size and sha256")
    if not isinstance(manifest.get("run", {}), dict):
        raise BadInputError("manifest.json 'run' is not an object")
    return manifest


def _open_tar(fileobj: IO[bytes], max_decompressed: int) -> tuple[tarfile.TarFile, _Budget]:
    import zstandard

    head = fileobj.read(4)
    if head != ZSTD_MAGIC:
        raise BadInputError("not a rage bundle: no zstandard header (expected a .tar.zst)")
    fileobj.seek(0)
    reader = zstandard.ZstdDecompressor().stream_reader(fileobj, closefd=False)
    budget = _Budget(reader, max_decompressed)
    return tarfile.open(fileobj=budget, mode="r|"), budget  # type: ignore[call-overload]


def _errors() -> tuple[type[BaseException], ...]:
    import zstandard

    return (tarfile.TarError, zstandard.ZstdError, EOFError, ValueError, UnicodeError)


def _members(tf: tarfile.TarFile, budget: _Budget) -> Iterator[tuple[str, tarfile.TarInfo]]:
    seen: set[str] = set()
    for i, m in enumerate(tf):
        name = _check_member(m)
        if i == 0 and name != MANIFEST:
            raise BadInputError("the first member of a bundle must be manifest.json")
        if name in seen:
            raise BadInputError(f"duplicate member {name!r}")
        seen.add(name)
        if m.size > budget.limit - budget.used:
            raise BundleTooLarge(
                f"member {name!r} claims {m.size} bytes, over the decompressed-size limit")
        yield name, m


def validate_bundle_file(path: Path, max_decompressed: int) -> dict[str, Any]:
    """Check the bundle at ``path`` and return its manifest; raise BadInputError if invalid.

    Checks: zstd magic, a tar of safe regular members only, ``manifest.json`` first and valid,
    every other file listed in the manifest with matching size and sha256, and no more than
    ``max_decompressed`` bytes inflated in total (refused early, never fully inflated).
    """
    with open(path, "rb") as f:
        try:
            tf, budget = _open_tar(f, max_decompressed)
            with tf:
                return _validate(tf, budget)
        except _errors() as e:
            raise BadInputError(f"corrupt bundle: {type(e).__name__}: {e}") from None


def _validate(tf: tarfile.TarFile, budget: _Budget) -> dict[str, Any]:
    manifest: dict[str, Any] | None = None
    expected: dict[str, dict[str, Any]] = {}
    for name, m in _members(tf, budget):
        if m.isdir():
            continue
        src = tf.extractfile(m)
        assert src is not None  # regular file
        if manifest is None:
            if m.size > MANIFEST_MAX:
                raise BadInputError("manifest.json is too large")
            manifest = _parse_manifest(src.read())
            expected = {check_member_name(f["name"]): f for f in manifest["files"]}
            continue
        want = expected.pop(name, None)
        if want is None:
            raise BadInputError(f"member {name!r} is not listed in the manifest")
        h = hashlib.sha256()
        while chunk := src.read(_CHUNK):
            h.update(chunk)
        if m.size != want["size"] or h.hexdigest() != want["sha256"].lower():
            raise BadInputError(f"checksum mismatch for {name!r}")
    if manifest is None:
        raise BadInputError("empty bundle: no manifest.json")
    if expected:
        raise BadInputError(f"missing member listed in the manifest: {sorted(expected)[0]!r}")
    return manifest


@dataclass(frozen=True)
class MemberText:
    """One member's content for display: at most ``cap`` bytes, the end kept when cut."""

    name: str
    size: int
    data: bytes
    cut: bool

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def read_members(f: IO[bytes], *, max_decompressed: int, cap: int) -> dict[str, MemberText]:
    """Read every regular member of a stored bundle (a seekable binary file), keeping the
    last ``cap`` bytes of each.

    Stored bundles were validated on upload; the same safety checks still apply here.
    """
    out: dict[str, MemberText] = {}
    try:
        tf, budget = _open_tar(f, max_decompressed)
        with tf:
            for name, m in _members(tf, budget):
                if m.isdir():
                    continue
                src = tf.extractfile(m)
                assert src is not None
                buf = bytearray()
                while chunk := src.read(_CHUNK):
                    buf += chunk
                    if len(buf) > cap:
                        del buf[: len(buf) - cap]  # logs: the end matters most
                out[name] = MemberText(name, m.size, bytes(buf), m.size > cap)
    except _errors() as e:
        raise BadInputError(f"corrupt bundle: {type(e).__name__}: {e}") from None
    return out
