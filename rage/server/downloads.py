"""One member of a stored bundle, streamed as a download (``/b/<id>/files/<name>``)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import IO, Any
from urllib.parse import quote

from rage.bundle.stream import iter_members
from rage.errors import NotFoundError
from rage.server.storage import Storage


def open_member(storage: Storage, bundle_id: str, name: str,
                max_decompressed: int) -> tuple[int, Iterator[bytes]]:
    """The member's size and an iterator over its bytes; NotFoundError if it is not there.

    The archive is read up to the member, then streamed; the iterator closes the file.
    """
    f = storage.open(bundle_id)
    members = iter_members(f, max_decompressed)
    try:
        for m in members:
            if m.name == name:
                return m.size, _stream(m, members, f)
        raise NotFoundError(f"no file {name!r} in this bundle")
    except BaseException:
        members.close()
        f.close()
        raise


def content_type(name: str) -> str:
    """The Content-Type a bundle member is served with."""
    if name.endswith((".log", ".txt", ".md", ".json", ".jsonl")):
        return "text/plain; charset=utf-8"  # shown as text, never run as a page (nosniff)
    return "application/octet-stream"


def attachment(name: str) -> str:
    """Content-Disposition for a download named after the member (ASCII and RFC 5987)."""
    base = name.rsplit("/", 1)[-1]
    plain = re.sub(r"[^A-Za-z0-9._-]", "_", base) or "file"
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(base, safe='')}"


def _stream(m: Any, members: Any, f: IO[bytes]) -> Iterator[bytes]:
    with contextlib.closing(members), f:
        while chunk := m.read(256 * 1024):
            yield chunk
