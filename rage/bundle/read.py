"""Reading a whole bundle: the manifest, checksums against it, and safe extraction.

Everything goes through :func:`rage.bundle.stream.iter_members`, so every read (``rage
inspect``, the receiver's validation, extraction) applies the same safety rules in one pass.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rage.bundle.names import SCHEMA, SUMMARY, normalize_member_name
from rage.bundle.stream import (
    DEFAULT_MAX_DECOMPRESSED,
    BundleTooLarge,
    Member,
    MemberInfo,
    Source,
    iter_members,
)
from rage.errors import BadInputError, NotFoundError
from rage.fsutil import private_dir

MAX_MANIFEST = 16 * 1024 * 1024  # the manifest and summary are read into memory


def _small(member: Member, limit: int = MAX_MANIFEST) -> tuple[bytes, MemberInfo]:
    """A member that is read into memory whole (manifest, summary), bounded."""
    if member.size > limit:
        raise BundleTooLarge(f"bundle member {member.name} ({member.size} bytes) is larger "
                             f"than the {limit}-byte limit for it: refused")
    buf = bytearray()
    info = member.drain(buf.extend)
    return bytes(buf), info


def _loads_object(data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInputError(f"bad manifest.json in bundle: {e}") from None
    except RecursionError:
        raise BadInputError("bad manifest.json in bundle: nested too deeply") from None
    if not isinstance(manifest, dict):
        raise BadInputError("bad manifest.json in bundle: not a JSON object")
    return manifest


def parse_manifest(data: bytes) -> dict[str, Any]:
    """The manifest as a dict, after the schema checks; raises BadInputError if unsound."""
    return _parse_manifest(data)[0]


def _parse_manifest(data: bytes) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The manifest, and its entries by plain member name."""
    manifest = _loads_object(data)
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
    if not isinstance(manifest.get("run", {}), dict):
        raise BadInputError("bad manifest.json in bundle: 'run' is not an object")
    # a manifest naming '../x' is as hostile as such a member: _listed refuses it
    return manifest, _listed(manifest)


def _listed(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifest's entries by plain member name (unsafe names raise BadInputError)."""
    return {normalize_member_name(e["name"]): e for e in manifest.get("files", [])}


def _missing(listed: dict[str, dict[str, Any]], found: Sequence[MemberInfo]) -> list[str]:
    names = {m.name for m in found}
    return [f"{n}: listed in the manifest but missing" for n in listed if n not in names]


def _mismatch(found: MemberInfo, entry: dict[str, Any] | None) -> str | None:
    if entry is None:
        return f"{found.name}: not listed in the manifest"
    if entry["size"] != found.size or entry["sha256"].lower() != found.sha256:
        return f"{found.name}: checksum mismatch"
    return None


def problems(manifest: dict[str, Any], found: Sequence[MemberInfo]) -> list[str]:
    """Differences between what the manifest lists and what the archive holds."""
    listed = _listed(manifest)
    out = [p for m in found if (p := _mismatch(m, listed.get(m.name))) is not None]
    return out + _missing(listed, found)


def _failed(problem: str, more: int = 0) -> BadInputError:
    extra = f" (and {more} more)" if more else ""
    return BadInputError(f"bundle failed verification: {problem}{extra}")


def _scan(src: Source, max_decompressed: int, *, fail_fast: bool,
          max_manifest: int = MAX_MANIFEST,
          sinks: Mapping[str, Callable[[bytes], object]] | None = None,
          ) -> tuple[dict[str, Any], str, list[MemberInfo]]:
    """One pass: parse the manifest, keep the summary, hash every member.

    With ``fail_fast`` the first problem raises: a member the manifest does not list is
    refused before its data is inflated, a checksum mismatch as soon as the member ends.
    """
    summary = ""
    found: list[MemberInfo] = []
    # a received bundle holds what its manifest lists, and directories are never listed
    members = iter_members(src, max_decompressed, directories=not fail_fast)
    with contextlib.closing(members):
        # the manifest is always first
        manifest, listed = _parse_manifest(_small(next(members), max_manifest)[0])
        for m in members:
            if fail_fast and m.name not in listed:
                raise _failed(f"{m.name}: not listed in the manifest")
            if m.name == SUMMARY:
                data, info = _small(m)
                summary = data.decode("utf-8", "replace")
            else:
                info = m.drain(sinks.get(m.name) if sinks else None)
            if fail_fast and (bad := _mismatch(info, listed[m.name])):
                raise _failed(bad)
            found.append(info)
    if fail_fast and (missing := _missing(listed, found)):
        raise _failed(missing[0], len(missing) - 1)
    return manifest, summary, found


def peek_manifest(src: Source, *,
                  max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> dict[str, Any]:
    """The bundle's manifest as a JSON object, reading nothing past it and checking no schema.

    For callers that only describe a bundle (which app, which status); raises BadInputError
    if the file is not a bundle or its manifest is not a JSON object.
    """
    members = iter_members(src, max_decompressed)
    with contextlib.closing(members):
        return _loads_object(_small(next(members))[0])


class BundleReader:
    """A bundle opened for reading. Members are re-streamed from the file on demand."""

    def __init__(self, path: Path, max_decompressed: int) -> None:
        self.path = path
        self.max_decompressed = max_decompressed
        self.manifest, self.summary, self._found = _scan(path, max_decompressed,
                                                         fail_fast=False)

    @property
    def members(self) -> list[MemberInfo]:
        """Every member but the manifest, in archive order, with size and actual sha256."""
        return list(self._found)

    def read(self, name: str) -> bytes:
        """The bytes of member ``name`` (raises NotFoundError if absent)."""
        members = iter_members(self.path, self.max_decompressed)
        with contextlib.closing(members):
            for m in members:
                if m.name == name:
                    buf = bytearray()
                    m.drain(buf.extend)
                    return bytes(buf)
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
        members = iter_members(self.path, self.max_decompressed)
        with contextlib.closing(members):
            return [_extract_one(root, m) for m in members]


def _extract_one(root: Path, m: Member) -> Path:
    parts = m.name.split("/")
    parent = root
    for part in parts[:-1]:
        parent = parent / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o700)
        if parent.is_symlink() or not parent.is_dir():
            raise BadInputError(f"cannot extract {m.name!r}: {parent} is not a directory")
    target = parent / parts[-1]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        raise BadInputError(f"cannot extract {m.name!r}: {target} already exists") from None
    with os.fdopen(fd, "wb") as out:
        m.drain(out.write)
    return target


def open_bundle(path: Path, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> BundleReader:
    """Open and scan ``path``; raises BadInputError on anything that is not a sound bundle.

    Checksum problems do not raise here: :meth:`BundleReader.verify` lists them all.
    """
    return BundleReader(Path(path), max_decompressed)


def validate_bundle(
    src: Source, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED, *,
    max_manifest: int = MAX_MANIFEST,
    sinks: Mapping[str, Callable[[bytes], object]] | None = None,
) -> dict[str, Any]:
    """Check a received bundle end to end in one pass and return its manifest.

    Raises BadInputError at the first problem: unsafe, corrupt, not listed in or not matching
    the manifest; BundleTooLarge (a BadInputError) when it inflates beyond
    ``max_decompressed``, refused before the excess is inflated; a manifest over
    ``max_manifest`` bytes is refused before it is read. ``sinks`` (by member name) also get
    those members' bytes as they are checked (the receiver keeps tails for the signature).
    """
    manifest, _summary, _found = _scan(src, max_decompressed, fail_fast=True,
                                       max_manifest=max_manifest, sinks=sinks)
    return manifest
