"""Bundles: one ``.tar.zst`` file per report, written manifest first, read defensively.

Layout, in this order so a reader can stop early::

    manifest.json            schema, run metadata, sizes and sha256 of every other member
    summary.md               what a maintainer reads first
    run/...                  the run's files (redacted)
    collectors/<name>.json   what each collector found (redacted)

This package is rage's only reader and writer of the format: ``write`` streams a bundle out,
``stream`` is the single hostile-input reader every other read goes through, ``read`` checks
a bundle against its manifest and extracts it, ``capped`` reads selected members capped to
their head or tail (the receiver's page, the gist uploader). Any problem is a one-line
:class:`~rage.errors.BadInputError`; a bundle that inflates too far is its subclass
:class:`BundleTooLarge`.

The submodules import zstandard only when a bundle is actually read or written, and the
reader's modules load on first use of one of their names: writing a bundle needs none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# writing a bundle (every report) needs only names and write; the reader (tar streams,
# hashing, the hostile-input checks) is loaded by __getattr__ when a name of it is used
from rage.bundle.names import (
    MANIFEST,
    SCHEMA,
    SUMMARY,
    check_member_name,
    normalize_member_name,
)
from rage.bundle.write import sha256_of, write_bundle, write_bundle_to

if TYPE_CHECKING:
    from rage.bundle.capped import CappedMember as CappedMember
    from rage.bundle.capped import iter_capped as iter_capped
    from rage.bundle.capped import read_members as read_members
    from rage.bundle.read import BundleReader as BundleReader
    from rage.bundle.read import open_bundle as open_bundle
    from rage.bundle.read import parse_manifest as parse_manifest
    from rage.bundle.read import peek_manifest as peek_manifest
    from rage.bundle.read import problems as problems
    from rage.bundle.read import validate_bundle as validate_bundle
    from rage.bundle.stream import DEFAULT_MAX_DECOMPRESSED as DEFAULT_MAX_DECOMPRESSED
    from rage.bundle.stream import BundleTooLarge as BundleTooLarge
    from rage.bundle.stream import MemberInfo as MemberInfo

_HOME = {
    "CappedMember": "capped", "iter_capped": "capped", "read_members": "capped",
    "BundleReader": "read", "open_bundle": "read", "parse_manifest": "read",
    "peek_manifest": "read", "problems": "read", "validate_bundle": "read",
    "DEFAULT_MAX_DECOMPRESSED": "stream", "BundleTooLarge": "stream", "MemberInfo": "stream",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'rage.bundle' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"rage.bundle.{home}"), name)


__all__ = [
    "DEFAULT_MAX_DECOMPRESSED",
    "MANIFEST",
    "SCHEMA",
    "SUMMARY",
    "BundleReader",
    "BundleTooLarge",
    "CappedMember",
    "MemberInfo",
    "check_member_name",
    "iter_capped",
    "normalize_member_name",
    "open_bundle",
    "parse_manifest",
    "peek_manifest",
    "problems",
    "read_members",
    "sha256_of",
    "validate_bundle",
    "write_bundle",
    "write_bundle_to",
]
