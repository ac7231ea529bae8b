"""HTTP for uploaders: one policy for TLS, proxies, timeouts, retries and redirects.

``upload_timeout`` bounds how long rage keeps trying (attempts, back-off, waiting for a
silent server); a transfer that is making progress is not cut off mid-stream, since a slow
link is not a failure.
"""

from __future__ import annotations

import ipaddress
import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urljoin, urlsplit

from rage.config import Settings
from rage.errors import UploadError
from rage.upload.base import Progress

CHUNK = 1024 * 1024  # big writes keep the per-chunk Python overhead negligible
MAX_RESPONSE = 1024 * 1024  # a link never needs more than this
MAX_REDIRECTS = 5
RETRY_AFTER_CAP = 30.0
BACKOFF_FIRST = 0.5
BACKOFF_CAP = 8.0
CONNECT_TIMEOUT = 10.0
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class Body(Protocol):
    """A re-iterable request body of known length (each ``iter()`` starts from byte 0)."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[bytes]: ...


class FileBody:
    """A file streamed in chunks, reporting progress; iterating again re-reads it."""

    def __init__(self, path: Path, progress: Progress | None = None) -> None:
        self.path = path
        self.size = path.stat().st_size
        self.progress = progress

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[bytes]:
        return stream_parts((), self.path, (), self.size, self.progress)


def stream_parts(
    head: tuple[bytes, ...], path: Path, tail: tuple[bytes, ...], total: int,
    progress: Progress | None,
) -> Iterator[bytes]:
    """Yield ``head``, the file's bytes, then ``tail``, calling ``progress`` as they go."""
    sent = 0
    if progress:
        progress(0, total)
    with open(path, "rb") as f:
        chunks: list[Any] = [iter(head), iter(lambda: f.read(CHUNK), b""), iter(tail)]
        for part in chunks:
            for chunk in part:
                yield chunk
                sent += len(chunk)
                if progress:
                    progress(sent, total)


@dataclass(frozen=True)
class Response:
    """The parts of a response an uploader needs (the body is capped at ``MAX_RESPONSE``)."""

    status: int
    url: str
    text: str
    content_type: str
    headers: Mapping[str, str] = field(repr=False)


def is_loopback(host: str) -> bool:
    if host.lower() in {"localhost", "localhost.localdomain"} or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, settings: Settings) -> None:
    """Refuse anything but https (plain http only to loopback or with ``allow_http``)."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise UploadError(f"not an http(s) URL: {url}")
    if parts.scheme == "http" and not settings.allow_http and not is_loopback(parts.hostname):
        raise UploadError(
            f"refusing to upload over plain http to {parts.hostname}",
            hint="use an https:// URL, or pass --allow-http (or set allow_http) to accept it",
        )


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


class HttpClient:
    """Sends one request with rage's policy; use as a context manager to close the session."""

    def __init__(self, settings: Settings) -> None:
        import requests

        self.settings = settings
        self.session = requests.Session()
        self.session.headers["User-Agent"] = _user_agent()
        ca = settings.upload_ca_bundle
        self.verify: bool | str = str(Path(ca).expanduser()) if ca else True

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.session.close()

    def send(
        self, method: str, url: str, *, body: Body | bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        """Send until a non-retryable answer or the time budget ends.

        Returns 2xx and 3xx-other-than-307/308 responses; raises :class:`UploadError` for
        4xx, TLS failures, and for 5xx/429/connection errors once the budget is spent.
        307/308 are followed with the same method and body (re-read from the start).
        """
        import requests

        check_url(url, self.settings)
        budget = max(self.settings.upload_timeout, 0.1)
        deadline = time.monotonic() + budget
        hdrs = dict(headers or {})
        attempts = redirects = 0
        reason = "no attempt made"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._gave_up(url, reason, attempts, budget)
            attempts += 1
            wait: float | None = None
            proxies = _no_proxy_for_loopback(url)
            try:
                resp = self.session.request(
                    method, url, data=body, headers=hdrs, allow_redirects=False, stream=True,
                    timeout=(min(CONNECT_TIMEOUT, remaining), max(remaining, 1.0)),
                    verify=self.verify,
                    proxies=proxies,  # type: ignore[arg-type]  # None entries are honoured
                )
            except requests.exceptions.SSLError as e:
                raise UploadError(
                    f"TLS error talking to {_host(url)}: {_short(e)}",
                    hint="if the server uses a private CA, point REQUESTS_CA_BUNDLE at it",
                ) from None
            except (requests.ConnectionError, requests.Timeout) as e:
                reason = _short(e)
            else:
                with resp:
                    status = resp.status_code
                    if status in {307, 308} and resp.headers.get("Location"):
                        redirects += 1
                        if redirects > MAX_REDIRECTS:
                            raise UploadError(f"too many redirects uploading to {_host(url)}")
                        new = urljoin(url, resp.headers["Location"])
                        check_url(new, self.settings)
                        if urlsplit(new).netloc != urlsplit(url).netloc:
                            hdrs.pop("Authorization", None)  # never hand a token to a new host
                        url = new
                        attempts -= 1
                        continue
                    text = _read_capped(resp)
                    if status in RETRY_STATUSES:
                        reason = f"HTTP {status} {resp.reason or ''}".rstrip()
                        wait = retry_after(resp.headers.get("Retry-After"))
                    elif status >= 400:
                        detail = " ".join(text.split())[:200]
                        raise UploadError(
                            f"{_host(url)} refused the upload: HTTP {status} {resp.reason or ''}"
                            + (f": {detail}" if detail else "")
                        )
                    else:
                        return Response(status, resp.url, text,
                                        resp.headers.get("Content-Type", ""), resp.headers)
            delay = _backoff(attempts) if wait is None else min(wait, RETRY_AFTER_CAP)
            if time.monotonic() + delay >= deadline:
                raise self._gave_up(url, reason, attempts, budget)
            time.sleep(delay)

    @staticmethod
    def _gave_up(url: str, reason: str, attempts: int, budget: float) -> UploadError:
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        return UploadError(f"upload to {_host(url)} failed: {reason} ({tries} in {budget:g}s)")


def _backoff(attempt: int) -> float:
    base = min(BACKOFF_FIRST * 2.0 ** (attempt - 1), BACKOFF_CAP)
    return base * random.uniform(0.8, 1.2)  # jitter: many clients must not retry in step


def _no_proxy_for_loopback(url: str) -> dict[str, str | None] | None:
    # A proxy cannot reach our loopback; requests drops None entries after merging env proxies.
    host = urlsplit(url).hostname or ""
    return {"http": None, "https": None} if is_loopback(host) else None


def _read_capped(resp: Any) -> str:
    data = bytearray()
    for chunk in resp.iter_content(65536):
        data += chunk
        if len(data) >= MAX_RESPONSE:
            break
    return bytes(data[:MAX_RESPONSE]).decode("utf-8", "replace")


def _short(e: BaseException) -> str:
    # requests nests urllib3 errors several levels deep; the innermost reason reads best.
    inner: BaseException = e
    while inner.args and isinstance(inner.args[0], BaseException):
        inner = inner.args[0]
    reason = getattr(inner, "reason", None)
    text = str(reason if isinstance(reason, BaseException) else inner)
    if "timed out" in text.lower() or "timeout" in type(inner).__name__.lower():
        return "timed out waiting for the server"
    if "refused" in text.lower():
        return "connection refused"
    return " ".join(text.split())[:200] or type(e).__name__


def _user_agent() -> str:
    from rage._version import __version__

    return f"rage/{__version__}"
