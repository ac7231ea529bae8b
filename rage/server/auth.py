"""Maintainer login: a form that trades the admin token for a session cookie.

The token never goes into a URL (they end up in logs, history and Referer headers). A
browser posts it once to ``/admin/login`` and gets a random session id in a cookie that is
``HttpOnly`` (no script reads it), ``Secure`` (never sent over plain HTTP, except to
localhost, which browsers treat as secure) and ``SameSite=Strict`` (no other site can make
the browser use it, which is the receiver's CSRF defence for admin actions). Sessions live
in memory: a restart logs everyone out. Scripts keep using ``Authorization: Bearer``.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from http.cookies import CookieError, SimpleCookie
from typing import Any

COOKIE = "rage_admin"
SESSION_TTL = 12 * 3600
MAX_SESSIONS = 1000


class Sessions:
    """Thread-safe in-memory sessions with a lifetime and a bounded count."""

    def __init__(self, ttl: float = SESSION_TTL) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._expiry: dict[str, float] = {}

    def create(self) -> str:
        sid = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            self._expiry = {k: t for k, t in self._expiry.items() if t > now}
            if len(self._expiry) >= MAX_SESSIONS:  # drop the oldest
                del self._expiry[min(self._expiry, key=self._expiry.__getitem__)]
            self._expiry[sid] = now + self.ttl
        return sid

    def valid(self, sid: str | None) -> bool:
        if not sid:
            return False
        with self._lock:
            expiry = self._expiry.get(sid)
            if expiry is None or expiry <= time.monotonic():
                self._expiry.pop(sid, None)
                return False
            return True

    def drop(self, sid: str | None) -> None:
        with self._lock:
            self._expiry.pop(sid or "", None)


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
