"""``multipart/form-data`` uploads (``curl -F file=@...``): one file field to a file, streamed.

Parsing is the ``multipart`` library's (``PushMultipartParser``: incremental, pure Python,
bounded header sizes and counts); this module feeds it the body in chunks, keeps the part
named ``field`` and turns the library's errors into rage's one-line ones. The stdlib ``cgi``
module is gone (3.13) and the ``email`` parser holds a whole body in memory; a bundle can be
64 MiB.
"""

from __future__ import annotations

from typing import IO, Protocol

from rage.errors import BadInputError

_CHUNK = 256 * 1024
_MAX_PARTS = 16  # a form carries one file and perhaps a few small fields


class Sink(Protocol):
    """Where a copied part goes: a binary file, or anything with its ``write``."""

    def write(self, data: bytes, /) -> object: ...


class PartTooLarge(BadInputError):
    """The file part is larger than the limit."""


def boundary_of(content_type: str) -> str:
    """The boundary parameter of a ``multipart/form-data`` Content-Type."""
    import multipart

    _ctype, options = multipart.parse_options_header(content_type)
    boundary = str(options.get("boundary", ""))
    if not boundary:
        raise BadInputError("multipart body without a boundary")
    if len(boundary) > 200:
        raise BadInputError("multipart boundary too long")
    return boundary


def copy_file_field(
    stream: IO[bytes], content_type: str, field: str, out: Sink, *,
    limit: int, content_length: int | None = None,
) -> int:
    """Copy the part named ``field`` of a multipart body to ``out``; return its size.

    Raises :class:`BadInputError` when the body is malformed or has no such field, and
    :class:`PartTooLarge` as soon as the part exceeds ``limit`` bytes.
    """
    import multipart

    boundary = boundary_of(content_type)
    remaining = content_length
    size = 0
    found = wanted = False
    try:
        with multipart.PushMultipartParser(
                boundary, -1 if content_length is None else content_length,
                max_segment_count=_MAX_PARTS) as parser:
            while not parser.closed:
                n = _CHUNK if remaining is None else min(_CHUNK, remaining)
                chunk = stream.read(n) if n > 0 else b""
                if remaining is not None:
                    remaining -= len(chunk)
                for event in parser.parse(chunk):
                    if isinstance(event, multipart.MultipartSegment):
                        wanted = not found and event.name == field
                        found = found or wanted
                    elif event is None:
                        wanted = False
                    elif wanted:
                        size += len(event)
                        if size > limit:
                            raise PartTooLarge(f"bundle is larger than the {limit}-byte limit")
                        out.write(event)
                if not chunk and not parser.closed:
                    raise BadInputError("malformed multipart body: truncated")
    except multipart.ParserLimitReached as e:
        raise BadInputError(f"malformed multipart body: {e}") from None
    except multipart.ParserError as e:
        reason = "truncated" if "unexpected end" in str(e).lower() else str(e)
        raise BadInputError(f"malformed multipart body: {reason}") from None
    if not found:
        raise BadInputError(
            f"multipart body has no {field!r} field (use -F {field}=@bundle.tar.zst)")
    return size
