"""Uploading bundles: one interface, five protocols, one function for callers.

Targets (``--to`` / ``upload_url``)::

    https://host/path           multipart POST, field "file" (0x0.st style)
    put+https://host/           raw PUT to <url>/<bundle name>; put+https://host/key?sig=...
                                PUTs to exactly that (pre-signed) URL
    receiver+https://host/      rage's receiver: POST <base>/api/v1/bundles
    gist                        a private GitHub gist at ``gist_api_url``
    file:///some/dir            copy into a local (or mounted) directory

``protocol`` (or the ``upload_protocol`` setting) chooses for a bare URL; a ``proto+`` prefix
in the URL wins over both.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rage.config import Settings
from rage.errors import RageError, UploadError, UsageError

if TYPE_CHECKING:  # loaded by __getattr__ on first use: a report that uploads nothing (it
    # imports rage.upload.tokens for its hint line) never pays for base's dataclass, ~4.5M
    # instructions
    from rage.upload.base import Progress as Progress
    from rage.upload.base import Uploader as Uploader
    from rage.upload.base import UploadResult as UploadResult
    from rage.upload.base import link_from_response as link_from_response

PROTOCOLS = ("multipart", "put", "receiver", "gist", "file")
_PREFIX_RE = re.compile(r"^(multipart|put|receiver|gist)\+(https?://.+)$", re.IGNORECASE)


def parse_target(target: str, protocol: str | None = None) -> tuple[str, str | None]:
    """``(protocol, address)`` for a target string; raises :class:`UsageError` if unusable."""
    target = target.strip()
    if protocol is not None and protocol not in PROTOCOLS:
        raise UsageError(f"unknown upload protocol {protocol!r}: use one of "
                         + ", ".join(PROTOCOLS))
    m = _PREFIX_RE.match(target)
    if m:
        return m.group(1).lower(), m.group(2)
    if target.lower() in {"gist", "gist:"}:
        return "gist", None
    if target.startswith("file:"):
        if protocol not in (None, "file"):
            raise UsageError(f"a file: target cannot use protocol {protocol}")
        return "file", target
    if re.match(r"^https?://", target, re.IGNORECASE):
        proto = protocol or "multipart"
        if proto == "file":
            raise UsageError(f"protocol file needs a file:///directory target, not {target}")
        return proto, target
    if protocol == "file" and target:
        return "file", target
    raise UsageError(
        f"cannot upload to {target!r}",
        hint="use https://..., put+https://..., receiver+https://..., gist or file:///dir",
    )


def make_uploader(target: str, settings: Settings, *, protocol: str | None = None) -> Uploader:
    """The uploader for ``target``; raises :class:`UsageError` for an unusable target."""
    proto, address = parse_target(target, protocol or settings.upload_protocol)
    if proto == "file":
        from rage.upload.directory import DirectoryUploader

        return DirectoryUploader(address or "")
    if proto == "gist":
        from rage.upload.gist import GistUploader

        return GistUploader(address or settings.gist_api_url, settings)
    assert address is not None
    if proto == "put":
        from rage.upload.put import PutUploader

        return PutUploader(address, settings)
    if proto == "receiver":
        from rage.upload.receiver import ReceiverUploader

        return ReceiverUploader(address, settings)
    from rage.upload.multipart import MultipartUploader

    return MultipartUploader(address, settings)


def upload_bundle(
    path: Path, *, target: str, settings: Settings, progress: bool = False,
    protocol: str | None = None, notify: Callable[[str], None] | None = None,
) -> UploadResult:
    """Upload the bundle at ``path`` and record it as sent; return where it went.

    Never prompts. ``progress`` draws a bar on stderr when stderr is a terminal; ``notify``
    receives one line per retry (what failed, when the next attempt is, when rage gives up).
    Raises :class:`UploadError` (with ``bundle=str(path)``) on any failure, the bundle
    untouched; a target that cannot work raises :class:`UsageError`.
    """
    from rage.upload.http import notices

    token = notices.set(notify)
    try:
        return _upload(path, target=target, settings=settings, progress=progress,
                       protocol=protocol)
    finally:
        notices.reset(token)


def _upload(path: Path, *, target: str, settings: Settings, progress: bool,
            protocol: str | None) -> UploadResult:
    path = Path(path)
    if not path.is_file():
        raise UploadError(f"no bundle at {path}", bundle=str(path))
    try:
        uploader = make_uploader(target, settings, protocol=protocol)
        from rage.upload.progress import terminal_progress

        bar = terminal_progress(f"uploading {path.name}") if progress else None
        try:
            result = uploader.upload(path, progress=bar)
        finally:
            if bar:
                bar.close()
    except UploadError as e:
        e.bundle = e.bundle or str(path)
        raise
    except UsageError:
        raise  # a target that cannot work is a usage error (exit 2), not a failed upload
    except RageError as e:
        raise UploadError(e.message, bundle=str(path), hint=e.hint) from None
    except OSError as e:
        raise UploadError(f"cannot read {path}: {e.strerror or e}", bundle=str(path)) from None
    from rage.report.pending import mark_sent

    # the upload worked; a read-only reports dir only means it stays listed as pending
    with contextlib.suppress(OSError):
        mark_sent(path, result.url, result.delete_url, result.protocol)
    return result


def check_target(target: str, settings: Settings) -> None:
    """Raise :class:`UsageError` (one line) now if ``target`` can never work: an unknown
    scheme, plain http to another host without ``allow_http``. Called before a bundle is
    written, so a typo costs no bundle."""
    from rage.upload.http import check_url

    try:
        proto, address = parse_target(target, settings.upload_protocol)
        if address is not None and proto not in {"file", "gist"}:
            check_url(address, settings)
    except (UsageError, UploadError) as e:
        raise UsageError(f"{e.message}: {e.hint}" if e.hint else e.message) from None


def resend_command(path: Path | str, target: str, settings: Settings | None = None) -> str:
    """The command that uploads ``path`` to ``target`` again, ready to paste: with ``--yes``
    (it must work from scripts) and ``--allow-http`` when the target needs it."""
    import shlex

    from rage.invocation import rage_command

    words = ["send", str(path), "--to", target, "--yes"]
    if settings is not None and settings.allow_http and _needs_http(target, settings):
        words.append("--allow-http")
    return " ".join([rage_command(), *(shlex.quote(w) for w in words)])


def _needs_http(target: str, settings: Settings) -> bool:
    """True if ``target`` works only with ``allow_http`` (plain http to another host)."""
    import dataclasses

    try:
        check_target(target, dataclasses.replace(settings, allow_http=False))
    except UsageError:
        return True
    return False


_BASE = frozenset({"Progress", "Uploader", "UploadResult", "link_from_response"})


def __getattr__(name: str) -> Any:
    if name not in _BASE:
        raise AttributeError(f"module 'rage.upload' has no attribute {name!r}")
    from rage.upload import base

    return getattr(base, name)


__all__ = [
    "PROTOCOLS",
    "Progress",
    "UploadResult",
    "Uploader",
    "check_target",
    "link_from_response",
    "make_uploader",
    "parse_target",
    "resend_command",
    "upload_bundle",
]
