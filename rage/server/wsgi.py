"""Plain WSGI plumbing for the receiver: errors, headers, request bodies, streamed files.

Kept apart from :mod:`rage.server.app` (the routes) so the routes read as what the receiver
does; nothing here knows about bundles.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any
from urllib.parse import parse_qs

from rage.server.limits import loggable
from rage.server.multipart import PartTooLarge, Sink
from rage.server.templating import csp

Environ = dict[str, Any]

__all__ = ["loggable"]


class HTTPError(Exception):
    """An answer other than success: a status, a one-line message, extra headers."""

    def __init__(self, status: int, message: str, *, headers: Iterable[tuple[str, str]] = ()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


REASONS = {200: "OK", 201: "Created", 204: "No Content", 303: "See Other",
           400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 411: "Length Required", 413: "Content Too Large",
           429: "Too Many Requests", 500: "Internal Server Error",
           503: "Service Unavailable", 507: "Insufficient Storage"}


def security_headers(nonce: str | None) -> list[tuple[str, str]]:
    policy = csp(nonce) if nonce else "default-src 'none'; frame-ancestors 'none'"
    return [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
            ("Content-Security-Policy", policy), ("X-Frame-Options", "DENY")]


def not_allowed(allow: str) -> HTTPError:
    return HTTPError(405, "method not allowed", headers=[("Allow", allow)])


def bearer(environ: Environ) -> str | None:
    auth = environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = auth.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def query(environ: Environ, key: str) -> str | None:
    values = parse_qs(environ.get("QUERY_STRING", "")).get(key)
    return values[0] if values else None


def form(environ: Environ) -> dict[str, str]:
    """A small urlencoded form body, first value of each field."""
    length = content_length(environ) or 0
    if length > 64 * 1024:
        raise HTTPError(413, "form too large")
    body = environ["wsgi.input"].read(length).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body).items()}


def content_length(environ: Environ) -> int | None:
    raw = environ.get("CONTENT_LENGTH")
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        raise HTTPError(400, "bad Content-Length") from None
    if n < 0:
        raise HTTPError(400, "bad Content-Length")
    return n


def copy_raw(stream: IO[bytes], out: Sink, limit: int, length: int | None) -> int:
    size = 0
    while True:
        want = 256 * 1024 if length is None else min(256 * 1024, length - size)
        chunk = stream.read(want) if want > 0 else b""
        if not chunk:
            return size
        size += len(chunk)
        if size > limit:
            raise PartTooLarge(f"bundle is larger than the {limit}-byte limit")
        out.write(chunk)


class HashingWriter:
    """Writes through to ``out``, feeding the sha256 of everything written."""

    __slots__ = ("_h", "_out")

    def __init__(self, out: IO[bytes]) -> None:
        import hashlib

        self._out = out
        self._h = hashlib.sha256()

    def write(self, data: bytes, /) -> int:
        self._h.update(data)
        return self._out.write(data)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def iter_file(f: IO[bytes]) -> Iterator[bytes]:
    with f:
        while chunk := f.read(256 * 1024):
            yield chunk
