"""Maintainer login: a form that trades the admin token for a session cookie.

The token never goes into a URL (they end up in logs, history and Referer headers). A
browser posts it once to ``/admin/login`` and gets a random session id in a cookie that is
``HttpOnly`` (no script reads it), ``Secure`` (never sent over plain HTTP, except to
localhost, which browsers treat as secure) and ``SameSite=Strict`` (no other site can make
the browser use it, which is the receiver's CSRF defence for admin actions). Sessions are
signed with a key derived from the admin token, so they work on every receiver that shares
the token and survive restarts. Scripts keep using ``Authorization: Bearer``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import urlsplit

from rage.server.wsgi import HTTPError

COOKIE = "rage_admin"
SESSION_TTL = 12 * 3600


class Sessions:
    """Signed, self-contained session cookies: ``<expiry>.<nonce>.<mac>``.

    The MAC key is derived from the admin token, so every receiver started with the same
    token accepts the same cookies (any number of receivers behind a load balancer, no shared
    session table) and changing the token logs everyone out. Logging out removes the cookie
    from the browser; a copied cookie stays valid until it expires (``ttl``).
    """

    def __init__(self, admin_token: str | None, ttl: float = SESSION_TTL) -> None:
        self.ttl = ttl
        secret = admin_token.encode() if admin_token else secrets.token_bytes(32)
        self._key = hmac.new(secret, b"rage-admin-session-v1", hashlib.sha256).digest()

    def _mac(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()

    def create(self) -> str:
        payload = f"{int(time.time() + self.ttl)}.{secrets.token_urlsafe(12)}"
        return f"{payload}.{self._mac(payload)}"

    def valid(self, sid: str | None) -> bool:
        if not sid or len(sid) > 200:
            return False
        payload, _, mac = sid.rpartition(".")
        expiry = payload.partition(".")[0]
        if not expiry.isdigit() or not hmac.compare_digest(mac, self._mac(payload)):
            return False
        return int(expiry) > time.time()

    def drop(self, sid: str | None) -> None:
        """Nothing to forget on the server: the response clears the cookie."""


class Throttle:
    """At most ``limit`` failed logins per address per ``window`` seconds (then 429s).

    Refuses rather than sleeps: a sleeping worker thread is one a guesser takes away from
    everyone else. Bounded memory: the table is cleared when it grows past ``max_keys``.
    """

    def __init__(self, limit: int = 10, window: float = 60.0, max_keys: int = 10_000) -> None:
        self.limit, self.window, self.max_keys = limit, window, max_keys
        self._lock = threading.Lock()
        self._fails: dict[str, list[float]] = {}

    def blocked(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self._fails.get(key, []) if t > now - self.window]
            if recent:
                self._fails[key] = recent
            else:
                self._fails.pop(key, None)
            return len(recent) >= self.limit

    def failed(self, key: str) -> None:
        with self._lock:
            if len(self._fails) >= self.max_keys:
                self._fails.clear()
            self._fails.setdefault(key, []).append(time.monotonic())


def cookie(environ: dict[str, Any]) -> str | None:
    raw = environ.get("HTTP_COOKIE", "")
    if not raw:
        return None
    try:
        jar = SimpleCookie(raw)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel else None


def set_cookie(sid: str, max_age: int = SESSION_TTL) -> tuple[str, str]:
    return ("Set-Cookie", f"{COOKIE}={sid}; Path=/; Max-Age={max_age}; HttpOnly; Secure; "
            "SameSite=Strict")


def clear_cookie() -> tuple[str, str]:
    return set_cookie("", 0)


def token_ok(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def safe_next(value: str | None, default: str = "/admin") -> str:
    """A local path to go back to after logging in (never another site: no open redirect)."""
    if (not value or not value.startswith("/") or value.startswith("//")
            or "\\" in value or any(ord(c) < 32 for c in value)):
        return default
    return value


def wants_html(environ: dict[str, Any]) -> bool:
    """A browser navigating (as opposed to curl or a script)."""
    return "text/html" in environ.get("HTTP_ACCEPT", "")


def same_origin(environ: dict[str, Any]) -> None:
    """A request from another origin is refused (the session cookie would ride along).

    Browsers say where a request comes from in ``Sec-Fetch-Site``; the pages' no-referrer
    policy makes them send ``Origin: null`` on form posts, so Origin is the fallback only."""
    site = environ.get("HTTP_SEC_FETCH_SITE")
    origin = environ.get("HTTP_ORIGIN")
    if site is not None:
        ok = site in ("same-origin", "none")
    else:
        ok = not origin or (origin != "null"
                            and urlsplit(origin).netloc == environ.get("HTTP_HOST"))
    if not ok:
        raise HTTPError(403, "cross-origin request refused")
