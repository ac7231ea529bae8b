"""The ``Idempotency-Key`` rage's uploader sends to its own receiver.

Sending the same bundle again (a retry after a timeout, ``rage send`` of a bundle whose
answer was lost) must not store it twice. The key is an HMAC of the bundle's bytes under a
random secret kept in rage's state directory (0600, made on first use): the same bundle from
this machine always gets the same key, and nobody who merely has the bundle (it may be
public on the receiver) can compute the key, which the receiver turns into the bundle's
deletion token (see rage.server.idempotency). When the secret cannot be kept (read-only
home), a random key still makes the uploader's own retries idempotent.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

SECRET_FILE = "upload-key"


def _secret() -> bytes | None:
    from rage.paths import home_root

    path = home_root() / SECRET_FILE
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # never a FIFO
        except FileNotFoundError:
            try:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except FileExistsError:
                continue  # another rage made it meanwhile: read theirs
            except OSError:
                return None
            with os.fdopen(fd, "wb") as f:
                value = secrets.token_bytes(32)
                f.write(value)
            return value
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            value = f.read(64)
        if st.st_uid != os.getuid() or len(value) != 32:
            return None  # not ours, or damaged: do not trust it
        return value
    return None


def host_scope(url: str) -> str:
    """The host name of ``url``, the scope of its keys: every URL form of one receiver
    (``http://h/``, ``https://h/api/v1/bundles``, after ``receiver+``) gets one key per
    bundle, and so do receivers on other ports of the same host (a retry moved to another
    one stores nothing twice), while another host never learns the key a receiver here
    would honour."""
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "").lower()


def upload_key(path: Path, scope: str = "") -> str:
    """The key for the bundle at ``path`` sent to the host ``scope`` (:func:`host_scope`; 43
    URL-safe characters)."""
    secret = _secret()
    if secret is None:
        return secrets.token_urlsafe(32)
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    if scope:
        mac.update(b"host:" + scope.encode() + b"\0")
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            mac.update(chunk)
    return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")
