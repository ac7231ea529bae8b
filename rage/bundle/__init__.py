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

The submodules import zstandard only when a bundle is actually read or written.
"""

from __future__ import annotations

from rage.bundle.capped import CappedMember, iter_capped, read_members
from rage.bundle.names import MANIFEST, SUMMARY, check_member_name, normalize_member_name
from rage.bundle.read import (
    SCHEMA,
    BundleReader,
    open_bundle,
    parse_manifest,
    peek_manifest,
    problems,
    validate_bundle,
)
from rage.bundle.stream import DEFAULT_MAX_DECOMPRESSED, BundleTooLarge, MemberInfo
from rage.bundle.write import sha256_of, write_bundle, write_bundle_to

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
