"""HTTP for uploaders: one policy for TLS, proxies, timeouts, retries and redirects.

``upload_timeout`` is a deadline for the whole upload: attempts, back-off, sending the body
and reading the answer, however slowly the server trickles it.
"""

from __future__ import annotations

import ipaddress
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urljoin, urlsplit

from rage.config import Settings
from rage.errors import UploadError
from rage.upload.base import Progress
from rage.upload.tokens import TOKEN_ENV, token_for

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
    reason: str = ""


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
    # the email package is large and only an HTTP-date Retry-After needs it
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


TOKEN_HINT = (f"set {TOKEN_ENV} to the receiver's upload token (its RAGE_SERVER_UPLOAD_TOKEN)"
              " and RAGE_UPLOAD_URL (or the config's upload_url) to the receiver, or add "
              "the token under [tokens] in the config")
# Tells the user what is going on while rage waits to retry (set by the CLI; silent else).
notices: ContextVar[Callable[[str], None] | None] = ContextVar("rage_upload_notices",
                                                                 default=None)


class _Attempt:
    """One request in a worker thread, so the caller can stop waiting at the deadline
    however slowly the server answers (a read timeout restarts with every byte)."""

    def __init__(self, fn: Callable[[], Response]) -> None:
        self.fn = fn
        self.result: Response | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def _run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as e:  # handed to the waiting thread
            self.error = e
        finally:
            self.done.set()

    def wait(self, timeout: float) -> Response | None:
        """The response, None if ``timeout`` passed first; re-raises the request's error."""
        worker = threading.Thread(target=self._run, name="rage-upload", daemon=True)
        worker.start()
        if not self.done.wait(timeout):
            return None
        if self.error is not None:
            raise self.error
        return self.result


class HttpClient:
    """Sends one request with rage's policy; use as a context manager to close the session.

    ``token_hint`` says what to do when the server refuses the credentials (401/403).
    """

    def __init__(self, settings: Settings, *, token_hint: str = TOKEN_HINT) -> None:
        import requests

        self.settings = settings
        self.token_hint = token_hint
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
        """Send until a success, a final refusal, or the ``upload_timeout`` deadline.

        Returns 2xx responses only. 307/308 are followed with the same method and body
        (re-read from the start); any other redirect is an error (a login page is not an
        upload). Connection refused and unknown host names fail at once; 5xx/429, resets
        and timeouts are retried with back-off, each retry announced through
        :data:`notices`. The whole exchange, retries included, ends by the deadline.
        """
        import requests

        check_url(url, self.settings)
        budget = max(self.settings.upload_timeout, 0.1)
        deadline = time.monotonic() + budget
        hdrs = dict(headers or {})
        notify = notices.get()
        withheld = None
        if "Authorization" not in hdrs:  # (the gist uploader brings its own)
            token, withheld = token_for(url, self.settings)
            if token:
                hdrs["Authorization"] = f"Bearer {token}"
            elif withheld and notify:
                notify(withheld)
        attempts = redirects = 0
        reason = "no attempt made"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._gave_up(url, reason, attempts, budget)
            attempts += 1
            wait: float | None = None
            try:
                resp = _Attempt(self._request(method, url, body, hdrs, remaining)).wait(remaining)
            except requests.exceptions.SSLError as e:
                raise UploadError(
                    f"TLS error talking to {_host(url)}: {_short(e)}",
                    hint="if the server uses a private CA, point REQUESTS_CA_BUNDLE at it",
                ) from None
            except (requests.ConnectionError, requests.Timeout) as e:
                final = _unreachable(e, url)
                if final:
                    raise UploadError(final) from None
                reason = _short(e)
            else:
                if resp is None:
                    self.session.close()  # stop the abandoned attempt's connection if we can
                    raise UploadError(
                        f"upload to {_host(url)} did not finish within upload_timeout "
                        f"({budget:g}s): {reason if attempts > 1 else 'the server is too slow'}",
                        hint="raise upload_timeout (RAGE_UPLOAD_TIMEOUT) for a slow link")
                status = resp.status
                location = resp.headers.get("Location")
                if status in {307, 308} and location:
                    redirects += 1
                    if redirects > MAX_REDIRECTS:
                        raise UploadError(f"too many redirects uploading to {_host(url)}")
                    new = urljoin(url, location)
                    check_url(new, self.settings)
                    if urlsplit(new).netloc != urlsplit(url).netloc:
                        hdrs.pop("Authorization", None)  # never hand a token to a new host
                    url = new
                    attempts -= 1
                    continue
                if status in RETRY_STATUSES:
                    reason = f"HTTP {status} {resp.reason}".rstrip()
                    wait = retry_after(resp.headers.get("Retry-After"))
                elif 300 <= status < 400:
                    where = f" to {urljoin(url, location)}" if location else ""
                    raise UploadError(
                        f"{_host(url)} answered the upload with a redirect{where} "
                        f"(HTTP {status}): nothing was stored",
                        hint="check the upload URL (a redirect often means a login page "
                             "or a moved address)")
                elif status in {401, 403}:
                    had = "Authorization" in hdrs
                    what = ("did not accept the upload token" if had
                            else f"wants an upload token, and {TOKEN_ENV} is not for this "
                                 "host" if withheld
                            else "wants an upload token, and none was sent")
                    raise UploadError(f"{_host(url)} refused the upload: HTTP {status}: {what}",
                                      hint=self.token_hint)
                elif status >= 300:
                    detail = " ".join(resp.text.split())[:200]
                    raise UploadError(
                        f"{_host(url)} refused the upload: HTTP {status} {resp.reason}".rstrip()
                        + (f": {detail}" if detail else "")
                    )
                else:
                    return resp
            delay = _backoff(attempts) if wait is None else min(wait, RETRY_AFTER_CAP)
            left = deadline - time.monotonic()
            if delay >= left:
                raise self._gave_up(url, reason, attempts, budget)
            if notify:
                notify(f"upload to {_host(url)}: {reason}; retrying in {delay:.0f}s "
                       f"(attempt {attempts + 1}, giving up in {left:.0f}s; ^C to stop)")
            time.sleep(delay)

    def _request(self, method: str, url: str, body: Body | bytes | None,
                 hdrs: dict[str, str], remaining: float) -> Callable[[], Response]:
        def go() -> Response:
            resp = self.session.request(
                method, url, data=body, headers=hdrs, allow_redirects=False, stream=True,
                # the read timeout a little past the deadline: the deadline's waiter
                # (_Attempt.wait) answers first, with the message that names the budget
                timeout=(min(CONNECT_TIMEOUT, remaining), max(remaining, 1.0) + 0.5),
                verify=self.verify,
                proxies=_no_proxy_for_loopback(url),  # type: ignore[arg-type]  # None honoured
            )
            with resp:
                text = _read_capped(resp)
                return Response(resp.status_code, resp.url, text,
                                resp.headers.get("Content-Type", ""), resp.headers,
                                resp.reason or "")
        return go

    @staticmethod
    def _gave_up(url: str, reason: str, attempts: int, budget: float) -> UploadError:
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        return UploadError(f"upload to {_host(url)} failed: {reason} ({tries} in {budget:g}s)")


def _chain(e: BaseException) -> Iterator[BaseException]:
    """``e`` and every exception inside it (requests wraps urllib3 wraps socket errors)."""
    seen: set[int] = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        todo += [a for a in x.args if isinstance(a, BaseException)]
        todo += [c for c in (x.__cause__, x.__context__, getattr(x, "reason", None))
                 if isinstance(c, BaseException)]


def _unreachable(e: BaseException, url: str) -> str | None:
    """A plain-words message when retrying cannot help: nothing listens, or no such host."""
    import socket

    parts = urlsplit(url)
    host = parts.hostname or _host(url)
    for x in _chain(e):
        if isinstance(x, socket.gaierror) or type(x).__name__ == "NameResolutionError":
            return (f"cannot upload to {host}: the host name could not be resolved "
                    "(a typo in the URL, or no network/DNS)")
        if isinstance(x, ConnectionRefusedError):
            port = parts.port or (443 if parts.scheme == "https" else 80)
            return (f"cannot upload to {host}: connection refused "
                    f"(nothing is listening on port {port}; is the server running?)")
    return None


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
