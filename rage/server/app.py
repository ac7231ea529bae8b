"""The receiver as a plain WSGI application: routing, uploads, auth, responses.

Routes::

    GET  /                       landing page (how to upload)
    POST /                       multipart field `file` (curl -F) -> text/plain link
    PUT  /<any name>             raw body (curl -T) -> text/plain link
    POST /api/v1/bundles         raw body or multipart `file` -> 201 JSON
    GET  /api/v1/bundles/<id>    JSON: manifest + links
    DELETE /api/v1/bundles/<id>  deletion token as Bearer or ?token=
    GET  /b/<id>                 the bundle's HTML page;  GET /b/<id>.tar.zst  raw bundle
    GET  /b/<id>/files/<member>  one member of the bundle, as a download
    GET|POST|DELETE /b/<id>/delete   confirmation form / deletion (the delete_url)
    GET  /admin                  recent bundles (admin token; off when none configured)
    GET|POST /admin/login, POST /admin/logout   the maintainer's session cookie

Errors are JSON, except for a browser (``Accept: text/html``) outside ``/api/``: an HTML page.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import logging
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rage.bundle import BundleTooLarge, read_members, validate_bundle
from rage.bundle.stream import CHUNK
from rage.errors import BadInputError, NotFoundError
from rage.server import auth, bundle_page, diskfull, downloads, idempotency, pages
from rage.server.cache import MemberCache
from rage.server.limits import (
    MAX_MANIFEST_BYTES,
    check_names,
    json_body,
    loggable,
    tame_manifest,
)
from rage.server.multipart import PartTooLarge, copy_file_field
from rage.server.storage import Storage, StoredBundle, new_id, token_hash
from rage.server.wsgi import (
    REASONS,
    HashingWriter,
    HTTPError,
    bearer,
    content_length,
    copy_raw,
    form,
    iter_file,
    not_allowed,
    query,
    security_headers,
)

if TYPE_CHECKING:
    from rage.server.triage import Tails, Triage

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
    display_cap: int = 256 * 1024  # bytes of each member read for a page (the end is kept)
    max_manifest: int = MAX_MANIFEST_BYTES


_ID = r"(?P<id>[A-Za-z0-9_-]{22,64})"
KNOWN_PREFIX = 5  # hex digits of a signature's hash a client asks about (1 in ~1M hashes)
_ROUTES = [
    (re.compile(r"^/api/v1/bundles/?$"), "api_bundles"),
    (re.compile(rf"^/api/v1/bundles/{_ID}$"), "api_bundle"),
    (re.compile(rf"^/api/v1/known/(?P<prefix>[0-9a-f]{{{KNOWN_PREFIX}}})$"), "known"),
    (re.compile(rf"^/b/{_ID}\.tar\.zst$"), "raw"),
    (re.compile(rf"^/b/{_ID}/delete$"), "delete_page"),
    (re.compile(rf"^/b/{_ID}/files/(?P<name>.+)$"), "member"),
    (re.compile(r"^/admin/login$"), "login"),
    (re.compile(r"^/admin/logout$"), "logout"),
    (re.compile(rf"^/b/{_ID}/?$"), "page"),
    (re.compile(r"^/admin/?$"), "admin"),
    (re.compile(r"^/$"), "root"),
    (re.compile(r"^/favicon\.ico$"), "favicon"),
    (re.compile(r"^/healthz$"), "healthz"),
    (re.compile(r"^/readyz$"), "readyz"),
    (re.compile(r"^/[^/]+$"), "put_name"),
]


class ReceiverApp:
    """WSGI callable; thread-safe (state is in ``storage``; the sessions, login throttle and
    page cache lock themselves)."""

    def __init__(self, storage: Storage, config: ServerConfig,
                 triage: Triage | None = None) -> None:
        self.storage = storage
        self.config = config
        self.triage = triage  # the signature index and its pages (rage.server.triage)
        self.sessions = auth.Sessions(config.admin_token)
        self.login_throttle = auth.Throttle()
        self.known_throttle = auth.Throttle(limit=30)  # "is it known?" queries a minute
        self.bearer_throttle = auth.Throttle(limit=20)
        self.page_members = MemberCache()
        self.streams = downloads.Streams()  # member downloads in flight
        self.listings = downloads.Listings()  # where members are in stored bundles
        self.disk = diskfull.Fullness(storage.tmp_dir())

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        method = environ.get("REQUEST_METHOD", "GET").upper()
        nonce = secrets.token_urlsafe(16)
        try:
            if self.triage is not None and (r := self.triage.route(
                    environ, method, path, nonce, self.base_url(environ),
                    require_admin=self.require_admin)) is not None:
                return self._respond(start_response, r.status, r.body, r.ctype,
                                     headers=r.headers, nonce=nonce if r.html else None)
            for rx, name in _ROUTES:
                m = rx.match(path)
                if m:
                    handler = getattr(self, "do_" + name)
                    return handler(environ, start_response, method, nonce, **m.groupdict())  # type: ignore[no-any-return]
            raise HTTPError(404, "not found")
        except HTTPError as e:
            return self._error(environ, start_response, e.status, e.message,
                               headers=e.headers, nonce=nonce)
        except NotFoundError as e:
            return self._error(environ, start_response, 404, e.message, nonce=nonce)
        except OSError as e:
            if not diskfull.is_full(e):
                raise
            # a page's or the index's write, or anything else that found the disk full
            log.warning("storage full at %s: %s", loggable(path, 200), e.strerror)
            return self._error(environ, start_response, 507,
                               "the receiver's storage is full: try again later", nonce=nonce)
        except BadInputError as e:
            # uploads turn theirs into 4xx: this is a stored bundle that a newer rule refuses
            # (one stored before the rule), read for a page or a download
            log.warning("stored bundle unreadable at %s: %s", loggable(path, 200),
                        loggable(e.message))
            return self._error(environ, start_response, 500,
                               f"this bundle cannot be read: {e.message}", nonce=nonce)

    def _error(self, environ: Environ, sr: StartResponse, status: int, message: str, *,
               headers: Iterable[tuple[str, str]] = (), nonce: str) -> list[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if auth.wants_html(environ) and not path.startswith("/api/"):
            return self._html(sr, status, pages.error_page(status, message, nonce), nonce,
                              [h for h in headers if h[0] != "WWW-Authenticate"])
        return self._json(sr, status, {"error": message}, headers)

    # -- responses ---------------------------------------------------------------------------

    def _respond(self, start_response: StartResponse, status: int, body: bytes, ctype: str, *,
                 headers: Iterable[tuple[str, str]] = (), nonce: str | None = None,
                 ) -> list[bytes]:
        hdrs = [("Content-Type", ctype), ("Content-Length", str(len(body)))]
        hdrs += security_headers(nonce)
        hdrs += list(headers)
        start_response(f"{status} {REASONS.get(status, '')}".strip(), hdrs)
        return [body]

    def _json(self, start_response: StartResponse, status: int, obj: Any,
              headers: Iterable[tuple[str, str]] = ()) -> list[bytes]:
        return self._respond(start_response, status, json_body(obj), "application/json",
                             headers=headers)

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
        """Read, validate and store the upload, then index it; returns its metadata and
        deletion token."""
        if self.config.upload_token and not auth.token_ok(
                bearer(environ), self.config.upload_token):
            raise HTTPError(401, "upload token required (Authorization: Bearer <token>)",
                            headers=[("WWW-Authenticate", "Bearer")])
        try:
            key = idempotency.key_of(environ)
        except idempotency.BadKey as e:
            raise HTTPError(400, str(e)) from None
        try:
            if self.triage is None:
                return self._store_upload(environ, key, None)
            with self.triage.receiving() as tails:  # announced to the index's group commit
                meta, token = self._store_upload(environ, key, tails)
                # after the bundle is stored: the index row comes last (never raises)
                self.triage.on_stored(self.storage, meta, environ, self.base_url(environ),
                                      tails)
            return meta, token
        except OSError as e:
            if not diskfull.is_full(e):
                raise
            self.disk.failed(content_length(environ) or 0)
            log.warning("refused upload: the storage is full (%s)", e.strerror)
            raise HTTPError(507, "the receiver's storage is full: the bundle was not stored; "
                                 "try again later") from None

    def _store_upload(self, environ: Environ, key: str | None,
                      tails: Tails | None) -> tuple[StoredBundle, str]:
        """Read, validate and store the upload (``tails`` keeps what the signature reads)."""
        ctype = environ.get("CONTENT_TYPE", "")
        multipart = ctype.lower().startswith("multipart/form-data")
        limit = self.config.max_bundle_size
        length = content_length(environ)
        if length is not None and length > limit + (MULTIPART_SLACK if multipart else 0):
            raise HTTPError(413, f"bundle is larger than the {limit}-byte limit")
        fd, name = tempfile.mkstemp(prefix="upload-", suffix=".part",
                                    dir=self.storage.tmp_dir())
        tmp = Path(name)
        # kept open until the bundle is stored: the storage syncs (or sends) this file
        # without opening it again. A buffer size given: no isatty() ioctl to choose one
        f = os.fdopen(fd, "w+b", buffering=io.DEFAULT_BUFFER_SIZE)
        try:
            # hashed on the way in, validated from the same open file: the upload is
            # written once and read back once, never read a third time for its sha256
            out = HashingWriter(f)
            if multipart:
                size = copy_file_field(environ["wsgi.input"], ctype, "file", out,
                                       limit=limit, content_length=length)
            else:
                size = copy_raw(environ["wsgi.input"], out, limit, length)
            if size == 0:
                raise HTTPError(400, "empty upload: send a .tar.zst bundle")
            f.flush()
            f.seek(0)
            manifest = tame_manifest(validate_bundle(
                f, self.config.max_decompressed, max_manifest=self.config.max_manifest,
                sinks=tails.sinks if tails is not None else None))
            check_names(manifest)
            if key is None:
                bundle_id, token = new_id(), secrets.token_urlsafe(24)
            else:  # a retry names the same bundle (rage.server.idempotency)
                bundle_id, token = idempotency.bundle_id(key), idempotency.delete_token(key)
            meta = StoredBundle(
                id=bundle_id, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                size=size, sha256=out.hexdigest(), delete_token_hash=token_hash(token),
                manifest=manifest)
            # only a keyed upload can have been stored by an earlier attempt: a random id is
            # new, and asking the store (a GET on S3) would cost every upload
            stored = None
            if key is not None:
                with contextlib.suppress(NotFoundError):
                    stored = self.storage.get_meta(bundle_id)
            if stored is None:
                self.storage.put(tmp, meta, f)
            else:
                meta = stored
        except (PartTooLarge, BundleTooLarge) as e:
            log.info("refused upload: %s", loggable(e.message))
            raise HTTPError(413, e.message) from None
        except BadInputError as e:
            log.info("refused upload: %s", loggable(e.message))
            raise HTTPError(400, e.message) from None
        finally:
            f.close()
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
        raise not_allowed("GET, POST, PUT")

    def do_healthz(self, environ: Environ, sr: StartResponse, method: str,
                   nonce: str) -> list[bytes]:
        """Liveness for a load balancer: the process answers."""
        return self._json(sr, 200, {"status": "ok"}, [("Cache-Control", "no-store")])

    def do_readyz(self, environ: Environ, sr: StartResponse, method: str,
                  nonce: str) -> list[bytes]:
        """Readiness: the storage and the index answer now (503 with the reason if not)."""
        problems = [p] if (p := self.disk.problem()) is not None else []
        try:
            check = getattr(self.storage, "check_ready", None)
            if check is not None:
                check()
            elif not os.access(self.storage.tmp_dir(), os.W_OK):
                problems.append("storage: not writable")
        except Exception as e:
            problems.append(f"storage: {type(e).__name__}")
        if self.triage is not None:
            try:
                self.triage.index.ping()
            except Exception as e:
                problems.append(f"index: {type(e).__name__}")
        body = {"status": "not ready", "problems": problems} if problems else {"status": "ok"}
        return self._json(sr, 503 if problems else 200, body, [("Cache-Control", "no-store")])

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
            raise not_allowed("POST")
        meta, token = self._receive(environ)
        links = self._links(environ, meta.id)
        body = {"id": meta.id, **links,
                "delete_url": f"{links['url']}/delete?token={token}", "delete_token": token}
        return self._json(sr, 201, body, [("Location", links["url"])])

    def do_known(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
                 prefix: str) -> list[bytes]:
        """Is a crash known? The client sends only the first :data:`KNOWN_PREFIX` hex
        digits of its signature's hash, never the hash or the signature's text, and
        decides itself which answer, if any, is its own (as password-breach checks do).
        Uploaders' auth; at most 30 a minute per address."""
        if method not in ("GET", "HEAD"):
            raise not_allowed("GET")
        if self.config.upload_token and not auth.token_ok(
                bearer(environ), self.config.upload_token):
            raise HTTPError(401, "upload token required (Authorization: Bearer <token>)",
                            headers=[("WWW-Authenticate", "Bearer")])
        client = str(environ.get("REMOTE_ADDR", "?"))
        if self.known_throttle.blocked(client):
            raise HTTPError(429, "too many queries: try again in a minute",
                            headers=[("Retry-After", "60")])
        self.known_throttle.failed(client)  # (every query counts)
        if self.triage is None:
            return self._json(sr, 200, {"prefix": prefix, "matches": [], "triage": False})
        return self._json(sr, 200, {"prefix": prefix, "triage": True,
                                    "matches": self.triage.index.known(prefix)})

    # -- reading and deleting ----------------------------------------------------------------

    def do_api_bundle(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
                      id: str) -> list[bytes]:
        if method == "DELETE":
            self._delete(environ, id, bearer(environ) or query(environ, "token"))
            return self._json(sr, 200, {"deleted": id})
        if method not in ("GET", "HEAD"):
            raise not_allowed("GET, DELETE")
        meta = self.storage.get_meta(id)
        return self._json(sr, 200, {"id": meta.id, "created_at": meta.created_at,
                                    "size": meta.size, "sha256": meta.sha256,
                                    **self._links(environ, id),
                                    "signature": self._signature_of(environ, id),
                                    "manifest": meta.manifest})

    def _signature_of(self, environ: Environ, bundle_id: str) -> dict[str, str] | None:
        """The bundle's signature and where triage shows it (None: no index, or not yet)."""
        found = self.triage.index.signature_of(bundle_id) if self.triage is not None else None
        if found is None:
            return None
        base = self.base_url(environ)
        return {"hash": found[0], "text": found[1], "url": f"{base}/triage/{found[0]}",
                "api_url": f"{base}/api/v1/signatures/{found[0]}"}

    def _delete(self, environ: Environ, bundle_id: str, token: str | None) -> None:
        meta = self.storage.get_meta(bundle_id)
        if not token:
            raise HTTPError(401, "deletion token required", headers=[("WWW-Authenticate",
                                                                       "Bearer")])
        if not hmac.compare_digest(token_hash(token), meta.delete_token_hash):
            raise HTTPError(403, "wrong deletion token")
        self.storage.delete(bundle_id)
        self.page_members.discard(bundle_id)
        self.listings.discard(bundle_id)
        if self.triage is not None:
            self.triage.on_deleted(bundle_id)
        log.info("deleted bundle %s", bundle_id)

    def do_delete_page(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
                       id: str) -> list[bytes]:
        if method == "GET":
            self.storage.get_meta(id)
            page = pages.delete_form(f"/b/{id}/delete", query(environ, "token") or "", nonce)
            return self._html(sr, 200, page, nonce, [("Cache-Control", "no-store")])
        if method == "POST":
            token = form(environ).get("token") or query(environ, "token")
            self._delete(environ, id, token)
            return self._html(sr, 200, pages.message_page(
                "Deleted", "The bundle and its page are gone.", nonce), nonce)
        if method == "DELETE":
            self._delete(environ, id, bearer(environ) or query(environ, "token"))
            return self._json(sr, 200, {"deleted": id})
        raise not_allowed("GET, POST, DELETE")

    def do_page(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
                id: str) -> list[bytes]:
        if method not in ("GET", "HEAD"):
            raise not_allowed("GET")
        meta = self.storage.get_meta(id)
        members = self.page_members.get(id)
        if members is None:
            with self.storage.open(id) as f:
                members = read_members(f, max_decompressed=self.config.max_decompressed,
                                       cap=self.config.display_cap, select=bundle_page.wanted())
            self.page_members.put(id, members)
        links = self._links(environ, id)
        page = pages.bundle_page_html(meta, members, pages.Links(links["url"], links["raw_url"]),
                                      nonce, signature=self._signature_of(environ, id))
        return self._html(sr, 200, page, nonce)

    def do_raw(self, environ: Environ, sr: StartResponse, method: str, nonce: str,
               id: str) -> Iterable[bytes]:
        if method not in ("GET", "HEAD"):
            raise not_allowed("GET")
        meta = self.storage.get_meta(id)
        f = self.storage.open(id)
        headers = [("Content-Type", "application/zstd"), ("Content-Length", str(meta.size)),
                   ("Content-Disposition", f'attachment; filename="{id}.tar.zst"'),
                   *security_headers(None)]
        sr("200 OK", headers)
        wrapper = environ.get("wsgi.file_wrapper")
        if wrapper is not None:
            return wrapper(f, 256 * 1024)  # type: ignore[no-any-return]
        return iter_file(f)

    def admin_ok(self, environ: Environ) -> bool:
        """Whether the request is the maintainer's: a session cookie or the Bearer token.

        For any page that needs it (``/admin`` and the triage pages); False when no admin
        token is configured.
        """
        if not self.config.admin_token:
            return False
        if self.sessions.valid(auth.cookie(environ)):
            return True  # a signed session: nothing to guess, never throttled
        given = bearer(environ)
        if given is None:
            return False
        # 300 wrong tokens at 958/s were all answered 403: now each address gets a few a
        # minute, then 429s without a check, until its oldest failure is a minute old (a
        # maintainer behind the same address is kept out for that minute, not for good,
        # and a session from the login form is not affected)
        client = str(environ.get("REMOTE_ADDR", "?"))
        if self.bearer_throttle.blocked(client):
            raise HTTPError(429, "too many wrong admin tokens from this address: wait a minute",
                            headers=[("Retry-After", str(int(self.bearer_throttle.window)))])
        if auth.token_ok(given, self.config.admin_token):
            return True
        self.bearer_throttle.failed(client)
        log.info("wrong admin token from %s", loggable(client))
        return False

    def require_admin(self, environ: Environ) -> None:
        """Raise the right refusal: 404 when admin is off, a login redirect for a browser,
        401/403 JSON for a script."""
        if not self.config.admin_token:
            raise HTTPError(404, "the admin pages are disabled (start with --admin-token)")
        if self.admin_ok(environ):
            return
        if auth.wants_html(environ):
            target = quote(environ.get("PATH_INFO") or "/admin", safe="/")
            raise HTTPError(303, "log in first",
                            headers=[("Location", f"/admin/login?next={target}")])
        if bearer(environ):
            raise HTTPError(403, "wrong admin token")
        raise HTTPError(401, "admin token required (Authorization: Bearer <token>)",
                        headers=[("WWW-Authenticate", "Bearer")])

    def do_admin(self, environ: Environ, sr: StartResponse, method: str,
                 nonce: str) -> list[bytes]:
        self.require_admin(environ)
        page = pages.admin_page(self.storage.list_recent(100), self.base_url(environ), nonce)
        return self._html(sr, 200, page, nonce, [("Cache-Control", "no-store")])

    def do_login(self, environ: Environ, sr: StartResponse, method: str,
                 nonce: str) -> list[bytes]:
        if not self.config.admin_token:
            raise HTTPError(404, "the admin pages are disabled (start with --admin-token)")
        no_store = [("Cache-Control", "no-store")]
        if method in ("GET", "HEAD"):
            page = pages.login_page(nonce, next_url=auth.safe_next(query(environ, "next")))
            return self._html(sr, 200, page, nonce, no_store)
        if method != "POST":
            raise not_allowed("GET, POST")
        fields = form(environ)
        target = auth.safe_next(fields.get("next"))
        client = str(environ.get("REMOTE_ADDR", "?"))
        if self.login_throttle.blocked(client):
            page = pages.login_page(nonce, next_url=target,
                                    error="Too many failed attempts: wait a minute.")
            return self._html(sr, 429, page, nonce, no_store)
        if not auth.token_ok(fields.get("token"), self.config.admin_token):
            self.login_throttle.failed(client)
            log.info("failed admin login from %s", loggable(client))
            page = pages.login_page(nonce, next_url=target, error="That is not the admin token.")
            return self._html(sr, 403, page, nonce, no_store)
        sid = self.sessions.create()
        return self._respond(sr, 303, b"", "text/plain", headers=[
            ("Location", target), auth.set_cookie(sid), *no_store])

    def do_logout(self, environ: Environ, sr: StartResponse, method: str,
                  nonce: str) -> list[bytes]:
        if method != "POST":
            raise not_allowed("POST")
        auth.same_origin(environ)  # another site must not log the maintainer out
        self.sessions.drop(auth.cookie(environ))
        return self._respond(sr, 303, b"", "text/plain", headers=[
            ("Location", "/admin/login"), auth.clear_cookie()])

    def do_member(self, environ: Environ, sr: StartResponse, method: str, nonce: str, *,
                  id: str, name: str) -> Iterable[bytes]:
        if method not in ("GET", "HEAD"):
            raise not_allowed("GET")
        # PATH_INFO carries the URL's bytes as latin-1 (PEP 3333)
        name = name.encode("latin-1", "replace").decode("utf-8", "replace")
        meta = self.storage.get_meta(id)
        listed = {f.get("name") for f in meta.manifest.get("files", []) if isinstance(f, dict)}
        if name not in listed:
            raise HTTPError(404, f"no file {loggable(name, 200)!r} in this bundle")
        release = self.streams.take()
        if release is None:
            raise HTTPError(503, f"{self.streams.limit} downloads are in progress: try again "
                                 "in a few seconds", headers=[("Retry-After", "5")])
        try:
            body = downloads.open_member(self.storage, id, name, self.config.max_decompressed,
                                         listings=self.listings, generation=meta.sha256,
                                         on_close=release)
        except BaseException:
            release()
            raise
        sr("200 OK", [("Content-Type", downloads.content_type(name)),
                      ("Content-Length", str(body.size)),
                      ("Content-Disposition", downloads.attachment(name)),
                      *security_headers(None)])
        if method == "HEAD":
            body.close()
            return []
        wrapper = environ.get("wsgi.file_wrapper")
        if wrapper is not None:
            # the server's event loop sends it: a slow reader holds no worker thread. It
            # reads a local file (an object store's bundle was fetched to the disk first):
            # the loop never waits on the network
            return wrapper(body, CHUNK)  # type: ignore[no-any-return]
        return body  # iterated, then closed by the server (also when never iterated)


