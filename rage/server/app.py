"""The receiver as a plain WSGI application: routing, uploads, auth, responses.

Routes::

    GET  /                       landing page (how to upload)
    POST /                       multipart field `file` (curl -F) -> text/plain link
    PUT  /<any name>             raw body (curl -T) -> text/plain link
    POST /api/v1/bundles         raw body or multipart `file` -> 201 JSON
    GET  /api/v1/bundles/<id>    JSON: manifest + links
    DELETE /api/v1/bundles/<id>  deletion token as Bearer or ?token=
    GET  /b/<id>                 the bundle's HTML page;  GET /b/<id>.tar.zst  raw bundle
    GET|POST|DELETE /b/<id>/delete   confirmation form / deletion (the delete_url)
    GET  /admin                  recent bundles (admin token; off when none configured)
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs

from rage.bundle import BundleTooLarge, read_members, validate_bundle
from rage.errors import BadInputError, NotFoundError
from rage.server import pages
from rage.server.limits import MAX_MANIFEST_BYTES, tame_manifest
from rage.server.multipart import PartTooLarge, Sink, copy_file_field
from rage.server.storage import Storage, StoredBundle, new_id, token_hash

MiB = 1024 * 1024
MULTIPART_SLACK = 64 * 1024  # headers and boundaries around the file part
log = logging.getLogger("rage.server")

StartResponse = Callable[..., Any]
Environ = dict[str, Any]


@dataclass(frozen=True)
class ServerConfig:
    """What `rage serve` was told; ``public_url`` overrides the Host header in links."""

    max_bundle_size: int = 64 * MiB
    max_decompressed: int = 512 * MiB
    public_url: str | None = None
    upload_token: str | None = None
    admin_token: str | None = None
    display_cap: int = 2 * MiB  # bytes of each member shown on a page (the end is kept)
    max_manifest: int = MAX_MANIFEST_BYTES


class HTTPError(Exception):
    def __init__(self, status: int, message: str, *, headers: Iterable[tuple[str, str]] = ()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = list(headers)


_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            411: "Length Required", 413: "Content Too Large", 500: "Internal Server Error"}
_ID = r"(?P<id>[A-Za-z0-9_-]{22,64})"
_ROUTES = [
    (re.compile(r"^/api/v1/bundles/?$"), "api_bundles"),
    (re.compile(rf"^/api/v1/bundles/{_ID}$"), "api_bundle"),
    (re.compile(rf"^/b/{_ID}\.tar\.zst$"), "raw"),
    (re.compile(rf"^/b/{_ID}/delete$"), "delete_page"),
    (re.compile(rf"^/b/{_ID}/?$"), "page"),
    (re.compile(r"^/admin/?$"), "admin"),
    (re.compile(r"^/$"), "root"),
    (re.compile(r"^/favicon\.ico$"), "favicon"),
    (re.compile(r"^/[^/]+$"), "put_name"),
]


class ReceiverApp:
    """WSGI callable; thread-safe (all state is in ``storage``)."""

    def __init__(self, storage: Storage, config: ServerConfig) -> None:
        self.storage = storage
        self.config = config

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        method = environ.get("REQUEST_METHOD", "GET").upper()
        nonce = secrets.token_urlsafe(16)
        try:
            for rx, name in _ROUTES:
                m = rx.match(path)
                if m:
                    handler = getattr(self, "do_" + name)
                    return handler(environ, start_response, method, nonce, **m.groupdict())  # type: ignore[no-any-return]
            raise HTTPError(404, "not found")
        except HTTPError as e:
            return self._json(start_response, e.status, {"error": e.message}, e.headers)
        except NotFoundError as e:
            return self._json(start_response, 404, {"error": e.message})

    # -- responses ---------------------------------------------------------------------------

    def _respond(self, start_response: StartResponse, status: int, body: bytes, ctype: str, *,
                 headers: Iterable[tuple[str, str]] = (), nonce: str | None = None,
                 ) -> list[bytes]:
        hdrs = [("Content-Type", ctype), ("Content-Length", str(len(body)))]
        hdrs += _security_headers(nonce)
        hdrs += list(headers)
        start_response(f"{status} {_REASONS.get(status, '')}".strip(), hdrs)
        return [body]

    def _json(self, start_response: StartResponse, status: int, obj: Any,
              headers: Iterable[tuple[str, str]] = ()) -> list[bytes]:
        body = (json.dumps(obj) + "\n").encode()
        return self._respond(start_response, status, body, "application/json", headers=headers)

    def _html(self, start_response: StartResponse, status: int, text: str, nonce: str,
              headers: Iterable[tuple[str, str]] = ()) -> list[bytes]:
        # "replace": a lone surrogate that slipped through must cost a "?", not a 500
        return self._respond(start_response, status, text.encode("utf-8", "replace"),
                             "text/html; charset=utf-8", headers=headers, nonce=nonce)

    def base_url(self, environ: Environ) -> str:
        if self.config.public_url:
            return self.config.public_url.rstrip("/")
        host = environ.get("HTTP_HOST") or (
            f"{environ.get('SERVER_NAME', 'localhost')}:{environ.get('SERVER_PORT', '80')}")
        return f"{environ.get('wsgi.url_scheme', 'http')}://{host}"

    # -- uploads -----------------------------------------------------------------------------

    def _receive(self, environ: Environ) -> tuple[StoredBundle, str]:
        """Read, validate and store the upload; returns its metadata and deletion token."""
        if self.config.upload_token and not _token_ok(
                _bearer(environ), self.config.upload_token):
            raise HTTPError(401, "upload token required (Authorization: Bearer <token>)",
                            headers=[("WWW-Authenticate", "Bearer")])
        ctype = environ.get("CONTENT_TYPE", "")
        multipart = ctype.lower().startswith("multipart/form-data")
        limit = self.config.max_bundle_size
        length = _content_length(environ)
        if length is not None and length > limit + (MULTIPART_SLACK if multipart else 0):
            raise HTTPError(413, f"bundle is larger than the {limit}-byte limit")
        fd, name = tempfile.mkstemp(prefix="upload-", suffix=".part",
                                    dir=self.storage.tmp_dir())
        tmp = Path(name)
        try:
            with os.fdopen(fd, "w+b") as f:
                # hashed on the way in, validated from the same open file: the upload is
                # written once and read back once, never read a third time for its sha256
                out = _HashingWriter(f)
                if multipart:
                    size = copy_file_field(environ["wsgi.input"], ctype, "file", out,
                                           limit=limit, content_length=length)
                else:
                    size = _copy_raw(environ["wsgi.input"], out, limit, length)
                if size == 0:
                    raise HTTPError(400, "empty upload: send a .tar.zst bundle")
                f.flush()
                f.seek(0)
                manifest = tame_manifest(validate_bundle(
                    f, self.config.max_decompressed, max_manifest=self.config.max_manifest))
            token = secrets.token_urlsafe(24)
            meta = StoredBundle(
                id=new_id(), created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                size=size, sha256=out.hexdigest(), delete_token_hash=token_hash(token),
                manifest=manifest)
            self.storage.put(tmp, meta)
        except (PartTooLarge, BundleTooLarge) as e:
            log.info("refused upload: %s", loggable(e.message))
            raise HTTPError(413, e.message) from None
        except BadInputError as e:
            log.info("refused upload: %s", loggable(e.message))
            raise HTTPError(400, e.message) from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        log.info("stored bundle %s (%d bytes)", meta.id, size)
        return meta, token

    def _links(self, environ: Environ, bundle_id: str) -> dict[str, str]:
        base = self.base_url(environ)
        return {"url": f"{base}/b/{bundle_id}", "raw_url": f"{base}/b/{bundle_id}.tar.zst"}

    def do_root(self, environ: Environ, sr: StartResponse, method: str, nonce: str) -> list[bytes]:
        if method in ("GET", "HEAD"):
            page = pages.landing_page(self.base_url(environ), nonce,
                                      token_required=bool(self.config.upload_token))
            return self._html(sr, 200, page, nonce)
        if method in ("POST", "PUT"):
            return self._text_upload(environ, sr)
        raise _not_allowed("GET, POST, PUT")

    def do_favicon(self, environ: Environ, sr: StartResponse, method: str,
                   nonce: str) -> list[bytes]:
        # browsers ask for it on every page; an empty answer keeps their consoles clean
        if method == "PUT":
            return self._text_upload(environ, sr)
        return self._respond(sr, 204, b"", "image/x-icon",
                             headers=[("Cache-Control", "max-age=86400")])

    def do_put_name(self, environ: Environ, sr: StartResponse, method: str,
                    nonce: str) -> list[bytes]:
        if method != "PUT":
            raise HTTPError(404, "not found")
        return self._text_upload(environ, sr)

    def _text_upload(self, environ: Environ, sr: StartResponse) -> list[bytes]:
        meta, _ = self._receive(environ)
        url = self._links(environ, meta.id)["url"]
        return self._respond(sr, 201, (url + "\n").encode(), "text/plain; charset=utf-8",
                             headers=[("Location", url)])

    def do_api_bundles(self, environ: Environ, sr: StartResponse, method: str,
                       nonce: str) -> list[bytes]:
        if method != "POST":
            raise _not_allowed("POST")
        meta, token = self._receive(environ)
        links = self._links(environ, meta.id)
        body = {"id": meta.id, **links,
                "delete_url": f"{links['url']}/delete?token={token}", "delete_token": token}
        return self._json(sr, 201, body, [("Location", links["url"])])

    # -- reading and deleting ----------------------------------------------------------------

    def do_api_bundle(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
                      id: str) -> list[bytes]:
        if method == "DELETE":
            self._delete(environ, id, _bearer(environ) or _query(environ, "token"))
            return self._json(sr, 200, {"deleted": id})
        if method not in ("GET", "HEAD"):
            raise _not_allowed("GET, DELETE")
        meta = self.storage.get_meta(id)
        return self._json(sr, 200, {"id": meta.id, "created_at": meta.created_at,
                                    "size": meta.size, "sha256": meta.sha256,
                                    **self._links(environ, id), "manifest": meta.manifest})

    def _delete(self, environ: Environ, bundle_id: str, token: str | None) -> None:
        meta = self.storage.get_meta(bundle_id)
        if not token:
            raise HTTPError(401, "deletion token required", headers=[("WWW-Authenticate",
                                                                       "Bearer")])
        if not hmac.compare_digest(token_hash(token), meta.delete_token_hash):
            raise HTTPError(403, "wrong deletion token")
        self.storage.delete(bundle_id)
        log.info("deleted bundle %s", bundle_id)

    def do_delete_page(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
                       id: str) -> list[bytes]:
        if method == "GET":
            self.storage.get_meta(id)
            form = pages.delete_form(f"/b/{id}/delete", _query(environ, "token") or "", nonce)
            return self._html(sr, 200, form, nonce, [("Cache-Control", "no-store")])
        if method == "POST":
            token = _form_field(environ, "token") or _query(environ, "token")
            self._delete(environ, id, token)
            return self._html(sr, 200, pages.message_page(
                "Deleted", "The bundle and its page are gone.", nonce), nonce)
        if method == "DELETE":
            self._delete(environ, id, _bearer(environ) or _query(environ, "token"))
            return self._json(sr, 200, {"deleted": id})
        raise _not_allowed("GET, POST, DELETE")

    def do_page(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
                id: str) -> list[bytes]:
        if method not in ("GET", "HEAD"):
            raise _not_allowed("GET")
        meta = self.storage.get_meta(id)
        with self.storage.open(id) as f:
            members = read_members(f, max_decompressed=self.config.max_decompressed,
                                   cap=self.config.display_cap)
        links = self._links(environ, id)
        page = pages.bundle_page(meta, members, pages.Links(links["url"], links["raw_url"]),
                                 nonce)
        return self._html(sr, 200, page, nonce)

    def do_raw(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
               id: str) -> Iterable[bytes]:
        if method not in ("GET", "HEAD"):
            raise _not_allowed("GET")
        meta = self.storage.get_meta(id)
        f = self.storage.open(id)
        headers = [("Content-Type", "application/zstd"), ("Content-Length", str(meta.size)),
                   ("Content-Disposition", f'attachment; filename="{id}.tar.zst"'),
                   *_security_headers(None)]
        sr("200 OK", headers)
        wrapper = environ.get("wsgi.file_wrapper")
        if wrapper is not None:
            return wrapper(f, 256 * 1024)  # type: ignore[no-any-return]
        return _iter_file(f)

    def do_admin(self, environ: Environ, sr: StartResponse, method: str,
                 nonce: str) -> list[bytes]:
        if not self.config.admin_token:
            raise HTTPError(404, "the admin index is disabled (start with --admin-token)")
        token = _bearer(environ) or _query(environ, "token")
        if not token:
            raise HTTPError(401, "admin token required", headers=[("WWW-Authenticate",
                                                                    "Bearer")])
        if not _token_ok(token, self.config.admin_token):
            raise HTTPError(403, "wrong admin token")
        page = pages.admin_page(self.storage.list_recent(200), self.base_url(environ), nonce)
        return self._html(sr, 200, page, nonce, [("Cache-Control", "no-store")])


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def loggable(text: str, limit: int = 500) -> str:
    """``text`` for one log line: control characters escaped (an upload cannot forge a line or
    drive the operator's terminal) and long texts cut."""
    text = _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], text)
    return text if len(text) <= limit else text[:limit] + "..."


def _security_headers(nonce: str | None) -> list[tuple[str, str]]:
    policy = pages.csp(nonce) if nonce else "default-src 'none'; frame-ancestors 'none'"
    return [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
            ("Content-Security-Policy", policy), ("X-Frame-Options", "DENY")]


def _not_allowed(allow: str) -> HTTPError:
    return HTTPError(405, "method not allowed", headers=[("Allow", allow)])


def _token_ok(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _bearer(environ: Environ) -> str | None:
    auth = environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = auth.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def _query(environ: Environ, key: str) -> str | None:
    values = parse_qs(environ.get("QUERY_STRING", "")).get(key)
    return values[0] if values else None


def _form_field(environ: Environ, key: str) -> str | None:
    length = _content_length(environ) or 0
    if length > 64 * 1024:
        raise HTTPError(413, "form too large")
    body = environ["wsgi.input"].read(length).decode("utf-8", "replace")
    values = parse_qs(body).get(key)
    return values[0] if values else None


def _content_length(environ: Environ) -> int | None:
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


def _copy_raw(stream: IO[bytes], out: Sink, limit: int, length: int | None) -> int:
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


class _HashingWriter:
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


def _iter_file(f: IO[bytes]) -> Iterator[bytes]:
    with f:
        while chunk := f.read(256 * 1024):
            yield chunk
