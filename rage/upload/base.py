"""The uploader contract, its result, and reading the link out of a server's response."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

Progress = Callable[[int, int], None]

# JSON fields that name the link, in order of preference.
LINK_FIELDS = ("url", "link", "html_url", "href")
_URL_RE = re.compile(r"https?://[^\s\"'<>`]+")


@dataclass(frozen=True)
class UploadResult:
    """Where a bundle went: the link to paste, and how to take it down again if known."""

    url: str
    delete_url: str | None
    bundle: str
    protocol: str

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "bundle": self.bundle, "delete_url": self.delete_url}


class Uploader(Protocol):
    """Sends one bundle somewhere and returns the link.

    Implementations never prompt and never print; they raise
    :class:`rage.errors.UploadError` on any failure. ``progress(sent, total)`` is called as
    bytes go out (again from zero if an attempt is retried).
    """

    name: str

    def upload(self, path: Path, *, progress: Progress | None = None) -> UploadResult: ...


def link_from_response(
    body: str, headers: Mapping[str, str], content_type: str = "", base_url: str = ""
) -> str | None:
    """The link in a response: a JSON field, else a ``Location`` header, else the first URL.

    ``headers`` must be case-insensitive (requests' ``CaseInsensitiveDict`` is); a relative
    ``Location`` is resolved against ``base_url``.
    """
    data = _json_object(body, content_type)
    if data is not None:
        for field in LINK_FIELDS:
            value = data.get(field)
            if isinstance(value, str) and _URL_RE.match(value):
                return value
    location = headers.get("Location")
    if location:
        from urllib.parse import urljoin

        absolute = urljoin(base_url, location.strip())
        if _URL_RE.match(absolute):
            return absolute
    m = _URL_RE.search(body)
    return m.group(0).rstrip(".,;)") if m else None


def _json_object(body: str, content_type: str) -> dict[str, Any] | None:
    text = body.strip()
    if "json" not in content_type and not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
