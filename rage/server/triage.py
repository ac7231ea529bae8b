"""The maintainer's triage desk: signature list, signature page, JSON API, and the hooks
that keep the index in step with storage.

Routes (the maintainer's: the admin login cookie or ``Authorization: Bearer`` with the admin
token, checked by the receiver's ``require_admin``; off without ``--admin-token``)::

    GET  /triage                       signatures: ?app= &version= &status= &q= &sort= &page=
    GET  /triage/<hash>                one signature: counts, versions, days, bundles, why
    POST /triage/<hash>                form: action=fixed&fixed_in=1.3 | action=open
    GET  /api/v1/signatures            the list as JSON (same parameters, plus per_page)
    GET  /api/v1/signatures/<hash>     one signature as JSON
    POST /api/v1/signatures/<hash>     {"status": "fixed", "fixed_in": "1.3"} | {"status": "open"}

The receiver calls :meth:`Triage.on_stored` after a bundle is stored (the blob first, the
index row last: a failure here leaves a stored bundle that the next start re-indexes, never
a row without its bundle) and :meth:`Triage.on_deleted` after a deletion.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
import shlex
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any
from urllib.parse import parse_qs, urlencode

from rage.errors import NotFoundError
from rage.server import signature as signing
from rage.server.auth import Throttle, same_origin
from rage.server.batch import Expected
from rage.server.index import SORTS, STATUSES, BundleFacts, Index, Query, Recorded
from rage.server.limits import db_text, json_body, loggable, no_constant
from rage.server.notify import PER_CLIENT, PER_CLIENT_WINDOW, Notifier
from rage.server.retries import Retries
from rage.server.storage import Storage, StoredBundle
from rage.server.wsgi import HTTPError, bearer

log = logging.getLogger("rage.server.triage")
TEXT_CAP = 64 * 1024  # the tail of each member the signature reads
SMALL_BUNDLE = 8 * 1024 * 1024  # inflated in memory at once (decompressed size)
Environ = dict[str, Any]
_HASH = r"(?P<hash>[0-9a-f]{8,64})"
_ROUTES = [
    (re.compile(r"^/triage/?$"), "list_page"),
    (re.compile(rf"^/triage/{_HASH}/?$"), "signature_page"),
    (re.compile(r"^/api/v1/signatures/?$"), "list_api"),
    (re.compile(rf"^/api/v1/signatures/{_HASH}$"), "signature_api"),
]


@dataclass(frozen=True)
class Response:
    """What the receiver sends; ``html`` responses get its nonce CSP."""

    status: int
    body: bytes
    ctype: str
    headers: list[tuple[str, str]] = field(default_factory=list)

    @property
    def html(self) -> bool:
        return self.ctype.startswith("text/html")


class Tails:
    """Keeps the last TEXT_CAP bytes of each member a signature reads, fed by the receiver's
    validation pass (``validate_bundle(..., sinks=tails.sinks)``): no second read.

    ``expected`` is the upload's announcement to the index (see :meth:`Triage.receiving`).
    """

    def __init__(self, expected: Expected | None = None) -> None:
        self.expected = expected
        self._bufs: dict[str, bytearray] = {}
        self.sinks: dict[str, Callable[[bytes], object]] = {
            name: self._sink(name) for name in signing.MEMBERS}

    def _sink(self, name: str) -> Callable[[bytes], object]:
        buf = self._bufs.setdefault(name, bytearray())

        def keep(chunk: bytes) -> None:
            buf.extend(chunk)
            if len(buf) > 2 * TEXT_CAP:  # trimmed now and then, not per chunk
                del buf[:-TEXT_CAP]

        return keep

    def texts(self) -> dict[str, str]:
        return {name: bytes(buf[-TEXT_CAP:]).decode("utf-8", "replace")
                for name, buf in self._bufs.items() if buf}


def bundle_texts(src: IO[bytes], manifest: Mapping[str, Any],
                 max_decompressed: int) -> dict[str, str]:
    """The tails of the members a signature reads, from a bundle already validated against
    ``manifest`` (so its sizes are true): a small bundle is inflated in one call and only
    the tails are read; a large one is streamed, stopping once it has what it needs."""
    from rage.bundle import iter_capped

    files = manifest.get("files") if isinstance(manifest.get("files"), list) else []
    assert isinstance(files, list)
    sizes = {str(f.get("name")): f.get("size") for f in files if isinstance(f, dict)}
    wanted = set(sizes) & set(signing.MEMBERS)
    if "run/stderr.log" in wanted and sizes["run/stderr.log"]:
        wanted.discard("run/output.log")  # a terminal run's combined output is the fallback
    out: dict[str, str] = {}
    if not wanted:
        return out
    total = sum(s for s in sizes.values() if isinstance(s, int))
    if total <= SMALL_BUNDLE:
        return _texts_in_memory(src, wanted)
    for m in iter_capped(src, cap=TEXT_CAP, select=lambda name, _size: name in wanted,
                         max_decompressed=max_decompressed):
        out[m.name] = m.text
        if len(out) == len(wanted):
            break  # collectors come after the run's files: not inflated for nothing
    return out


def _texts_in_memory(src: IO[bytes], wanted: set[str]) -> dict[str, str]:
    import io
    import tarfile

    import zstandard

    from rage.bundle.stream import MAX_WINDOW, StrictTarInfo

    # across frames, as the validation read it (`pzstd` writes several)
    with zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).stream_reader(
            src, read_across_frames=True) as z:
        data = z.read(SMALL_BUNDLE + 64 * 1024)  # the sizes were checked: this is all of it
    out = {}
    # the bundle's headers as validation read them: bounded, never tarfile's pax parser
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:", tarinfo=StrictTarInfo) as tf:
        for info in tf.getmembers():
            name = info.name.removeprefix("./")
            if name in wanted and info.isreg() and (f := tf.extractfile(info)) is not None:
                f.seek(max(0, info.size - TEXT_CAP))
                out[name] = f.read().decode("utf-8", "replace")
    return out


def facts_of(meta: StoredBundle, sig: signing.Signature, reporter: str) -> BundleFacts:
    m = meta.manifest
    run = m.get("run") if isinstance(m.get("run"), dict) else {}
    assert isinstance(run, dict)
    argv = run.get("argv")
    command = shlex.join(str(a) for a in argv) if isinstance(argv, list) else ""
    version = m.get("app_version") or run.get("app_version")
    note = m.get("note")
    try:
        when = datetime.fromisoformat(meta.created_at).astimezone(UTC).replace(tzinfo=None)
    except (TypeError, ValueError):
        when = datetime.now(UTC).replace(tzinfo=None)
    return BundleFacts(meta.id, when, db_text(sig.app), _text(version), reporter,
                       _text(run.get("status")), db_text(command), _text(note) or "",
                       meta.size, findings(m))


FINDINGS_MAX = 12  # short texts kept per bundle
_SINCE = re.compile(r"^Since (?:it last worked \(run|run) [^)]{1,80}\): ")


def findings(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """What the client found before sending, as short texts a signature's page counts over
    its reports: whose bug (``inside requests 2.32.3``) and what changed since it last
    worked (``requests 2.31.0 -> 2.32.3``, ``option --fast added``). Uploaded text: each
    cut and made storable."""
    out: list[str] = []
    c = manifest.get("culprit")
    if isinstance(c, dict) and isinstance(c.get("name"), str):
        out.append(f"inside {c['name']} {c.get('version') or ''}".strip())
    since = manifest.get("since_it_worked")
    if isinstance(since, str) and (m := _SINCE.match(since[:4000])):
        out += [item.strip() for item in since[m.end():4000].split(", ")
                if item.strip() and not item.startswith("and ")]
    return tuple(db_text(x[:120]) for x in dict.fromkeys(out))[:FINDINGS_MAX]


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    return db_text(str(value))


def _db_signature(sig: signing.Signature) -> signing.Signature:
    """``sig`` with its texts as every database keeps them (the hash is hex already)."""
    return dataclasses.replace(
        sig, app=db_text(sig.app), text=db_text(sig.text),
        exception=db_text(sig.exception) if sig.exception is not None else None,
        reasons=tuple(db_text(r) for r in sig.reasons))


class Triage:
    """The index, the notifier and the pages, for one receiver."""

    def __init__(self, index: Index, *, notifier: Notifier | None = None,
                 max_decompressed: int = 512 * 1024 * 1024) -> None:
        self.index = index
        self.notifier = notifier
        self.notified = Throttle(limit=PER_CLIENT, window=PER_CLIENT_WINDOW)
        self.max_decompressed = max_decompressed
        self.retries = Retries()  # stored bundles whose index write failed

    # -- hooks ----------------------------------------------------------------------------

    def sign(self, storage: Storage, meta: StoredBundle) -> signing.Signature:
        with storage.open(meta.id) as f:
            texts = bundle_texts(f, meta.manifest, self.max_decompressed)
        return _db_signature(signing.compute(meta.manifest, texts))

    def on_stored(self, storage: Storage, meta: StoredBundle, environ: Environ,
                  base_url: str, tails: Tails | None = None) -> Recorded | None:
        """Index a stored bundle and notify; never raises (the upload already succeeded).
        ``tails`` kept during validation spare reading the bundle again. A write that fails
        is tried again in the background until the bundle is counted (retries.py)."""
        # what the receiver observed (the client's address, or the trusted proxy's
        # X-Forwarded-For), never what the upload says about itself: a "reporter" field
        # in the manifest let one client count as any number of reporters
        identity = str(environ.get("REMOTE_ADDR") or "?")
        try:
            sig = (_db_signature(signing.compute(meta.manifest, tails.texts()))
                   if tails is not None else self.sign(storage, meta))
            recorded = self.index.record(sig, facts_of(meta, sig, self.index.reporter(identity)),
                                         expected=tails.expected if tails is not None else None)
        except Exception:
            log.exception("could not index bundle %s (tried again in the background)", meta.id)
            self.retries.add(meta.id, lambda: self._index_again(storage, meta, identity,
                                                                base_url))
            return None
        self._notify(recorded, sig, meta, identity, base_url)
        return recorded

    def _index_again(self, storage: Storage, meta: StoredBundle, identity: str,
                     base_url: str) -> None:
        """:meth:`on_stored`'s work once more, from the stored bundle; raises on failure.
        A bundle deleted meanwhile is done with (its row would outlive it)."""
        try:
            storage.get_meta(meta.id)
        except NotFoundError:
            return
        sig = self.sign(storage, meta)
        recorded = self.index.record(sig, facts_of(meta, sig, self.index.reporter(identity)))
        self._notify(recorded, sig, meta, identity, base_url)

    def _notify(self, recorded: Recorded | None, sig: signing.Signature, meta: StoredBundle,
                client: str, base_url: str) -> None:
        if not (recorded and recorded.event and self.notifier is not None):
            return
        if self.notified.blocked(client):
            log.info("%s for %s not notified: %s caused %d notifications this hour",
                     recorded.event, sig.hash, loggable(client), self.notified.limit)
            return
        self.notified.failed(client)  # counted (Throttle counts "failures")
        info = self.index.signature(sig.hash, bundles=0) or {}
        self.notifier.notify(recorded.event, info, f"{base_url}/triage/{sig.hash}",
                             f"{base_url}/b/{meta.id}")

    def on_deleted(self, bundle_id: str) -> None:
        try:
            self.index.forget(bundle_id)
        except Exception:
            log.exception("could not remove bundle %s from the index", bundle_id)

    @contextlib.contextmanager
    def receiving(self) -> Iterator[Tails]:
        """One upload on its way to the index, for the length of the block: its tails (for
        the validation pass and :meth:`on_stored`), and its announcement to the index's group
        commit, which waits a little for uploads on their way (batch.py). The announcement
        is settled when the upload is recorded, else when the block ends."""
        tails = Tails(self.index.expect())
        try:
            yield tails
        finally:
            assert tails.expected is not None
            tails.expected.settle()

    def reprocess(self, storage: Storage, *, recent: int = 0) -> int:
        """Re-sign bundles signed by an older algorithm, and index those of the ``recent``
        newest stored bundles that the index does not know (an upload whose index write
        failed, or every bundle for a new index). Returns how many bundles changed."""
        done = 0
        while ids := self.index.stale():
            for bundle_id in ids:
                try:
                    self.index.reassign(bundle_id, self.sign(storage, storage.get_meta(bundle_id)))
                except Exception:  # a bundle gone meanwhile, or unreadable: drop its row
                    log.warning("bundle %s could not be re-signed; removed from the index",
                                bundle_id)
                    self.index.forget(bundle_id)
                done += 1
        if recent:
            for meta in storage.list_recent(recent):
                if not self.index.has(meta.id):
                    with contextlib.suppress(Exception):
                        sig = self.sign(storage, meta)
                        self.index.record(sig, facts_of(meta, sig, self.index.reporter("?")))
                        done += 1
        return done

    def start_background(self, storage: Storage, *, recent: int) -> threading.Thread:
        t = threading.Thread(target=self.reprocess, args=(storage,),
                             kwargs={"recent": recent}, name="rage-reindex", daemon=True)
        t.start()
        return t

    # -- routing --------------------------------------------------------------------------

    def route(self, environ: Environ, method: str, path: str, nonce: str, base_url: str, *,
              require_admin: Callable[[Environ], None]) -> Response | None:
        """The response for a triage route, or None when ``path`` is not one. Refusals
        raise the receiver's HTTPError (``require_admin`` raises its own: a login redirect
        for a browser, 401/403 for a script)."""
        for rx, name in _ROUTES:
            if m := rx.match(path):
                require_admin(environ)
                handler = getattr(self, "_" + name)
                return handler(environ, method, nonce, base_url, **m.groupdict())  # type: ignore[no-any-return]
        return None

    def _list_page(self, environ: Environ, method: str, nonce: str, base_url: str) -> Response:
        _only(method, "GET", "HEAD")
        query = _query(environ)
        rows, total = self.index.search(query)
        pages = max(1, -(-total // query.per_page))
        params = {k: v for k, v in (("app", query.app), ("version", query.version),
                                    ("status", query.status), ("q", query.q),
                                    ("sort", query.sort)) if v}

        def page_url(n: int) -> str:
            return "/triage?" + urlencode({**params, "page": n})

        return self._render("triage_list.html", nonce, rows=rows, total=total, query=query,
                            pages=pages, facets=self.index.facets(), statuses=STATUSES,
                            sorts=list(SORTS), page_url=page_url)

    def _signature_page(self, environ: Environ, method: str, nonce: str, base_url: str,
                        hash: str) -> Response:
        if method == "POST":
            same_origin(environ)
            form = _form(environ)
            action = (form.get("action") or [""])[0]
            fixed_in = (form.get("fixed_in") or [""])[0].strip() or None
            self._set_status(hash, "fixed" if action == "fixed" else action, fixed_in)
            return Response(303, b"", "text/plain", [("Location", f"/triage/{hash}")])
        _only(method, "GET", "HEAD")
        sig = self.index.signature(hash)
        if sig is None:
            raise HTTPError(404, f"no signature {hash}")
        peak = max((d["count"] for d in sig["days"]), default=1)
        return self._render("triage_signature.html", nonce, sig=sig, peak=peak)

    def _list_api(self, environ: Environ, method: str, nonce: str, base_url: str) -> Response:
        _only(method, "GET", "HEAD")
        query = _query(environ)
        rows, total = self.index.search(query)
        for r in rows:
            r["url"] = f"{base_url}/triage/{r['hash']}"
            r["api_url"] = f"{base_url}/api/v1/signatures/{r['hash']}"
        return _json(200, {"signatures": rows, "total": total, "page": query.page,
                           "per_page": query.per_page,
                           "pages": max(1, -(-total // query.per_page))})

    def _signature_api(self, environ: Environ, method: str, nonce: str, base_url: str,
                       hash: str) -> Response:
        if method == "POST":
            if bearer(environ) is None:
                # the session cookie, not a script's token: a browser sent it, and a page
                # of a sibling subdomain (same-site: the cookie rides along) could have
                # posted text/plain here. JSON needs a CORS preflight, which nobody grants
                same_origin(environ)
                ctype = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
                if ctype != "application/json":
                    raise HTTPError(415, "send the body as application/json")
            body = _body(environ)
            try:
                data = json.loads(body or b"{}", parse_constant=no_constant)
            except ValueError:
                raise HTTPError(400, "body must be JSON") from None
            if not isinstance(data, dict):
                raise HTTPError(400, "body must be a JSON object")
            fixed_in = data.get("fixed_in")
            self._set_status(hash, str(data.get("status", "")),
                             str(fixed_in) if fixed_in is not None else None)
        else:
            _only(method, "GET", "HEAD", "POST")
        sig = self.index.signature(hash)
        if sig is None:
            raise HTTPError(404, f"no signature {hash}")
        sig["url"] = f"{base_url}/triage/{hash}"
        for b in sig["bundles"]:
            b["url"] = f"{base_url}/b/{b['id']}"
        return _json(200, sig)

    def _set_status(self, sig_hash: str, status: str, fixed_in: str | None) -> None:
        fixed_in = db_text(fixed_in) if fixed_in is not None else None
        if status not in ("fixed", "open"):
            raise HTTPError(400, "status must be 'fixed' (with fixed_in) or 'open'")
        if status == "fixed" and not fixed_in:
            raise HTTPError(400, "fixed_in (the version with the fix) is required")
        if not self.index.set_status(sig_hash, status, fixed_in):
            raise HTTPError(404, f"no signature {sig_hash}")

    def _render(self, name: str, nonce: str, **context: Any) -> Response:
        from rage.server.templating import render

        text = render(name, nonce=nonce, **context)
        return Response(200, text.encode("utf-8", "replace"), "text/html; charset=utf-8",
                        [("Cache-Control", "no-store")])


def _query(environ: Environ) -> Query:
    qs = parse_qs(environ.get("QUERY_STRING", ""))

    def one(key: str) -> str | None:
        v = (qs.get(key) or [""])[0].strip()
        return db_text(v[:200]) or None

    def number(key: str, default: int, top: int) -> int:
        raw = one(key)
        if raw is None:
            return default
        if not raw.isdigit() or not 1 <= int(raw) <= top:
            raise HTTPError(400, f"{key} must be a number from 1 to {top}")
        return int(raw)

    sort = one("sort") or "last"
    if sort not in SORTS:
        raise HTTPError(400, f"sort must be one of {', '.join(SORTS)}")
    status = one("status")
    if status and status not in STATUSES:
        raise HTTPError(400, f"status must be one of {', '.join(STATUSES)}")
    return Query(app=one("app"), version=one("version"), status=status, q=one("q"), sort=sort,
                 page=number("page", 1, 100_000), per_page=number("per_page", 50, 200))


def _only(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise HTTPError(405, "method not allowed", headers=[("Allow", ", ".join(allowed))])


def _body(environ: Environ) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise HTTPError(400, "bad Content-Length") from None
    if length > 64 * 1024 or length < 0:
        raise HTTPError(413, "request body too large")
    return environ["wsgi.input"].read(length) if length else b""


def _form(environ: Environ) -> dict[str, list[str]]:
    return parse_qs(_body(environ).decode("utf-8", "replace"))


def _json(status: int, obj: Any) -> Response:
    return Response(status, json_body(obj), "application/json",
                    [("Cache-Control", "no-store")])
