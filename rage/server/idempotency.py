"""Retried uploads never duplicate: the ``Idempotency-Key`` request header.

A client that may send the same bundle twice (a timeout after the receiver stored it, a
load balancer moving the retry to another receiver) sends a random secret key with every
attempt. The bundle id and its deletion token are derived from the key, so every attempt,
on any receiver, names the same bundle: storage writes are conditional or idempotent and the
index counts a bundle id once, so the retry stores and counts nothing new and answers with
the same link and token. Without the header, ids and tokens are random as before.

The key is a secret (it yields the deletion token): at least 128 bits, URL-safe characters.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

HEADER = "Idempotency-Key"
_KEY = re.compile(r"^[A-Za-z0-9_-]{22,128}$")


class BadKey(ValueError):
    pass


def key_of(environ: dict[str, Any]) -> str | None:
    """The request's idempotency key, or None; raises BadKey for a malformed one."""
    raw = environ.get("HTTP_IDEMPOTENCY_KEY")
    if raw is None:
        return None
    if not _KEY.match(raw):
        raise BadKey(f"{HEADER} must be 22 to 128 characters of A-Z a-z 0-9 _ - "
                     "(a random secret, e.g. 32 random bytes in URL-safe base64)")
    return str(raw)


def _derive(purpose: bytes, key: str, length: int) -> str:
    digest = hashlib.sha256(b"rage-idempotency:" + purpose + b":" + key.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")[:length]


def bundle_id(key: str) -> str:
    """The bundle id every attempt with ``key`` gets (22 characters, like random ids)."""
    return _derive(b"id", key, 22)


def delete_token(key: str) -> str:
    return _derive(b"delete", key, 32)
