"""A small streaming ``multipart/form-data`` reader: one file field to a file, in chunks.

The stdlib ``cgi`` module is gone (3.13) and the ``email`` parser holds the whole body in
memory; a bundle can be 64 MiB, so the file part is copied chunk by chunk, keeping back only
as many bytes as the boundary delimiter could span across two reads.
"""

from __future__ import annotations

import re
from typing import IO, Protocol

from rage.errors import BadInputError

_CHUNK = 256 * 1024
_HEADERS_MAX = 16 * 1024
_NAME_RE = re.compile(r'(?:^|;)\s*name="([^"]*)"|(?:^|;)\s*name=([^;\s]+)', re.IGNORECASE)


class Sink(Protocol):
    """Where a copied part goes: a binary file, or anything with its ``write``."""

    def write(self, data: bytes, /) -> object: ...


class PartTooLarge(BadInputError):
    """The file part is larger than the limit."""


def boundary_of(content_type: str) -> str:
    """The boundary parameter of a ``multipart/form-data`` Content-Type."""
    m = re.search(r'boundary=(?:"([^"]+)"|([^;\s]+))', content_type, re.IGNORECASE)
    if not m:
        raise BadInputError("multipart body without a boundary")
    b = m.group(1) or m.group(2)
    if len(b) > 200:
        raise BadInputError("multipart boundary too long")
    return b


class _Reader:
    def __init__(self, stream: IO[bytes], remaining: int | None) -> None:
        self._stream = stream
        self._remaining = remaining
        self.buf = b""
        self.eof = False

    def fill(self) -> bool:
        """Read one more chunk into ``buf``; False at the end of the body."""
        if self.eof:
            return False
        n = _CHUNK if self._remaining is None else min(_CHUNK, self._remaining)
        data = self._stream.read(n) if n > 0 else b""
        if self._remaining is not None:
            self._remaining -= len(data)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True


def copy_file_field(
    stream: IO[bytes], content_type: str, field: str, out: Sink, *,
    limit: int, content_length: int | None = None,
) -> int:
    """Copy the part named ``field`` of a multipart body to ``out``; return its size.

    Raises :class:`BadInputError` when the body is malformed or has no such field, and
    :class:`PartTooLarge` as soon as the part exceeds ``limit`` bytes.
    """
    boundary = boundary_of(content_type).encode("latin-1")
    r = _Reader(stream, content_length)
    first = b"--" + boundary
    delim = b"\r\n--" + boundary
    # preamble: find the first boundary line
    while (i := r.buf.find(first)) < 0:
        if len(r.buf) > _HEADERS_MAX or not r.fill():
            raise BadInputError("malformed multipart body: no boundary")
    r.buf = r.buf[i + len(first):]
    while True:
        while len(r.buf) < 2 and r.fill():
            pass
        if r.buf.startswith(b"--"):
            break  # closing boundary: no more parts
        while (h := r.buf.find(b"\r\n\r\n")) < 0:
            if len(r.buf) > _HEADERS_MAX or not r.fill():
                raise BadInputError("malformed multipart body: bad part headers")
        headers = r.buf[:h].decode("latin-1")
        r.buf = r.buf[h + 4:]
        wanted = _part_name(headers) == field
        size = 0
        while True:
            j = r.buf.find(delim)
            if j >= 0:
                body, r.buf = r.buf[:j], r.buf[j + len(delim):]
            else:
                keep = len(delim) - 1  # the delimiter may straddle two reads
                body, r.buf = r.buf[: max(len(r.buf) - keep, 0)], r.buf[max(len(r.buf) - keep, 0):]
            if wanted and body:
                size += len(body)
                if size > limit:
                    raise PartTooLarge(f"bundle is larger than the {limit}-byte limit")
                out.write(body)
            if j >= 0:
                break
            if not r.fill():
                raise BadInputError("malformed multipart body: truncated part")
        if wanted:
            return size
    raise BadInputError(f"multipart body has no {field!r} field (use -F {field}=@bundle.tar.zst)")


def _part_name(headers: str) -> str | None:
    for line in headers.split("\r\n"):
        key, _, value = line.partition(":")
        if key.strip().lower() == "content-disposition":
            m = _NAME_RE.search(value)
            if m:
                return m.group(1) if m.group(1) is not None else m.group(2)
    return None
